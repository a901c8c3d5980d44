"""AssetPackManager through the Python binding: a managed app (BAHasManagedAssetPacks) against a real daemon, its
pack made with `bahost pack` and served by nginx, the app a launched Python process using asyncio."""

import json
import os
import subprocess

from conftest import events, publish


def test_the_app_lists_ensures_reads_and_removes_packs(managed_service, nginx, tmp_path):
    publish(managed_service, nginx, tmp_path, [("bonus", {"onDemand": {}}, {"bonus/readme.txt": b"bonus level"})])
    managed_service.install()
    probe = os.path.join(os.path.dirname(__file__), "apps", "packs_probe.py")
    result = subprocess.run(managed_service.launch_command(probe), capture_output=True, text=True, timeout=90,
                            env=managed_service.env)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = {key: line[key] for line in events(result.stdout) for key in line}
    assert lines["packs"] == [["bonus", 1]]
    assert lines["status"] == 1 and lines["local"] == 0  # offered, not on the device
    assert lines["ensured"] is True
    assert lines["updates"][0] == "BEGAN" and lines["updates"][-1] == "FINISHED", lines["updates"]
    assert lines["read"] == "bonus level"
    assert lines["url"].endswith("/bonus/readme.txt")
    assert lines["missing_pack"][:2] == ["BAManagedErrorDomain", 0] and "nope" in lines["missing_pack"][2]
    assert lines["missing_file"][:2] == ["BAManagedErrorDomain", 1]
    assert lines["ensure_missing"] == ["BAManagedErrorDomain", 0]
    assert lines["languages"] == [None, [], []]
    assert lines["removed"] is True
