"""BADownloadManager and its delegate through the Python binding: what the Swift and C example apps are tested for
(DelegateRoutingTests, ExactlyOnceTests, AppRequestTests, DurabilityTests), with the Python example app as real
launched processes."""

import errno
import json
import os
import signal
import time

import pytest

import backgroundassets as ba
from conftest import PASSWORD, USER, events, wait_until


def first(found, name, **fields):
    return next((e for e in found if e.get("event") == name and all(e.get(k) == v for k, v in fields.items())), None)


def test_a_running_app_with_a_delegate_gets_its_completion_instead_of_the_extension(service, nginx):
    data = os.urandom(150_000)
    url = nginx.serve(f"{service.dir}/extra.pack", data)
    status, found, output = service.run_app("--schedule", f"extra={url}@150000", "--wait-for", "1", "--timeout", "30")
    assert status == 0, output
    assert first(found, "schedule", identifier="extra", ok=True), output
    assert first(found, "began", identifier="extra"), output
    finished = first(found, "finished", identifier="extra")
    assert finished, output
    # The delegate moved the file into the group's container; delivered once, to the app.
    assert finished["path"].startswith(service.container())
    with open(finished["path"], "rb") as file:
        assert file.read() == data
    assert service.downloads()["extra"]["delivered"] is True
    assert "kept extra" not in service.log_text()


def test_an_app_that_dies_in_its_callback_leaves_the_completion_to_the_extension(service, nginx):
    url = nginx.serve(f"{service.dir}/orphan.pack", os.urandom(120_000))
    status, found, output = service.run_app("--schedule", f"orphan={url}@120000", "--in-finished", "exit",
                                            "--wait-for", "1", "--timeout", "30")
    assert status == 3, output
    assert first(found, "finishing", identifier="orphan") and not first(found, "finished"), output
    assert wait_until(lambda: service.downloads()["orphan"]["delivered"] is True)
    assert wait_until(lambda: service.log_text().count("kept orphan at") == 1, 10)
    time.sleep(2)
    assert service.log_text().count("kept orphan at") == 1


def test_a_callback_that_outlasts_the_service_s_patience_keeps_its_completion(impatient_service, nginx):
    # The delegate takes 4 s over a callback the service waits 1 s for: the completion stays with the app (the
    # extension is not woken for it meanwhile) and counts as delivered once the method returned.
    service = impatient_service
    data = os.urandom(150_000)
    url = nginx.serve(f"{service.dir}/late.pack", data)
    status, found, output = service.run_app("--schedule", f"late={url}@150000", "--in-finished", "sleep=4",
                                            "--wait-for", "1", "--timeout", "30")
    assert status == 0, output
    with open(first(found, "finished")["path"], "rb") as file:
        assert file.read() == data
    assert wait_until(lambda: service.downloads()["late"]["delivered"] is True, 10)
    time.sleep(2)
    assert "kept late" not in service.log_text()


def test_a_challenge_is_answered_by_the_delegate(service, nginx):
    secret = os.urandom(90_000)
    url = nginx.serve(f"private/{service.dir}/secret.pack", secret)
    status, found, output = service.run_app("--schedule", f"secret={url}@90000", "--credential",
                                            f"{USER}:{PASSWORD}", "--wait-for", "1", "--timeout", "30")
    assert status == 0, output
    challenge = first(found, "challenge")
    assert challenge and challenge["realm"] == "levels" and challenge["host"] == "localhost", output
    with open(first(found, "finished")["path"], "rb") as file:
        assert file.read() == secret
    # Cancelled, the challenge fails the download with the server's 401.
    status, found, output = service.run_app("--schedule", f"again={url}@90000", "--wait-for", "1", "--timeout", "30")
    failed = first(found, "failed")
    assert failed and "401" in failed["error"], output


def test_cancel_and_the_current_downloads(service, nginx):
    url = nginx.serve(f"slow/{service.dir}/big.pack", bytes(8_000_000))
    status, found, output = service.run_app("--delegate", "none", "--schedule", f"big={url}@8000000", "--list")
    assert first(found, "currentDownloads")["identifiers"] == ["big"], output
    status, found, output = service.run_app("--delegate", "none", "--cancel", "big", "--cancel", "big", "--list")
    cancels = [e for e in found if e.get("event") == "cancel"]
    assert cancels[0]["ok"] is True, output
    assert cancels[1]["ok"] is False and cancels[1]["error"].startswith("BAErrorDomain 101"), output
    assert first(found, "currentDownloads")["identifiers"] == [], output


