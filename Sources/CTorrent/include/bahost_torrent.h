/* bahost_torrent.h: libtorrent-rasterbar (C++) behind a C interface that Swift calls. BitTorrent v2 (BEP 52) is what
 * lets machines on one network share content that a manifest fetched over TLS vouches for: every 16 KiB block of a
 * file is checked against a SHA-256 Merkle tree whose root (the file's "pieces root") the manifest carries
 * (docs/performance/DECISIONS.md #59). Every rule lives in Swift; this only drives libtorrent. */
#ifndef BAHOST_TORRENT_H
#define BAHOST_TORRENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The BitTorrent v2 hashes of the file at `path`, as libtorrent makes them for a v2 torrent of that file alone with
 * pieces of `piece_length` bytes (a power of two, 16 KiB or more): its pieces root (the Merkle root over its 16 KiB
 * blocks, 32 bytes into `root`) and its piece layer (each piece's subtree root, 32 bytes a piece, into `layer`, which
 * holds `layer_capacity` bytes; `*layer_size` is what was written: nothing for a file of one piece, which BEP 52
 * gives no layer). An empty file has no hashes. Returns 0, or -1 with a sentence in `error` (at most `error_size`
 * bytes, NUL-terminated). */
int bahost_torrent_hash_file(const char *path, int64_t piece_length, uint8_t root[32], uint8_t *layer,
                             size_t layer_capacity, size_t *layer_size, char *error, size_t error_size);

#ifdef __cplusplus
}
#endif

#endif
