/* bahost-extension-runner PLUGIN.so: one extension window's process. The host spawns it with the window's socket
 * on descriptor 3; see runner.h for the threads. */
#include "runner.h"
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

static _Noreturn void refuse(ba_wire_load_failure_t why, const char *message) {
    ba_wire_writer_t w;
    ba_wire_writer_init(&w, BA_WIRE_LOAD_FAILED);
    ba_wire_put_u8(&w, (uint8_t)why);
    ba_wire_put_str(&w, message);
    channel_send(&w);
    _exit(0);
}

/* True unless `path` can be read and does not start with the ELF magic: dlopen's own words for a text file
 * ("file too short", "invalid ELF header") do not tell a user what is wrong. */
static bool looks_like_elf(const char *path) {
    unsigned char magic[4] = {0};
    FILE *file = fopen(path, "rb");
    if (!file) return true; /* let dlopen say why it cannot be opened */
    size_t n = fread(magic, 1, sizeof magic, file);
    fclose(file);
    return n == sizeof magic && memcmp(magic, "\x7f" "ELF", 4) == 0;
}

static const ba_extension_t *load(const char *path) {
    char message[1024];
    if (!looks_like_elf(path)) {
        snprintf(message, sizeof message, "%s is not an ELF shared object", path);
        refuse(BA_WIRE_NOT_LOADABLE, message);
    }
    /* RTLD_LOCAL keeps each extension's symbols to itself; never dlclosed, because a Swift image cannot be
     * unloaded safely (its runtime keeps pointers into it). */
    void *image = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!image) {
        const char *reason = dlerror();
        refuse(BA_WIRE_NOT_LOADABLE, reason ? reason : "dlopen failed");
    }
    ba_entry_function_t entry_function = (ba_entry_function_t)dlsym(image, BA_ENTRY_SYMBOL);
    if (!entry_function) {
        snprintf(message, sizeof message, "%s does not export %s (see SDK/C/include/ba/entry.h)", path,
                 BA_ENTRY_SYMBOL);
        refuse(BA_WIRE_MISSING_ENTRY, message);
    }
    const ba_entry_t *entry = entry_function();
    if (!entry) refuse(BA_WIRE_MISSING_ENTRY, BA_ENTRY_SYMBOL "() returned NULL");
    if (entry->identifier && strnlen(entry->identifier, BA_WIRE_MAX_IDENTIFIER + 1) > BA_WIRE_MAX_IDENTIFIER) {
        snprintf(message, sizeof message, "the entry's identifier is longer than %u bytes", BA_WIRE_MAX_IDENTIFIER);
        refuse(BA_WIRE_INCOMPATIBLE, message);
    }
    if (entry->struct_size < offsetof(ba_entry_t, init) + sizeof entry->init) {
        snprintf(message, sizeof message, "the entry's struct_size %u is smaller than any ba_entry_t",
                 entry->struct_size);
        refuse(BA_WIRE_INCOMPATIBLE, message);
    }
    if (!ba_version_is_compatible(entry->abi_version, BA_ABI_VERSION)) {
        snprintf(message, sizeof message, "the extension was built for ABI %u.%u; this host speaks ABI %u.x",
                 entry->abi_version.major, entry->abi_version.minor, BA_ABI_VERSION_MAJOR);
        refuse(BA_WIRE_INCOMPATIBLE, message);
    }
    if (!entry->init) refuse(BA_WIRE_INCOMPATIBLE, "the entry has no init function");
    const ba_extension_t *ext = entry->init(host_table_create());
    if (!ext) refuse(BA_WIRE_INIT_FAILED, "init returned NULL (the extension's log may say why)");
    if (ext->struct_size < offsetof(ba_extension_t, downloads_for_request)) {
        snprintf(message, sizeof message, "the extension table's struct_size %u is smaller than any ba_extension_t",
                 ext->struct_size);
        refuse(BA_WIRE_INCOMPATIBLE, message);
    }

    ba_wire_writer_t w;
    ba_wire_writer_init(&w, BA_WIRE_HELLO);
    ba_wire_put_u32(&w, entry->abi_version.major);
    ba_wire_put_u32(&w, entry->abi_version.minor);
    ba_wire_put_str(&w, entry->identifier);
    channel_send(&w);
    return ext;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: bahost-extension-runner PLUGIN.so (spawned by bahost, with its socket on fd 3)\n");
        return 64;
    }
    /* The window's process never outlives the host. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGPIPE, SIG_IGN);
    /* stdout is the host's pipe: line-buffer it so that what the extension prints arrives as it prints it. */
    setvbuf(stdout, NULL, _IOLBF, 0);

    sandbox_apply(argv[1]);
    channel_start_logs();
    const ba_extension_t *ext = load(argv[1]);
    entry_thread_start(ext);

    static uint8_t buffer[BA_WIRE_MAX_PACKET];
    for (;;) {
        /* Waits for the host's next packet, and meanwhile sends log messages that have waited long enough. */
        struct pollfd ready = {.fd = RUNNER_CHANNEL_FD, .events = POLLIN};
        int count = poll(&ready, 1, channel_log_timeout_ms(extension_running()));
        if (count < 0 && errno != EINTR) runner_fail("poll failed");
        channel_flush_logs(true);
        if (count <= 0) continue;
        ssize_t length = recv(RUNNER_CHANNEL_FD, buffer, sizeof buffer, 0);
        if (length < 0 && errno == EINTR) continue;
        if (length <= 0) _exit(0); /* the host closed the window */
        uint8_t type = buffer[0];
        if (type == BA_WIRE_END) {
            channel_flush_logs(false);
            /* _exit, not exit: the extension's atexit handlers and destructors could hang or crash. */
            fflush(NULL);
            _exit(0);
        }
        if (type == BA_WIRE_WILL_TERMINATE) {
            terminate_thread_start(ext);
            continue;
        }
        uint8_t *packet = malloc((size_t)length);
        if (!packet) runner_fail("out of memory for a packet from the host");
        memcpy(packet, buffer, (size_t)length);
        if (type == BA_WIRE_EVENT) {
            entry_thread_enqueue(packet, (size_t)length);
        } else if ((type == BA_WIRE_REPLY || type == BA_WIRE_REPLY_DOWNLOAD) && length >= 5) {
            ba_wire_reader_t r;
            uint32_t call_id;
            ba_wire_reader_init(&r, packet + 1, (size_t)length - 1);
            ba_wire_get_u32(&r, &call_id);
            channel_deliver_reply(call_id, packet, (size_t)length);
        } else {
            free(packet);
        }
    }
}