def test_the_download_an_app_scheduled_is_the_one_it_cancels_or_promotes(service, nginx):
    # A newcomer's code: the BAURLDownload the app scheduled (no unique identifier of its own) is the one it cancels
    # or promotes. 2 MB at /slow/'s 1 MB/s: were the cancel refused, the download would finish while the app stays.
    url = nginx.serve(f"slow/{service.dir}/gone.pack", bytes(2_000_000))
    status, found, output = service.run_app("--schedule", f"gone={url}@2000000", "--then-cancel", "--stay", "4",
                                            "--list")
    assert first(found, "cancel", identifier="gone")["ok"] is True, output
    assert not [e for e in found if e.get("event") in ("finished", "failed")], output
    assert first(found, "currentDownloads")["identifiers"] == [], output
    assert "gone" not in service.downloads()
    time.sleep(1)
    assert "kept gone" not in service.log_text()

    url = nginx.serve(f"slow/{service.dir}/now.pack", bytes(24_000_000))
    app = service.start_app("--schedule", f"now={url}@24000000", "--then-promote", "--stay", "3")
    promoted = None
    while promoted is None:
        line = app.stdout.readline()
        assert line, "the app ended before it promoted"
        if line.startswith("{") and json.loads(line).get("event") == "promote":
            promoted = json.loads(line)
    assert promoted["ok"] is True, promoted
    assert wait_until(lambda: service.downloads().get("now", {}).get("foreground") is True
                      and service.downloads()["now"].get("bytesReceived", 0) > 0, 2)
    app.wait()


def test_exclusive_control_holds_between_app_processes(service):
    holder = service.start_app("--delegate", "none", "--exclusive-control", "-1", "--hold", "3")
    line = holder.stdout.readline()
    while line and not line.startswith("{"):  # what `bahost launch` says before it runs the app
        line = holder.stdout.readline()
    assert '"acquired": true' in line, line
    status, found, output = service.run_app("--delegate", "none", "--exclusive-control", "200")
    refused = first(found, "exclusiveControl")
    assert refused["acquired"] is False and refused["error"].startswith(f"NSPOSIXErrorDomain {errno.ETIMEDOUT}"), output
    start = time.monotonic()
    status, found, output = service.run_app("--delegate", "none", "--exclusive-control", "-1")
    assert first(found, "exclusiveControl")["acquired"] is True, output
    assert time.monotonic() - start > 0.5
    holder.wait()


def test_the_service_restarting_under_the_app_loses_nothing(service, nginx):
    data = os.urandom(3_000_000)
    url = nginx.serve(f"slow/{service.dir}/big.pack", data)
    app = service.start_app("--schedule", f"big={url}@3000000", "--wait-for", "1", "--timeout", "60")
    assert wait_until(lambda: service.downloads().get("big", {}).get("bytesReceived", 0) > 0)
    service.stop(signal.SIGKILL)
    service.start()
    output, errors = app.communicate(timeout=90)
    assert app.returncode == 0, output + errors
    finished = first(events(output), "finished", identifier="big")
    assert finished, output
    with open(finished["path"], "rb") as file:
        assert file.read() == data
    assert service.downloads()["big"]["delivered"] is True


def test_misuse_gets_apples_codes_and_a_clear_message(monkeypatch):
    # This process was not started by `bahost launch`: it has no app identity (55).
    monkeypatch.delenv("BAHOST_APP_IDENTIFIER", raising=False)
    ba.disconnect()
    with pytest.raises(ba.BAError) as raised:
        ba.BADownloadManager.shared().fetch_current_downloads()
    assert (raised.value.domain, raised.value.code) == (ba.BAErrorDomain, ba.BAErrorCode.CALLER_CONNECTION_NOT_ACCEPTED)
    assert "no app identity" in raised.value.message
    # No service at the socket (56).
    monkeypatch.setenv("BAHOST_APP_IDENTIFIER", "com.example.levels")
    monkeypatch.setenv("BAHOST_SOCKET", "/nonexistent/service.sock")
    with pytest.raises(ba.BAError) as raised:
        ba.BADownloadManager.shared().fetch_current_downloads()
    assert raised.value.code == ba.BAErrorCode.CALLER_CONNECTION_INVALID and "not reachable" in raised.value.message
    with pytest.raises(TypeError):
        ba.BADownloadManager.shared().schedule_download("level-1")


