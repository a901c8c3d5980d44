#!/usr/bin/python3
"""One machine of upload-fit.sh: upload-fit-machine.py ROLE WORK VARIANT. ROLE is seed (WORK/seed holds the file,
sent under a 2 MiB/s upload limit) or leech (from 10.79.0.1, into WORK/leech; prints how long it took). VARIANT
names how the seed holds the limit: session (the session's upload_rate_limit alone), local (the local peer class's
limit too), torrent (the torrent's own), filter (every address in the global class), runtime (the torrent's limit
lowered from 16 MiB/s once it runs)."""
import sys, time
try:
    import libtorrent as lt
except ImportError:
    sys.exit("needs libtorrent's Python binding: apt-get install python3-libtorrent")

role, work, variant = sys.argv[1], sys.argv[2], sys.argv[3]
limit = 2 << 20
torrent = {b"info": lt.bdecode(open(f"{work}/info.bencoded", "rb").read()),
           b"piece layers": lt.bdecode(open(f"{work}/layers.bencoded", "rb").read())}
settings = {"listen_interfaces": "0.0.0.0:6881", "enable_dht": False, "enable_lsd": False, "enable_upnp": False,
            "enable_natpmp": False, "enable_outgoing_utp": False, "enable_incoming_utp": False}
if role == "seed":
    settings["upload_rate_limit"] = limit
session = lt.session(settings)
if role == "seed" and variant == "local":
    local = session.get_peer_class(2)  # libtorrent's local peer class
    local["upload_limit"] = limit
    session.set_peer_class(2, local)
if role == "seed" and variant == "filter":
    everyone = lt.ip_filter()
    everyone.add_rule("0.0.0.0", "255.255.255.255", 1)  # the global class alone
    session.set_peer_class_filter(everyone)
params = lt.add_torrent_params()
params.ti = lt.torrent_info(torrent)
params.save_path = f"{work}/{role}"
if role == "seed":
    params.flags |= lt.torrent_flags.seed_mode
handle = session.add_torrent(params)
if role == "seed" and variant == "torrent":
    handle.set_upload_limit(limit)
if role == "seed" and variant == "runtime":
    handle.set_upload_limit(8 * limit)
    time.sleep(2)
    handle.set_upload_limit(limit)
if role == "leech":
    time.sleep(0.5)
    handle.connect_peer(("10.79.0.1", 6881))
    start = time.time()
    while not handle.status().is_seeding and time.time() - start < 60:
        time.sleep(0.1)
    print(f"{variant}: {round(time.time() - start, 1)} s (the limit allows no less than about 32 s)", flush=True)
else:
    time.sleep(70)
