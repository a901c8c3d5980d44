"""The queue figure's app in Python (the backgroundassets package): COUNT schedule_download calls, then FETCHES
fetch_current_downloads, each timed. Prints "python.schedule MS" and "python.fetch MS" lines for
Benchmarks/table.py. Usage: bench_app.py COUNT URL FETCHES (run through bahost launch)."""

import sys
import time

import backgroundassets as ba

count, url, fetches = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
manager = ba.BADownloadManager.shared()
tag = int(time.time())
start = time.monotonic()
for i in range(count):
    manager.schedule_download(ba.BAURLDownload(
        f"py-{tag}-{i}", f"{url}?{i}", application_group_identifier="group.com.example.levels", file_size=65536))
print("python.schedule", (time.monotonic() - start) * 1000)
for _ in range(fetches):
    start = time.monotonic()
    found = manager.fetch_current_downloads()
    elapsed = (time.monotonic() - start) * 1000
    if len(found) < count:
        sys.exit(f"fetch returned {len(found)} downloads, not {count}")
    print("python.fetch", elapsed)
ba.disconnect()
