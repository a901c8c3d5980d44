/* ba_wire.h: the messages between the host and its extension runner, over a SOCK_SEQPACKET socket pair
 * (one message per packet, so no framing). Private to bahost: extensions never see it.
 *
 * Encoding: little-endian integers; a string is u32 length, the bytes, then a NUL (so a decoded string points
 * straight into the packet); length 0xFFFFFFFF is NULL. The host decodes untrusted packets: every read is
 * bounds-checked and a short or malformed packet fails the read instead of reading past the end. */
#ifndef BA_WIRE_H
#define BA_WIRE_H

#include "ba/ba.h"
#include <stddef.h>
#include <stdint.h>

/* The largest packet either side sends or accepts. */
#define BA_WIRE_MAX_PACKET (256u * 1024u)
/* The most request headers one download may carry. */
#define BA_WIRE_MAX_HEADERS 64u
/* What one download's fields may hold, so that any download fits a packet with room to spare: longer ones are
 * refused, naming the limit, before anything is sent. */
#define BA_WIRE_MAX_IDENTIFIER 1024u   /* identifier, unique_identifier */
#define BA_WIRE_MAX_URL 8192u
#define BA_WIRE_MAX_GROUP 255u         /* application_group_identifier */
#define BA_WIRE_MAX_SHA256 64u
#define BA_WIRE_MAX_HEADER 8192u       /* one "Name: value" */
#define BA_WIRE_MAX_HEADERS_BYTES (32u * 1024u)
/* The network_access bits this version knows; a newer extension's others are dropped when it is read. */
#define BA_WIRE_NETWORK_ACCESS_KNOWN (BA_NETWORK_ACCESS_AVOIDS_EXPENSIVE | BA_NETWORK_ACCESS_AVOIDS_CONSTRAINED)
#define BA_WIRE_MAX_CREDENTIAL 4096u   /* a challenge reply's user, and its password */
/* The longest log message the runner sends: a longer one is cut there (on a UTF-8 boundary) and says how much was
 * cut, so that no message an extension logs can make a packet the socket refuses. The host keeps no longer a line. */
#define BA_WIRE_MAX_LOG (16u * 1024u)
/* How many bytes of downloads the runner gathers into one DOWNLOAD packet: a packet a download made a set of
 * 100,000 cost 100,000 sends and receives. Well under BA_WIRE_MAX_PACKET, which one download may approach alone. */
#define BA_WIRE_BATCH_BYTES (64u * 1024u)

typedef enum ba_wire_type {
    /* runner → host */
    BA_WIRE_HELLO = 1,          /* u32 major, u32 minor, str identifier */
    BA_WIRE_LOAD_FAILED = 2,    /* u8 ba_wire_load_failure, str message */
    BA_WIRE_DOWNLOAD = 3,       /* u32 event id, then one or more downloads to the packet's end: elements of the set
                                   downloads_for_request returns (the runner packs up to BA_WIRE_BATCH_BYTES) */
    BA_WIRE_EVENT_DONE = 4,     /* u32 event id: the entry point returned */
    BA_WIRE_CALL = 5,           /* u32 call id, u8 ba_wire_function, arguments (see ba_wire_function) */
    BA_WIRE_LOG = 6,            /* i32 level, str message; then more of both to the packet's end (the runner gathers
                                   what is logged within a few milliseconds, up to BA_WIRE_BATCH_BYTES) */
    BA_WIRE_VIOLATION = 7,      /* str what the extension did wrong */
    BA_WIRE_TERMINATE_DONE = 8, /* will_terminate returned (or there is none) */
    BA_WIRE_SANDBOX = 10,       /* str: what the sandbox applied; first, before the extension is loaded, once only */
    BA_WIRE_ANSWER = 9,         /* u32 event id, u8 answer: what should_download_asset_pack returned (1.1), sent
                                   before the event's EVENT_DONE */
    BA_WIRE_CHALLENGE_ANSWER = 11, /* u32 event id, i32 disposition, str user, str password: a challenge's reply,
                                   before or after its EVENT_DONE */
    BA_WIRE_FILE_LEFT = 12,     /* u32 event id: download_finished returned with the file still where the host put
                                   it (the runner deleted it); before the event's EVENT_DONE */
    BA_WIRE_RUNNER_FAILED = 13, /* str: the runner itself failed (not the extension), just before it exits */
    /* host → runner */
    BA_WIRE_EVENT = 64,          /* u32 event id, u8 ba_wire_event, arguments (see ba_wire_event) */
    BA_WIRE_WILL_TERMINATE = 65, /* call will_terminate now */
    BA_WIRE_REPLY_DOWNLOAD = 66, /* u32 call id, download: one result of fetch_current_downloads */
    BA_WIRE_REPLY = 67,          /* u32 call id, error (i64 code, 0 = success; str domain; str message) */
    BA_WIRE_END = 68,            /* the window is over: exit now */
} ba_wire_type_t;

