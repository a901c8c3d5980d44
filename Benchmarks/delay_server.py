#!/usr/bin/env python3
"""A file server on loopback that answers each request after a fixed delay: a distant server's round trip, which
nginx on loopback does not have, for paired runs of the small files (docs/performance/DECISIONS.md
#12). HTTP/1.1 with keep-alive, GET only, files read once and kept in memory.

    Benchmarks/delay_server.py ROOT PORT DELAY_MS
"""
import asyncio
import os
import sys


def main() -> None:
    if len(sys.argv) != 4 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) == 2 else 64)
    root, port, delay = os.path.realpath(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) / 1000
    cache: dict[str, bytes] = {}

    def body(path: str) -> bytes | None:
        if path not in cache:
            file = os.path.realpath(os.path.join(root, path.lstrip("/")))
            if not file.startswith(root + os.sep) or not os.path.isfile(file):
                return None
            with open(file, "rb") as handle:
                cache[path] = handle.read()
        return cache[path]

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                parts = head.split(b" ", 2)
                data = body(parts[1].decode("ascii", "replace")) if len(parts) == 3 else None
                await asyncio.sleep(delay)
                status = b"200 OK" if data is not None else b"404 Not Found"
                data = data or b""
                writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Length: " + str(len(data)).encode()
                             + b"\r\n\r\n" + data)
                await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        finally:
            writer.close()

    async def run() -> None:
        server = await asyncio.start_server(serve, "127.0.0.1", port, backlog=256)
        async with server:
            await server.serve_forever()

    asyncio.run(run())


if __name__ == "__main__":
    main()
