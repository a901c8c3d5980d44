#!/usr/bin/python3
"""One machine of lan-fit.sh: lan-fit-machine.py ROLE WORK FOLDER [CERT KEY]. ROLE is seed (FOLDER holds the file)
or leech; the torrent's dictionary is WORK/info.bencoded, its piece layer WORK/layers.bencoded; CERT and KEY are the
machine's certificate for an SSL torrent. Prints the peers' comings and goings, and when a leech is done."""
import os, sys, time
try:
    import libtorrent as lt
except ImportError:
    sys.exit("needs libtorrent's Python binding: apt-get install python3-libtorrent")

role, work, folder = sys.argv[1], sys.argv[2], sys.argv[3]
cert = sys.argv[4] if len(sys.argv) > 4 else None
info = lt.bdecode(open(f"{work}/info.bencoded", "rb").read())
torrent = {b"info": info}
layers = f"{work}/layers.bencoded"
if os.path.exists(layers): torrent[b"piece layers"] = lt.bdecode(open(layers, "rb").read())
listen = "0.0.0.0:6881,0.0.0.0:6882s" if cert else "0.0.0.0:6881"
session = lt.session({"listen_interfaces": listen, "enable_dht": False, "enable_lsd": True, "enable_upnp": False,
                      "enable_natpmp": False, "alert_mask": lt.alert.category_t.error_notification
                      | lt.alert.category_t.peer_notification | lt.alert.category_t.status_notification})
params = lt.add_torrent_params()
params.ti = lt.torrent_info(torrent)
params.save_path = folder
if cert:
    params.flags |= lt.torrent_flags.paused  # no connection before the machine's certificate is set
    params.flags &= ~lt.torrent_flags.auto_managed
handle = session.add_torrent(params)
if cert:
    handle.set_ssl_certificate(cert, sys.argv[5], os.environ.get("FIT_DH", ""))
    handle.resume()
timeout = float(os.environ.get("FIT_TIMEOUT", "30"))
start = time.time()
while time.time() - start < timeout:
    for alert in session.pop_alerts():
        if isinstance(alert, (lt.peer_connect_alert, lt.peer_disconnected_alert, lt.lsd_error_alert,
                              lt.peer_error_alert, lt.torrent_error_alert, lt.hash_failed_alert)):
            print(role, round(time.time() - start, 2), type(alert).__name__, alert.message()[:160], flush=True)
    status = handle.status()
    if role == "leech" and status.is_seeding:
        print(role, "DONE after", round(time.time() - start, 2), "s", flush=True)
        break
    time.sleep(0.1)
else:
    print(role, "ended; progress", round(handle.status().progress, 3), "seeding", handle.status().is_seeding, flush=True)
