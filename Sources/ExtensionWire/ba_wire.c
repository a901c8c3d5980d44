#include "ba_wire.h"
#include <stdlib.h>
#include <string.h>

#define NULL_STRING 0xFFFFFFFFu

static void reserve(ba_wire_writer_t *w, size_t more) {
    if (w->length + more <= w->capacity) return;
    size_t capacity = w->capacity ? w->capacity : 256;
    while (capacity < w->length + more) capacity *= 2;
    uint8_t *bytes = realloc(w->bytes, capacity);
    if (!bytes) abort();
    w->bytes = bytes;
    w->capacity = capacity;
}

static void put(ba_wire_writer_t *w, const void *p, size_t n) {
    reserve(w, n);
    memcpy(w->bytes + w->length, p, n);
    w->length += n;
}

void ba_wire_writer_init(ba_wire_writer_t *w, uint8_t type) {
    *w = (ba_wire_writer_t){0};
    ba_wire_put_u8(w, type);
}

void ba_wire_writer_free(ba_wire_writer_t *w) {
    free(w->bytes);
    *w = (ba_wire_writer_t){0};
}

void ba_wire_put_u8(ba_wire_writer_t *w, uint8_t v) { put(w, &v, 1); }

void ba_wire_put_u32(ba_wire_writer_t *w, uint32_t v) {
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(w, b, 4);
}

void ba_wire_put_i32(ba_wire_writer_t *w, int32_t v) { ba_wire_put_u32(w, (uint32_t)v); }

void ba_wire_put_i64(ba_wire_writer_t *w, int64_t v) {
    ba_wire_put_u32(w, (uint32_t)(uint64_t)v);
    ba_wire_put_u32(w, (uint32_t)((uint64_t)v >> 32));
}

void ba_wire_put_bytes_as_str(ba_wire_writer_t *w, const char *s, size_t n) {
    if (!s) {
        ba_wire_put_u32(w, NULL_STRING);
        return;
    }
    if (n >= NULL_STRING) n = NULL_STRING - 1;
    ba_wire_put_u32(w, (uint32_t)n);
    put(w, s, n);
    ba_wire_put_u8(w, 0);
}

void ba_wire_put_str(ba_wire_writer_t *w, const char *s) { ba_wire_put_bytes_as_str(w, s, s ? strlen(s) : 0); }

const char *ba_wire_download_problem(const ba_download_t *d) {
    if (!d) return "the download is NULL";
    if (d->struct_size < offsetof(ba_download_t, network_access) || d->struct_size > 64u * 1024u)
        return "the download's struct_size is not a ba_download_t size (garbage?)";
    if (!d->identifier) return "the download has no identifier";
    if (!d->application_group_identifier) return "the download has no application group identifier";
    if (d->kind == BA_DOWNLOAD_KIND_URL && !d->url) return "the download has no URL";
    if (d->http_header_count > BA_WIRE_MAX_HEADERS) return "the download has more than 64 request headers";
    if (d->http_header_count && !d->http_headers) return "the download's http_headers is NULL";
    size_t headers = 0;
    for (uint32_t i = 0; i < d->http_header_count; i++) {
        if (!d->http_headers[i]) return "one of the download's request headers is NULL";
        size_t length = strnlen(d->http_headers[i], BA_WIRE_MAX_HEADER + 1);
        if (length > BA_WIRE_MAX_HEADER) return "a request header is longer than 8192 bytes";
        headers += length;
    }
    if (headers > BA_WIRE_MAX_HEADERS_BYTES) return "the request headers are longer than 32768 bytes together";
    if (strnlen(d->identifier, BA_WIRE_MAX_IDENTIFIER + 1) > BA_WIRE_MAX_IDENTIFIER)
        return "the identifier is longer than 1024 bytes";
    if (BA_STRUCT_HAS(ba_download_t, d->struct_size, unique_identifier) && d->unique_identifier &&
        strnlen(d->unique_identifier, BA_WIRE_MAX_IDENTIFIER + 1) > BA_WIRE_MAX_IDENTIFIER)
        return "the unique identifier is longer than 1024 bytes";
    if (d->url && strnlen(d->url, BA_WIRE_MAX_URL + 1) > BA_WIRE_MAX_URL) return "the URL is longer than 8192 bytes";
    if (strnlen(d->application_group_identifier, BA_WIRE_MAX_GROUP + 1) > BA_WIRE_MAX_GROUP)
        return "the application group identifier is longer than 255 bytes";
    if (d->sha256 && strnlen(d->sha256, BA_WIRE_MAX_SHA256 + 1) > BA_WIRE_MAX_SHA256)
        return "sha256 is longer than 64 hex digits";
    return NULL;
}

