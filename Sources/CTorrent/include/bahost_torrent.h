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

/* A session of libtorrent: the swarms of the files this machine shares with others on its network. Local Service
 * Discovery finds the peers; DHT, peer exchange, trackers, UPnP and NAT-PMP are off, so that nothing is announced
 * beyond the network. Every function may be called from any thread; `bahost_swarm_pump` from one only (the owner's). */
typedef struct bahost_swarm bahost_swarm;

/* Starts a session listening on `listen` (libtorrent's listen_interfaces: "0.0.0.0:6881", with ",0.0.0.0:6882s" for
 * SSL torrents), sending peers at most `upload_rate` bytes a second together (0: no limit). Nil, with a sentence in
 * `error`, when libtorrent refuses. */
bahost_swarm *bahost_swarm_start(const char *listen, int64_t upload_rate, char *error, size_t error_size);
/* Ends the session: its connections close, its files stay. */
void bahost_swarm_stop(bahost_swarm *swarm);
/* The most the session sends peers (0: no limit), and whether it sends them anything at all (0: it serves no one,
 * still downloading). */
void bahost_swarm_set_serving(bahost_swarm *swarm, int64_t upload_rate, int serving);
/* The plain and the SSL port listened on (0 for none). */
void bahost_swarm_ports(bahost_swarm *swarm, int *plain, int *ssl);

/* One file's swarm: its identity as a trusted manifest gave it (BEP 52's info dictionary is built from these alone),
 * where it is written, and where the rest of it may be had over HTTP. */
typedef struct {
    const char *name;           /* the file's name in `save_path`, and the last component of a web seed's URL */
    int64_t size;
    int64_t piece_length;
    const uint8_t *pieces_root; /* 32 bytes */
    const uint8_t *piece_layer; /* 32 bytes a piece; nil for a file of one piece */
    size_t piece_layer_size;
    const char *save_path;      /* the folder the file is in */
    const char *web_seed;       /* the folder's URL, ending in '/', or nil: peers alone */
    int have_file;              /* the file is whole in `save_path`: serve it (each piece checked when first asked) */
    const char *ssl_ca_pem;     /* an SSL torrent's authority: only peers it certified are admitted; nil for any */
    const char *ssl_cert_pem;   /* with it, this machine's certificate, key and Diffie-Hellman parameters */
    const char *ssl_key_pem;
    const char *ssl_dh_pem;
} bahost_swarm_file;

/* Joins the file's swarm; returns its number (1 or more), or -1 with a sentence in `error`. */
int64_t bahost_swarm_add(bahost_swarm *swarm, const bahost_swarm_file *file, char *error, size_t error_size);
/* Whether a swarm asks its web seed (the one it joined with) for pieces: off, it takes them from peers alone. */
void bahost_swarm_use_web_seed(bahost_swarm *swarm, int64_t number, int on);
/* The most a swarm receives, bytes a second, from peers and web seeds together (0: no limit). */
void bahost_swarm_set_download_limit(bahost_swarm *swarm, int64_t number, int64_t limit);
/* Leaves a swarm; its file stays where it is. */
void bahost_swarm_remove(bahost_swarm *swarm, int64_t number);

/* Connects to a peer at a known address (where Local Service Discovery cannot reach: loopback). 0, or -1. */
int bahost_swarm_connect(bahost_swarm *swarm, int64_t number, const char *address, int port);

enum { BAHOST_SWARM_CHECKING = 0, BAHOST_SWARM_DOWNLOADING = 1, BAHOST_SWARM_WHOLE = 2, BAHOST_SWARM_FAILED = 3 };

/* Where one swarm stands. */
typedef struct {
    int state;
    int64_t have;            /* bytes whose pieces were checked */
    int64_t from_web_seed;   /* payload bytes received from the web seed */
    int64_t from_peers;      /* payload bytes received from peers */
    int64_t sent_to_peers;   /* payload bytes sent */
    int peers;               /* peers connected (the web seed not counted) */
    int banned;              /* peers banned for sending pieces that failed their hash */
    int failed_pieces;       /* pieces that failed their hash */
    char error[256];         /* why, when `state` is FAILED */
} bahost_swarm_status;

/* The swarm's state; -1 for a number not (or no longer) in the session. */
int bahost_swarm_status_of(bahost_swarm *swarm, int64_t number, bahost_swarm_status *status);
/* Waits up to `timeout_ms` for libtorrent's alerts and takes them into each swarm's state. [the owner's thread] */
void bahost_swarm_pump(bahost_swarm *swarm, int timeout_ms);

/* Pairing a household's machines (docs/PEERS.md): an authority, and each machine's certificate signed by it, for SSL
 * torrents, which admit only peers holding such a certificate. Keys are P-256; each certificate names "*", as
 * libtorrent checks a peer's name against the torrent's. PEM text is written into the buffers given (NUL-terminated);
 * 0, or -1 with a sentence in `error`. */
int bahost_pairing_make_authority(const char *name, char *certificate, size_t certificate_size, char *key,
                                  size_t key_size, char *error, size_t error_size);
int bahost_pairing_certify(const char *authority_certificate, const char *authority_key, const char *name,
                           char *certificate, size_t certificate_size, char *key, size_t key_size, char *error,
                           size_t error_size);
/* The SHA-256 fingerprint of a certificate (of its DER form, as `openssl x509 -fingerprint -sha256` gives it):
 * 0, or -1 for what is not PEM. */
int bahost_pairing_fingerprint(const char *certificate, uint8_t fingerprint[32]);
/* Whether `certificate` was signed by `authority` and `key` is its key: 1, 0, or -1 for what is not PEM. */
int bahost_pairing_check(const char *authority, const char *certificate, const char *key);

#ifdef __cplusplus
}
#endif

#endif
