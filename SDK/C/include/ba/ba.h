/* ba/ba.h: the bahost extension ABI. Include this one header.
 *
 * Files, one concept each: version.h (compatibility), error.h (Apple's error codes), download.h (a download),
 * challenge.h (a server's request for credentials), asset_pack.h (a managed pack), host.h (what the host offers),
 * extension.h (what the extension offers), entry.h (the exported symbol). An app includes ba/app.h instead.
 *
 * Rules for every struct: the first field is struct_size; structs only grow at the end; read a field added after
 * 1.0 only when BA_STRUCT_HAS says it is there. Nothing language-specific crosses: C types and function pointers
 * only. Every pointer passed in a call is borrowed for that call unless its comment says otherwise. */
#ifndef BA_BA_H
#define BA_BA_H

#include "asset_pack.h"
#include "challenge.h"
#include "download.h"
#include "entry.h"
#include "error.h"
#include "extension.h"
#include "host.h"
#include "version.h"

#endif