void ba_wire_put_download(ba_wire_writer_t *w, const ba_download_t *d) {
    uint32_t size = d->struct_size;
#define HAS(field) BA_STRUCT_HAS(ba_download_t, size, field)
    ba_wire_put_i32(w, HAS(kind) ? d->kind : BA_DOWNLOAD_KIND_URL);
    ba_wire_put_str(w, HAS(identifier) ? d->identifier : NULL);
    ba_wire_put_str(w, HAS(unique_identifier) ? d->unique_identifier : NULL);
    ba_wire_put_str(w, HAS(url) ? d->url : NULL);
    ba_wire_put_str(w, HAS(application_group_identifier) ? d->application_group_identifier : NULL);
    ba_wire_put_i64(w, HAS(file_size) ? d->file_size : 0);
    ba_wire_put_i64(w, HAS(priority) ? d->priority : BA_DOWNLOAD_PRIORITY_DEFAULT);
    ba_wire_put_i32(w, HAS(state) ? d->state : BA_DOWNLOAD_STATE_CREATED);
    ba_wire_put_u8(w, HAS(essential) ? (uint8_t)(d->essential ? 1 : 0) : 0);
    ba_wire_put_str(w, HAS(sha256) ? d->sha256 : NULL);
    uint32_t count = HAS(http_header_count) && HAS(http_headers) && d->http_headers ? d->http_header_count : 0;
    ba_wire_put_u32(w, count);
    for (uint32_t i = 0; i < count; i++) ba_wire_put_str(w, d->http_headers[i]);
    ba_wire_put_u32(w, HAS(network_access) ? (uint32_t)(d->network_access & BA_WIRE_NETWORK_ACCESS_KNOWN) : 0);
#undef HAS
}

void ba_wire_reader_init(ba_wire_reader_t *r, const uint8_t *bytes, size_t length) {
    *r = (ba_wire_reader_t){.bytes = bytes, .length = length};
}

static bool take(ba_wire_reader_t *r, void *out, size_t n) {
    if (r->failed || r->length - r->position < n) {
        r->failed = true;
        return false;
    }
    memcpy(out, r->bytes + r->position, n);
    r->position += n;
    return true;
}

bool ba_wire_get_u8(ba_wire_reader_t *r, uint8_t *v) { return take(r, v, 1); }

bool ba_wire_get_u32(ba_wire_reader_t *r, uint32_t *v) {
    uint8_t b[4];
    if (!take(r, b, 4)) return false;
    *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return true;
}

bool ba_wire_get_i32(ba_wire_reader_t *r, int32_t *v) {
    uint32_t u;
    if (!ba_wire_get_u32(r, &u)) return false;
    *v = (int32_t)u;
    return true;
}

bool ba_wire_get_i64(ba_wire_reader_t *r, int64_t *v) {
    uint32_t lo, hi;
    if (!ba_wire_get_u32(r, &lo) || !ba_wire_get_u32(r, &hi)) return false;
    *v = (int64_t)((uint64_t)hi << 32 | lo);
    return true;
}

bool ba_wire_get_str(ba_wire_reader_t *r, const char **s, size_t *n) {
    uint32_t length;
    if (!ba_wire_get_u32(r, &length)) return false;
    if (length == NULL_STRING) {
        *s = NULL;
        *n = 0;
        return true;
    }
    /* length bytes plus the NUL, and the NUL must be there */
    if (r->length - r->position < (size_t)length + 1 || r->bytes[r->position + length] != 0) {
        r->failed = true;
        return false;
    }
    *s = (const char *)(r->bytes + r->position);
    *n = length;
    r->position += (size_t)length + 1;
    return true;
}

bool ba_wire_get_download(ba_wire_reader_t *r, ba_download_t *d, const char **header_storage) {
    size_t n;
    uint8_t essential = 0;
    uint32_t count = 0;
    *d = (ba_download_t){.struct_size = sizeof(ba_download_t)};
    bool ok = ba_wire_get_i32(r, &d->kind) && ba_wire_get_str(r, &d->identifier, &n) &&
              ba_wire_get_str(r, &d->unique_identifier, &n) && ba_wire_get_str(r, &d->url, &n) &&
              ba_wire_get_str(r, &d->application_group_identifier, &n) && ba_wire_get_i64(r, &d->file_size) &&
              ba_wire_get_i64(r, &d->priority) && ba_wire_get_i32(r, &d->state) && ba_wire_get_u8(r, &essential) &&
              ba_wire_get_str(r, &d->sha256, &n) && ba_wire_get_u32(r, &count);
    if (!ok || count > BA_WIRE_MAX_HEADERS) {
        r->failed = true;
        return false;
    }
    for (uint32_t i = 0; i < count; i++)
        if (!ba_wire_get_str(r, &header_storage[i], &n) || !header_storage[i]) {
            r->failed = true;
            return false;
        }
    uint32_t access = 0;
    if (!ba_wire_get_u32(r, &access) || (access & ~BA_WIRE_NETWORK_ACCESS_KNOWN)) {
        r->failed = true;
        return false;
    }
    d->network_access = access;
    d->essential = essential != 0;
    d->http_headers = count ? header_storage : NULL;
    d->http_header_count = count;
    return true;
}

bool ba_wire_at_end(const ba_wire_reader_t *r) { return !r->failed && r->position == r->length; }
