/* A host that loads the app library at run time and unloads it, as a game engine does with its scripting layer's
 * bindings (LÖVE closes its Lua state at exit, and LuaJIT's FFI then dlcloses the library it loaded).
 * Usage: unloading_app LIBRARY [SECONDS]: loads LIBRARY with dlopen, connects in each way of taking callbacks, asks
 * the service for its downloads and for a pack's status (an answer from Swift's task pool, whose threads outlive
 * the call; this app has no packs, so the answer is an error, which does not matter here), disconnects, dlcloses the
 * library, then lives on for SECONDS (default 1), longer than those threads wait before they end, and prints one
 * JSON object a line: {"case": NAME, "ok": BOOL[, "message": …]}.
 * CAppAPITests runs it as the launched app. Not linked with the library: it must be the only holder of it. */
#include <ba/app.h>
#include <ba/app_asset_packs.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void say(const char *name, bool ok, const char *message) {
    printf("{\"case\":\"%s\",\"ok\":%s", name, ok ? "true" : "false");
    if (message) {
        printf(",\"message\":\"");
        for (const unsigned char *c = (const unsigned char *)message; *c; c++)
            if (*c == '"' || *c == '\\') printf("\\%c", *c);
            else if (*c >= 0x20) putchar(*c);
        printf("\"");
    }
    printf("}\n");
    fflush(stdout);
}

static void count(void *context, const ba_download_t *download) { (void)download, ++*(int *)context; }

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: unloading_app LIBRARY [SECONDS]\n");
        return 2;
    }
    void *library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        say("dlopen", false, dlerror());
        return 1;
    }
    bool (*connect)(const ba_app_options_t *, ba_app_t **, ba_error_t *) = (bool (*)(
        const ba_app_options_t *, ba_app_t **, ba_error_t *))dlsym(library, "ba_app_connect");
    bool (*fetch)(ba_app_t *, ba_download_visitor_t, void *, ba_error_t *) = (bool (*)(
        ba_app_t *, ba_download_visitor_t, void *, ba_error_t *))dlsym(library, "ba_app_fetch_current_downloads");
    bool (*status)(ba_app_t *, const char *, int64_t *, ba_error_t *) = (bool (*)(
        ba_app_t *, const char *, int64_t *, ba_error_t *))dlsym(library, "ba_app_asset_pack_status");
    void (*disconnect)(ba_app_t *) = (void (*)(ba_app_t *))dlsym(library, "ba_app_disconnect");
    if (!connect || !fetch || !status || !disconnect) {
        say("dlsym", false, dlerror());
        return 1;
    }

    const int32_t modes[] = {BA_APP_CALLBACKS_ON_DISPATCH, BA_APP_CALLBACKS_ON_LIBRARY_THREAD};
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
        ba_error_t error = {.struct_size = sizeof error};
        ba_app_options_t options = {.struct_size = sizeof options, .callback_mode = modes[i]};
        ba_app_t *app = NULL;
        int downloads = 0;
        if (!connect(&options, &app, &error) || !fetch(app, count, &downloads, &error)) {
            say("use", false, error.message);
            return 1;
        }
        int64_t pack_status = 0;
        (void)status(app, "bonus", &pack_status, &error);
        disconnect(app);
    }
    say("use", true, NULL);

    say("dlclose", dlclose(library) == 0, NULL);
    // The library stays loaded: its language's runtime cannot be unloaded under the threads it started.
    say("still-loaded", dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD) != NULL, NULL);

    double seconds = argc > 2 ? atof(argv[2]) : 1;
    struct timespec pause = {.tv_sec = (time_t)seconds, .tv_nsec = (long)((seconds - (time_t)seconds) * 1e9)};
    nanosleep(&pause, NULL);
    say("lived-on", true, NULL);
    return 0;
}
