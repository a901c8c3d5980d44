#!/usr/bin/env python3
"""levels-app in Python: the example app written against the `backgroundassets` package the way a Python app or
tool would. Same options and output as the Swift and C ones (one JSON object a line with --json).

    pip install ./SDK/Python
    bahost launch com.example.levels -- python3 levels_app.py --schedule level-3=https://…/level-3.pack@1000 --wait-for 1
"""

import argparse
import json
import os
import signal
import sys
import threading
import time

import backgroundassets as ba

GROUP = "group.com.example.levels"


# The delegate's thread and the main one both print: each line is written whole, under the lock (print writes the
# text and its newline apart, and two threads' lines ran together).
_output = threading.Lock()


def say(arguments, name, text=True, **fields):
    if arguments.json:
        line = json.dumps({"event": name, **fields}, sort_keys=True)
    elif text:
        shown = lambda v: str(v).lower() if isinstance(v, bool) else ",".join(v) if isinstance(v, list) else v  # noqa
        line = name + " " + " ".join(f"{k}={shown(v)}" for k, v in sorted(fields.items()))
    else:
        return
    with _output:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def describe(error):
    return f"{error.domain} {error.code}: {error.message}"


class FullDelegate(ba.BADownloadManagerDelegate):
    def __init__(self, arguments, received):
        self.arguments, self.received = arguments, received

    def download_did_begin(self, download):
        say(self.arguments, "began", identifier=download.identifier)

    def download_did_pause(self, download):
        say(self.arguments, "paused", identifier=download.identifier)

    def download_did_write(self, download, written, total, expected):
        say(self.arguments, "progress", False, identifier=download.identifier, written=total, expected=expected)

    def download_did_receive_challenge(self, download, challenge):
        say(self.arguments, "challenge", identifier=download.identifier, host=challenge.host,
            realm=challenge.realm or "", previousFailureCount=challenge.previous_failure_count)
        credential = self.arguments.credential
        if not credential or ":" not in credential or challenge.previous_failure_count > 0:
            return ba.ChallengeDisposition.CANCEL_AUTHENTICATION_CHALLENGE, None
        user, password = credential.split(":", 1)
        return ba.ChallengeDisposition.USE_CREDENTIAL, (user, password)

    def download_failed(self, download, error):
        say(self.arguments, "failed", identifier=download.identifier, error=describe(error))
        self.received.release()

    def download_finished(self, download, path):
        # Move the file before returning, or the system deletes it.
        say(self.arguments, "finishing", False, identifier=download.identifier)
        misbehaviour = self.arguments.in_finished or ""
        if misbehaviour.startswith("sleep="):
            time.sleep(float(misbehaviour[6:]))
        if misbehaviour == "exit":
            os._exit(3)
        fields = {"identifier": download.identifier}
        container = ba.BADownloadManager.shared().container_path(GROUP)
        if container:
            assets = os.path.join(container, "Assets")
            os.makedirs(assets, exist_ok=True)
            destination = os.path.join(assets, download.identifier)
            os.replace(path, destination)
            fields["path"] = destination
        if misbehaviour.startswith("kill="):
            os.kill(int(misbehaviour[5:]), signal.SIGKILL)
        say(self.arguments, "finished", **fields)
        self.received.release()


class ProgressOnlyDelegate(ba.BADownloadManagerDelegate):
    def __init__(self, arguments):
        self.arguments = arguments

    def download_did_begin(self, download):
        say(self.arguments, "began", identifier=download.identifier)


def spec(text):
    identifier, rest = text.split("=", 1)
    url, size = rest.rsplit("@", 1)
    return ba.BAURLDownload(identifier, url, application_group_identifier=GROUP, file_size=int(size))


