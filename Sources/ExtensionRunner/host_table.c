/* The host function table, built at start-up from one description of each function.
 *
 * Why libffi: every host function does the same four things: check its arguments (they come from extension code
 * and may be garbage), marshal them into a CALL packet, wait for the host's reply, and hand back the result in the
 * C shape the ABI promises. libffi closures let one forwarder serve every slot of ba_host_t from the rows below, so
 * a new host function is a row plus a handler in the host, and argument checking cannot drift between slots. */
#include "runner.h"
#include <ffi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum arg_kind { ARG_HOST, ARG_I32, ARG_I64, ARG_STR, ARG_DOWNLOAD, ARG_VISITOR, ARG_CONTEXT, ARG_ERROR } arg_kind_t;

typedef struct host_function {
    const char *name;
    size_t slot;      /* offset of the function pointer in ba_host_t */
    uint8_t function; /* ba_wire_function_t; 0 for log, which is a LOG packet with no reply */
    bool returns_bool;
    unsigned argc;
    arg_kind_t args[4];
} host_function_t;

static const host_function_t functions[] = {
    {"log", offsetof(ba_host_t, log), 0, false, 3, {ARG_HOST, ARG_I32, ARG_STR}},
    {"schedule_download", offsetof(ba_host_t, schedule_download), BA_WIRE_SCHEDULE, true, 3,
     {ARG_HOST, ARG_DOWNLOAD, ARG_ERROR}},
    {"start_foreground_download", offsetof(ba_host_t, start_foreground_download), BA_WIRE_START_FOREGROUND, true,
     3, {ARG_HOST, ARG_DOWNLOAD, ARG_ERROR}},
    {"cancel_download", offsetof(ba_host_t, cancel_download), BA_WIRE_CANCEL, true, 3,
     {ARG_HOST, ARG_DOWNLOAD, ARG_ERROR}},
    {"fetch_current_downloads", offsetof(ba_host_t, fetch_current_downloads), BA_WIRE_FETCH, true, 4,
     {ARG_HOST, ARG_VISITOR, ARG_CONTEXT, ARG_ERROR}},
    {"acquire_exclusive_control", offsetof(ba_host_t, acquire_exclusive_control), BA_WIRE_ACQUIRE_EXCLUSIVE, true,
     3, {ARG_HOST, ARG_I64, ARG_ERROR}},
    {"release_exclusive_control", offsetof(ba_host_t, release_exclusive_control), BA_WIRE_RELEASE_EXCLUSIVE, false,
     1, {ARG_HOST}},
};

#define FUNCTION_COUNT (sizeof functions / sizeof functions[0])

/* The 1.0 size of ba_error_t: what an extension that left struct_size at 0 is taken to have. */
#define ERROR_1_0_SIZE sizeof(ba_error_t)

static void fill_error(ba_error_t *error, int64_t code, const char *domain, const char *message) {
    if (!error) return;
    size_t room = error->struct_size ? error->struct_size : ERROR_1_0_SIZE;
    if (room < ERROR_1_0_SIZE) return; /* smaller than any published layout: nowhere safe to write */
    error->struct_size = (uint32_t)ERROR_1_0_SIZE;
    error->code = code;
    snprintf(error->domain, sizeof error->domain, "%s", domain ? domain : "");
    snprintf(error->message, sizeof error->message, "%s", message ? message : "");
}

/* A log message as the host keeps it: at most BA_WIRE_MAX_LOG bytes, cut on a UTF-8 boundary and saying how much
 * was cut, whatever the extension passed (a 1 MiB message would make a packet the socket refuses). */
static void put_bounded_text(ba_wire_writer_t *w, const char *text) {
    size_t length = text ? strlen(text) : 0;
    if (length <= BA_WIRE_MAX_LOG) {
        ba_wire_put_str(w, text);
        return;
    }
    char note[64];
    size_t kept = BA_WIRE_MAX_LOG - sizeof note;
    while (kept > 0 && ((unsigned char)text[kept] & 0xC0) == 0x80) kept--; /* not inside a character */
    int note_length = snprintf(note, sizeof note, "… (%zu more bytes cut by bahost)", length - kept);
    char *bounded = malloc(kept + (size_t)note_length + 1);
    if (!bounded) runner_fail("out of memory for a log message");
    memcpy(bounded, text, kept);
    memcpy(bounded + kept, note, (size_t)note_length + 1);
    ba_wire_put_str(w, bounded);
    free(bounded);
}

