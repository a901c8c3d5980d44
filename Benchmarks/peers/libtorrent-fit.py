#!/usr/bin/python3
"""What libtorrent 2.0.8 does with a BitTorrent v2 torrent whose identity comes from a download manifest rather than
a .torrent file (docs/performance/DECISIONS.md #59). Needs python3-libtorrent (Debian); everything stays on
loopback. Prints one line per question:

  1. the info dictionary rebuilt from (name, length, piece length, pieces root) has libtorrent's own info-hash;
  2. a machine holding only that dictionary downloads from a peer that has the file, each piece checked;
  3. ... and from a web seed alone (the CDN's URL), no peer;
  4. a machine that fetched the file by HTTP seeds it from the dictionary alone;
  5. a web seed that lies, the piece layer unknown: libtorrent cannot tell which piece is bad, and stalls;
  6. a web seed that lies, the piece layer known: the bad piece fails its hash and the seed is banned.
"""
import functools
import hashlib
import http.server
import os
import sys
import tempfile
import threading
import time

try:
    import libtorrent as lt
except ImportError:
    sys.exit("needs libtorrent's Python binding: apt-get install python3-libtorrent")

work = tempfile.mkdtemp(prefix="libtorrent-fit.")
name = "pack.bin"
size = 8 * 1024 * 1024 + 5
data = os.urandom(size)
os.makedirs(f"{work}/www")
with open(f"{work}/www/{name}", "wb") as out:
    out.write(data)

storage = lt.file_storage()
lt.add_files(storage, f"{work}/www/{name}")
creator = lt.create_torrent(storage, 0, lt.create_torrent.v2_only)
lt.set_piece_hashes(creator, f"{work}/www")
full = creator.generate()
made = lt.torrent_info(full)
root = bytes.fromhex(str(made.files().root(0)))
layers = full[b"piece layers"]
info = {b"name": name.encode(), b"piece length": made.piece_length(), b"meta version": 2,
        b"file tree": {name.encode(): {b"": {b"length": size, b"pieces root": root}}}}
print("1. same info-hash from the manifest's values:",
      hashlib.sha256(lt.bencode(info)).hexdigest() == str(made.info_hashes().v2))


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *arguments):
        pass


class QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, address):
        pass  # a banned seed's connection, reset by libtorrent


def web_seed(folder, port):
    server = QuietServer(("127.0.0.1", port), functools.partial(Quiet, directory=folder))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{port}/"  # a single file's name is appended to a URL ending in "/"


def machine(label, port, torrent, seeds=(), peers=(), timeout=20, holding=False):
    folder = f"{work}/{label}"
    os.makedirs(folder, exist_ok=True)
    if holding:
        os.link(f"{work}/www/{name}", f"{folder}/{name}")
    session = lt.session({"listen_interfaces": f"127.0.0.1:{port}", "enable_dht": False, "enable_lsd": False,
                          "enable_upnp": False, "enable_natpmp": False,
                          "alert_mask": lt.alert.category_t.error_notification
                          | lt.alert.category_t.status_notification})
    params = lt.add_torrent_params()
    params.ti = lt.torrent_info(torrent)
    params.save_path = folder
    params.url_seeds = list(seeds)
    handle = session.add_torrent(params)
    for peer in peers:
        handle.connect_peer(("127.0.0.1", peer))
    start, failures, errors = time.time(), 0, []
    while time.time() - start < timeout and not handle.status().is_seeding:
        for alert in session.pop_alerts():
            if isinstance(alert, lt.hash_failed_alert):
                failures += 1
            elif alert.category() & lt.alert.category_t.error_notification:
                errors.append(alert.message())
        time.sleep(0.1)
    status = handle.status()
    same = status.is_seeding and open(f"{folder}/{name}", "rb").read() == data
    return session, status.is_seeding, same, failures, errors


seeder = machine("seeder", 16881, full, holding=True)  # the .torrent with its layer, the file already there
_, done, same, _, _ = machine("from-peer", 16882, {b"info": info}, peers=[16881])
print("2. from a peer, the dictionary alone: done", done, "bytes equal", same)
cdn = web_seed(f"{work}/www", 18781)
_, done, same, _, _ = machine("from-web-seed", 16883, {b"info": info}, seeds=[cdn])
print("3. from the web seed alone: done", done, "bytes equal", same)
_, done, _, _, _ = machine("fetched", 16884, {b"info": info}, holding=True)
print("4. a file fetched by HTTP, seeded from the dictionary alone:", done)

lying = bytearray(data)
lying[5_000_000] ^= 1
os.makedirs(f"{work}/lies")
with open(f"{work}/lies/{name}", "wb") as out:
    out.write(lying)
liar = web_seed(f"{work}/lies", 18782)
_, done, _, failures, errors = machine("lied-to", 16885, {b"info": info}, seeds=[liar], timeout=10)
print("5. a lying web seed, no layer: done", done, "hash failures", failures, "(stalls: no piece can be blamed)")
_, done, _, failures, errors = machine("lied-to-layer", 16886, {b"info": info, b"piece layers": layers},
                                      seeds=[liar], timeout=10)
print("6. a lying web seed, the layer known: done", done, "hash failures", failures,
      "banned", any("banned" in error for error in errors))
