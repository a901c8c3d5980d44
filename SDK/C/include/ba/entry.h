/* ba/entry.h: the one symbol an extension exports, and how the host loads it.
 *
 * Loading: the runner dlopens the .so (RTLD_NOW | RTLD_LOCAL; never dlclosed), calls ba_extension_entry(),
 * refuses an entry whose major version differs from its own, then calls init once. */
#ifndef BA_ENTRY_H
#define BA_ENTRY_H

#include "extension.h"
#include "host.h"
#include "version.h"

#if defined(__GNUC__)
#define BA_EXPORT __attribute__((visibility("default")))
#else
#define BA_EXPORT
#endif

typedef struct ba_entry {
    uint32_t struct_size;     /* sizeof(ba_entry_t) as the extension compiled it */
    ba_version_t abi_version; /* BA_ABI_VERSION as the extension compiled it */
    const char *identifier;   /* the extension's identifier, e.g. "com.example.game.assets"; may be NULL */

    /* [loader thread, once, before anything else] Sets the extension up. `host` and its functions stay valid
     * for the life of the process. Returns the extension's table, which must stay valid for the life of the
     * process, or NULL to refuse to load (say why through host->log first). */
    const ba_extension_t *(*init)(const ba_host_t *host);
} ba_entry_t;

#define BA_ENTRY_SYMBOL "ba_extension_entry"
typedef const ba_entry_t *(*ba_entry_function_t)(void);

/* [loader thread] The extension's one exported symbol: returns its entry, which it owns, valid for the life of
 * the process. Must not do anything else. */
BA_EXPORT const ba_entry_t *ba_extension_entry(void);

#endif