/* Reads the host's answer to call `id`: visits REPLY_DOWNLOAD packets, returns true when REPLY says success. */
static bool await_reply(uint32_t id, ba_download_visitor_t visit, void *context, ba_error_t *error) {
    for (;;) {
        size_t length;
        uint8_t *packet = channel_wait_reply(id, &length);
        ba_wire_reader_t r;
        ba_wire_reader_init(&r, packet + 1, length - 1);
        uint32_t call_id;
        ba_wire_get_u32(&r, &call_id);
        if (packet[0] == BA_WIRE_REPLY_DOWNLOAD) {
            ba_download_t d;
            const char *headers[BA_WIRE_MAX_HEADERS];
            if (ba_wire_get_download(&r, &d, headers) && visit) visit(context, &d);
            free(packet);
            continue;
        }
        int64_t code = -1;
        const char *domain = NULL, *message = NULL;
        size_t n;
        bool ok = ba_wire_get_i64(&r, &code) && ba_wire_get_str(&r, &domain, &n) && ba_wire_get_str(&r, &message, &n);
        if (!ok) fill_error(error, BA_ERROR_CALLER_CONNECTION_INVALID, BA_ERROR_DOMAIN, "malformed reply from host");
        else if (code != 0) fill_error(error, code, domain, message);
        free(packet);
        return ok && code == 0;
    }
}

static void forward(ffi_cif *cif, void *result, void **args, void *user_data) {
    (void)cif;
    const host_function_t *f = user_data;
    ba_download_visitor_t visit = NULL;
    void *context = NULL;
    ba_error_t *error = NULL;
    for (unsigned i = 0; i < f->argc; i++)
        if (f->args[i] == ARG_ERROR) error = *(ba_error_t **)args[i];

    ba_wire_writer_t w;
    uint32_t id = 0;
    if (f->function == 0) {
        ba_wire_writer_init(&w, BA_WIRE_LOG);
    } else {
        id = channel_begin_call();
        ba_wire_writer_init(&w, BA_WIRE_CALL);
        ba_wire_put_u32(&w, id);
        ba_wire_put_u8(&w, f->function);
    }
    for (unsigned i = 0; i < f->argc; i++) {
        switch (f->args[i]) {
        case ARG_HOST: case ARG_ERROR: break;
        case ARG_I32: ba_wire_put_i32(&w, *(int32_t *)args[i]); break;
        case ARG_I64: ba_wire_put_i64(&w, *(int64_t *)args[i]); break;
        case ARG_STR: put_bounded_text(&w, *(const char **)args[i]); break;
        case ARG_VISITOR: visit = *(ba_download_visitor_t *)args[i]; break;
        case ARG_CONTEXT: context = *(void **)args[i]; break;
        case ARG_DOWNLOAD: {
            const ba_download_t *d = *(const ba_download_t **)args[i];
            const char *problem = ba_wire_download_problem(d);
            if (problem) {
                ba_wire_writer_free(&w);
                channel_end_call(id);
                char message[160];
                snprintf(message, sizeof message, "%s: %s", f->name, problem);
                fill_error(error, BA_ERROR_DOWNLOAD_INVALID, BA_ERROR_DOMAIN, message);
                *(ffi_arg *)result = 0;
                return;
            }
            ba_wire_put_download(&w, d);
            break;
        }
        }
    }
    if (f->function == 0) {
        channel_log(&w);
        return;
    }
    channel_send(&w);
    bool ok = await_reply(id, visit, context, error);
    channel_end_call(id);
    if (f->returns_bool) *(ffi_arg *)result = ok;
}

static ffi_type *ffi_type_of(arg_kind_t kind) {
    switch (kind) {
    case ARG_I32: return &ffi_type_sint32;
    case ARG_I64: return &ffi_type_sint64;
    default: return &ffi_type_pointer;
    }
}

const ba_host_t *host_table_create(void) {
    static ba_host_t host;
    static ffi_cif cifs[FUNCTION_COUNT];
    static ffi_type *arg_types[FUNCTION_COUNT][4];
    host = (ba_host_t){
        .struct_size = sizeof host,
        .abi_version = BA_ABI_VERSION,
        .name = "bahost",
        /* The host's release, which it hands the runner (Vocabulary's BahostVersion, its one home). */
        .version = getenv("BAHOST_RELEASE") ? strdup(getenv("BAHOST_RELEASE")) : "unknown",
    };
    for (size_t i = 0; i < FUNCTION_COUNT; i++) {
        const host_function_t *f = &functions[i];
        for (unsigned a = 0; a < f->argc; a++) arg_types[i][a] = ffi_type_of(f->args[a]);
        void *code = NULL;
        ffi_closure *closure = ffi_closure_alloc(sizeof(ffi_closure), &code);
        ffi_type *result = f->returns_bool ? &ffi_type_uint8 : &ffi_type_void;
        if (!closure || ffi_prep_cif(&cifs[i], FFI_DEFAULT_ABI, f->argc, result, arg_types[i]) != FFI_OK ||
            ffi_prep_closure_loc(closure, &cifs[i], forward, (void *)f, code) != FFI_OK) {
            char why[128];
            snprintf(why, sizeof why, "libffi could not build host function %s", f->name);
            runner_fail(why);
        }
        memcpy((char *)&host + f->slot, &code, sizeof code);
    }
    return &host;
}