def main():
    parser = argparse.ArgumentParser(
        prog="levels_app.py", description="The example app in Python: sets a delegate, schedules and promotes "
        "downloads, prints callbacks.")
    parser.add_argument("--schedule", action="append", type=spec, default=[], help="ID=URL@SIZE, in the background")
    parser.add_argument("--foreground", action="append", type=spec, default=[], help="ID=URL@SIZE, now")
    parser.add_argument("--promote", action="append", default=[], help="a scheduled download to the foreground")
    parser.add_argument("--cancel", action="append", default=[], help="a scheduled download")
    parser.add_argument("--then-cancel", action="store_true",
                        help="cancel each download scheduled here, with the value it was scheduled with")
    parser.add_argument("--then-promote", action="store_true",
                        help="promote each download scheduled here, with the value it was scheduled with")
    parser.add_argument("--delegate", choices=["full", "progress-only", "none"], default="full")
    parser.add_argument("--wait-for", type=int, default=0, help="exit after this many completions")
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--stay", type=float, default=0, help="seconds to keep running after acting")
    parser.add_argument("--credential", help="USER:PASSWORD for a server's challenge")
    parser.add_argument("--in-finished", help="sleep=SECONDS, exit or kill=PID in the finished callback")
    parser.add_argument("--exclusive-control", type=int, help="take exclusive control first (ms; -1: wait)")
    parser.add_argument("--hold", type=float, default=0, help="seconds to hold it")
    parser.add_argument("--list", action="store_true", help="print the current downloads after acting")
    parser.add_argument("--playing", action="store_true",
                        help="say a game of the app is being played (bahost's set_playing) before acting")
    parser.add_argument("--json", action="store_true", help="one JSON object a line")
    arguments = parser.parse_args()

    manager = ba.BADownloadManager.shared()
    received = threading.Semaphore(0)
    try:
        if arguments.delegate == "full":
            manager.delegate = FullDelegate(arguments, received)
        elif arguments.delegate == "progress-only":
            manager.delegate = ProgressOnlyDelegate(arguments)
    except ba.BAError as error:
        say(arguments, "connect", ok=False, error=describe(error))

    if arguments.exclusive_control is not None:
        wait = arguments.exclusive_control
        try:
            with manager.exclusive_control(timeout=None if wait < 0 else wait / 1000):
                say(arguments, "exclusiveControl", acquired=True)
                time.sleep(arguments.hold)
        except ba.BAError as error:
            say(arguments, "exclusiveControl", acquired=False, error=describe(error))

    def attempt(action, identifier, body):
        try:
            body()
            say(arguments, action, identifier=identifier, ok=True)
        except ba.BAError as error:
            say(arguments, action, identifier=identifier, ok=False, error=describe(error))

    def current(identifier):
        return next((d for d in manager.fetch_current_downloads() if d.identifier == identifier), None)

    def promote(identifier):
        download = current(identifier)
        if download is None:
            raise ba.BAError(ba.BAErrorDomain, ba.BAErrorCode.DOWNLOAD_NOT_SCHEDULED, f"{identifier} is not scheduled")
        manager.start_foreground_download(download)

    if arguments.playing:
        try:
            manager.set_playing(True)
            say(arguments, "playing", ok=True)
        except ba.BAError as error:
            say(arguments, "playing", ok=False, error=describe(error))
    for download in arguments.schedule:
        attempt("schedule", download.identifier, lambda: manager.schedule_download(download))
    # What an app does: the BAURLDownload it scheduled names the download it scheduled.
    for download in arguments.schedule:
        if arguments.then_promote:
            attempt("promote", download.identifier, lambda: manager.start_foreground_download(download))
        if arguments.then_cancel:
            attempt("cancel", download.identifier, lambda: manager.cancel(download))
    for download in arguments.foreground:
        attempt("startForeground", download.identifier, lambda: manager.start_foreground_download(download))
    for identifier in arguments.promote:
        attempt("promote", identifier, lambda: promote(identifier))
    for identifier in arguments.cancel:
        attempt("cancel", identifier, lambda: manager.cancel(
            current(identifier) or spec(f"{identifier}=https://localhost/@1")))
    if arguments.list:
        try:
            say(arguments, "currentDownloads",
                identifiers=sorted(d.identifier for d in manager.fetch_current_downloads()))
        except ba.BAError as error:
            say(arguments, "currentDownloads", error=describe(error))

    time.sleep(arguments.stay)
    deadline = time.monotonic() + arguments.timeout
    for count in range(arguments.wait_for):
        if not received.acquire(timeout=max(0, deadline - time.monotonic())):
            say(arguments, "timeout", received=count)
            sys.exit(1)
    ba.disconnect()


if __name__ == "__main__":
    main()
