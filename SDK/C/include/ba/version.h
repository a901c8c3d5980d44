/* ba/version.h: the ABI version and the rule that decides whether two sides can talk.
 *
 * A host and an extension are compatible when their major versions are equal. Minor versions only ever add
 * things at the end of size-prefixed structs, so either side may be newer: each reads `struct_size` before
 * touching a field and treats a field past the end as absent (NULL function, zero value). */
#ifndef BA_VERSION_H
#define BA_VERSION_H

#include <stdbool.h>
#include <stdint.h>

#define BA_ABI_VERSION_MAJOR 1u
#define BA_ABI_VERSION_MINOR 2u

typedef struct ba_version {
    uint32_t major;
    uint32_t minor;
} ba_version_t;

#define BA_ABI_VERSION ((ba_version_t){BA_ABI_VERSION_MAJOR, BA_ABI_VERSION_MINOR})

/* Thread rule: any thread. Pure. */
static inline bool ba_version_is_compatible(ba_version_t a, ba_version_t b) { return a.major == b.major; }

/* True when a struct of `struct_size` bytes, as the other side compiled it, contains `field` of `type`.
 * Use it before reading any field that was added after version 1.0. */
#define BA_STRUCT_HAS(type, struct_size, field) \
    ((struct_size) >= __builtin_offsetof(type, field) + sizeof(((type *)0)->field))

#endif