typedef enum ba_wire_load_failure {
    BA_WIRE_NOT_LOADABLE = 1,    /* dlopen failed: not an ELF shared object, missing dependency, ... */
    BA_WIRE_MISSING_ENTRY = 2,   /* no ba_extension_entry symbol, or it returned NULL */
    BA_WIRE_INCOMPATIBLE = 3,    /* the entry's ABI major differs from the runner's, or its struct is too small */
    BA_WIRE_INIT_FAILED = 4,     /* init returned NULL */
} ba_wire_load_failure_t;

typedef enum ba_wire_function {
    BA_WIRE_SCHEDULE = 1,          /* download */
    BA_WIRE_START_FOREGROUND = 2,  /* download */
    BA_WIRE_CANCEL = 3,            /* download */
    BA_WIRE_FETCH = 4,             /* nothing */
    BA_WIRE_ACQUIRE_EXCLUSIVE = 5, /* i64 timeout in ms */
    BA_WIRE_RELEASE_EXCLUSIVE = 6, /* nothing */
} ba_wire_function_t;

typedef enum ba_wire_event {
    BA_WIRE_CONTENT_REQUEST = 1, /* i32 request, str manifest path, i64 remaining, i64 essential remaining */
    BA_WIRE_FAILED = 2,          /* download, i64 code, str domain, str message, str ticket (NULL for none): the
                                    runner removes the ticket once the entry point returned */
    BA_WIRE_FINISHED = 3,        /* download, str file path: the runner deletes the file, if still there, once the
                                    entry point returned */
    BA_WIRE_SHOULD_DOWNLOAD = 4, /* str pack id, i64 version, i64 download size, str user info JSON ("" for none) */
    BA_WIRE_CHALLENGE = 5,       /* download, str host, i32 port, str protocol, str realm (NULL for none),
                                    str authentication method, i32 previous failure count */
} ba_wire_event_t;

/* A packet being written. Writes never fail short of memory exhaustion, which aborts. */
typedef struct ba_wire_writer {
    uint8_t *bytes;
    size_t length;
    size_t capacity;
} ba_wire_writer_t;

void ba_wire_writer_init(ba_wire_writer_t *w, uint8_t type);
void ba_wire_writer_free(ba_wire_writer_t *w);
void ba_wire_put_u8(ba_wire_writer_t *w, uint8_t v);
void ba_wire_put_u32(ba_wire_writer_t *w, uint32_t v);
void ba_wire_put_i32(ba_wire_writer_t *w, int32_t v);
void ba_wire_put_i64(ba_wire_writer_t *w, int64_t v);
void ba_wire_put_str(ba_wire_writer_t *w, const char *s);
void ba_wire_put_bytes_as_str(ba_wire_writer_t *w, const char *s, size_t n);
/* Why *d, coming from extension code, cannot be a 1.x ba_download_t (NULL, a struct_size no published layout
 * has, a missing required string), or NULL when it can be read safely. */
const char *ba_wire_download_problem(const ba_download_t *d);
/* Writes every field of a download the filler's struct_size covers; fields past it go as empty.
 * A download from extension code must pass ba_wire_download_problem first. */
void ba_wire_put_download(ba_wire_writer_t *w, const ba_download_t *d);

/* A received packet being read. A failed read leaves the reader failed: every later read fails too. */
typedef struct ba_wire_reader {
    const uint8_t *bytes;
    size_t length;
    size_t position;
    bool failed;
} ba_wire_reader_t;

void ba_wire_reader_init(ba_wire_reader_t *r, const uint8_t *bytes, size_t length);
bool ba_wire_get_u8(ba_wire_reader_t *r, uint8_t *v);
bool ba_wire_get_u32(ba_wire_reader_t *r, uint32_t *v);
bool ba_wire_get_i32(ba_wire_reader_t *r, int32_t *v);
bool ba_wire_get_i64(ba_wire_reader_t *r, int64_t *v);
/* *s points into the packet (NUL-terminated) or is NULL; *n is its length in bytes. */
bool ba_wire_get_str(ba_wire_reader_t *r, const char **s, size_t *n);
/* Fills *d with pointers into the packet; headers go in header_storage (at most BA_WIRE_MAX_HEADERS). */
bool ba_wire_get_download(ba_wire_reader_t *r, ba_download_t *d, const char **header_storage);
/* True when every byte was read and no read failed. */
bool ba_wire_at_end(const ba_wire_reader_t *r);

#endif