def test_a_download_is_the_frozen_value_it_was_made_with():
    made = ba.BAURLDownload("level-1", "https://cdn.example.com/1.pak", application_group_identifier="group.g",
                            file_size=7, essential=True, priority=3, headers=["X-A: 1"], state=1)
    assert (made.identifier, made.url, made.application_group_identifier, made.file_size, made.essential,
            made.priority, made.headers, made.sha256, made.unique_identifier) == \
        ("level-1", "https://cdn.example.com/1.pak", "group.g", 7, True, 3, ("X-A: 1",), "", "")
    assert made.state is ba.State.WAITING
    twin = ba.BAURLDownload("level-1", "https://cdn.example.com/1.pak", application_group_identifier="group.g",
                            file_size=7, essential=True, priority=3, headers=("X-A: 1",), state=ba.State.WAITING)
    assert made == twin and hash(made) == hash(twin)
    with pytest.raises(AttributeError):
        made.url = "https://elsewhere.example.com/"
    with pytest.raises(ValueError):
        ba.BAURLDownload("level-1", "https://cdn.example.com/1.pak", application_group_identifier="group.g", state=9)


def test_the_current_downloads_come_whole_from_one_copy(service, nginx):
    # Slow URLs keep both downloads current while the probe fetches them.
    urls = [nginx.serve(f"slow/{service.dir}/{name}.pack", bytes(200_000)) for name in ("one", "two")]
    probe = os.path.join(os.path.dirname(__file__), "apps", "current_probe.py")
    status, found, output = service.run_app(f"one={urls[0]}@200000", f"two={urls[1]}@200000", program=probe)
    assert status == 0, output
    listed = found[-1]
    # The copy (ba_app_copy_current_downloads, its strings split at their NULs) and the visitor agree on every
    # field, the headers, the absent SHA-256 and the non-ASCII header included. They are two fetches, one after the
    # other, so a download may have started between them: its state may go from waiting to downloading, never back.
    def without_state(rows):
        return [{key: value for key, value in row.items() if key != "state"} for row in rows]
    assert without_state(listed["copied"]) == without_state(listed["visited"]), output
    for copied, visited in zip(listed["copied"], listed["visited"]):
        assert (copied["state"], visited["state"]) in {
            (int(ba.State.WAITING), int(ba.State.WAITING)), (int(ba.State.WAITING), int(ba.State.DOWNLOADING)),
            (int(ba.State.DOWNLOADING), int(ba.State.DOWNLOADING))}, output
    one, two = listed["copied"]
    assert (one["identifier"], one["url"], one["file_size"], one["priority"], one["headers"]) == \
        ("one", urls[0], 200_000, 10, ["X-Level: 7", "X-Player: ünïcode"]), output
    assert len(one["sha256"]) == 64 and two["sha256"] == "" and two["headers"] == [], output
    assert (two["identifier"], two["url"], two["priority"]) == ("two", urls[1], 11), output
    # Apple's allowsExpensiveNetworkAccess, through ba_download_t 1.2's network_access, the service and back.
    assert (one["allows_expensive_network_access"], two["allows_expensive_network_access"]) == (True, False), output
    assert one["allows_constrained_network_access"] and two["allows_constrained_network_access"], output
    # The collector is on after a fetch in an app that has it on, and off after one in an app that turned it off.
    assert listed["collector"] == [True, False], output
    for download in (one, two):
        assert download["application_group_identifier"] == "group.com.example.levels", output
        assert download["unique_identifier"].startswith("BAURLDownload.group.com.example.levels."), output
        assert download["state"] in (int(ba.State.WAITING), int(ba.State.DOWNLOADING)), output


def test_an_app_that_says_it_is_playing_holds_the_background_downloads_while_it_runs(service, nginx):
    """set_playing (a bahost addition): the person's game.while-playing (wait, by default) holds the background
    downloads while the app runs, and its end lets them go."""
    url = nginx.serve(f"{service.dir}/bg.pack", os.urandom(100_000))
    game = service.start_app("--playing", "--stay", "6", "--schedule", f"bg={url}@100000")

    def status():
        result = service.bahost("debug", "status", "--json")
        return json.loads(result.stdout.strip().splitlines()[-1]).get("person", {})

    assert wait_until(lambda: status().get("game") == "com.example.levels says it is playing", 20), status()
    assert wait_until(lambda: "says it is playing" in service.downloads().get("bg", {}).get("heldBy", ""), 20), \
        service.downloads()
    output, _ = game.communicate(timeout=60)
    assert first(events(output), "playing", ok=True), output
    assert wait_until(lambda: service.downloads().get("bg", {}).get("state") == "finished", 30), service.downloads()
    assert status().get("game") is None
