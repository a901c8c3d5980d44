#!/usr/bin/python3
"""A peer that lies, for Tests/Peers/lan.sh: lying-peer.py MANIFEST PACK PORT LOG.

It announces the pack's swarm by Local Service Discovery (BEP 14) as any bahost would, claims every piece, and
answers each request with random bytes. The swarm's identity comes from the download manifest's BitTorrent hashes
(BEP 52's info dictionary, as bahost builds it); nothing else is known to it. It writes what it did to LOG: each
connection, and the blocks of lies it sent."""
import hashlib, json, os, socket, struct, sys, threading, time

manifest, pack, port, log_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
entry = next(e for e in json.load(open(manifest))["assetPacks"] if e["id"] == pack)
hashes = entry["bittorrent"]
name = entry["url"].rsplit("/", 1)[1].encode()
size, piece_length = entry["downloadSize"], hashes["pieceLength"]
pieces = (size + piece_length - 1) // piece_length


def bencode(value):
    if isinstance(value, int):
        return b"i%de" % value
    if isinstance(value, bytes):
        return b"%d:%s" % (len(value), value)
    if isinstance(value, dict):
        return b"d" + b"".join(bencode(k) + bencode(value[k]) for k in sorted(value)) + b"e"
    raise TypeError(value)


info = {b"name": name, b"piece length": piece_length, b"meta version": 2,
        b"file tree": {name: {b"": {b"length": size, b"pieces root": bytes.fromhex(hashes["piecesRoot"])}}}}
info_hash = hashlib.sha256(bencode(info)).digest()[:20]  # a v2 hash, truncated, in LSD and the handshake
log = open(log_path, "a", buffering=1)


def say(*words):
    print(round(time.time(), 2), *words, file=log)


def announce():
    """BEP 14, every two seconds, on the multicast group every machine of the bridge listens to."""
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    message = ("BT-SEARCH * HTTP/1.1\r\nHost: 239.192.152.143:6771\r\nPort: %d\r\nInfohash: %s\r\n"
               "cookie: liar\r\n\r\n\r\n" % (port, info_hash.hex())).encode()
    while True:
        sender.sendto(message, ("239.192.152.143", 6771))
        time.sleep(2)


def receive(connection, count):
    data = b""
    while len(data) < count:
        chunk = connection.recv(count - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def lie(connection, address):
    try:
        head = receive(connection, 68)
        if head[28:48] != info_hash:
            say("another swarm from", address)
            return
        reserved = bytearray(8)
        reserved[7] |= 0x10  # BitTorrent v2
        connection.sendall(b"\x13BitTorrent protocol" + bytes(reserved) + info_hash + b"-LI0001-" + os.urandom(12))
        bitfield = bytearray((pieces + 7) // 8)
        for index in range(pieces):
            bitfield[index // 8] |= 0x80 >> (index % 8)
        connection.sendall(struct.pack(">IB", 1 + len(bitfield), 5) + bytes(bitfield))
        connection.sendall(struct.pack(">IB", 1, 1))  # unchoke
        say("connected", address)
        while True:
            length = struct.unpack(">I", receive(connection, 4))[0]
            if length == 0:
                continue
            message = receive(connection, length)
            if message[0] == 6:  # request: answered with lies
                index, begin, size_asked = struct.unpack(">III", message[1:13])
                connection.sendall(struct.pack(">IBII", 9 + size_asked, 7, index, begin) + os.urandom(size_asked))
                say("lied", address, index, begin, size_asked)
    except (ConnectionError, OSError) as error:
        say("closed", address, error)
    finally:
        connection.close()


threading.Thread(target=announce, daemon=True).start()
listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("0.0.0.0", port))
listener.listen(8)
say("listening", port, "for", info_hash.hex())
while True:
    connection, address = listener.accept()
    threading.Thread(target=lie, args=(connection, address), daemon=True).start()
