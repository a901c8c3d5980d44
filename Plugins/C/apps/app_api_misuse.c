/* Misuses ba/app.h the ways a careless app does and prints what each call answered, one JSON object a line:
 * {"case": NAME, "ok": BOOL, "domain": …, "code": …, "message": …}. The tests (CAppAPITests) run it as the
 * launched app and hold every answer to Apple's domain and code and a message that says what was wrong. */
#include <ba/app.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

static void put_string(const char *text) {
    putchar('"');
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\') printf("\\%c", *c);
        else if (*c < 0x20) printf("\\u%04x", *c);
        else putchar(*c);
    }
    putchar('"');
}

static void answer(const char *name, bool ok, const ba_error_t *error) {
    printf("{\"case\":\"%s\",\"ok\":%s", name, ok ? "true" : "false");
    if (!ok) {
        printf(",\"domain\":"), put_string(error->domain);
        printf(",\"code\":%lld,\"message\":", (long long)error->code), put_string(error->message);
    }
    printf("}\n");
    fflush(stdout);
}

static void number(const char *name, long long value) {
    printf("{\"case\":\"%s\",\"value\":%lld}\n", name, value);
    fflush(stdout);
}

static void ignore(void *context, const ba_download_t *download) { (void)context, (void)download; }

int main(void) {
    ba_error_t error = {.struct_size = sizeof error};
    ba_app_t *app = NULL;

    ba_app_options_t small = {.struct_size = 4};
    answer("options-struct-size", ba_app_connect(&small, &app, &error), &error);
    ba_app_options_t mode = {.struct_size = sizeof mode, .callback_mode = 7};
    answer("unknown-callback-mode", ba_app_connect(&mode, &app, &error), &error);

    ba_app_options_t options = {.struct_size = sizeof options, .callback_mode = BA_APP_CALLBACKS_ON_LIBRARY_THREAD};
    answer("connect", ba_app_connect(&options, &app, &error), &error);
    ba_app_t *second = NULL;
    answer("second-connect", ba_app_connect(&options, &second, &error), &error);
    number("fd-in-library-thread-mode", ba_app_fd(app));
    number("dispatch-in-library-thread-mode", ba_app_dispatch(app));

    ba_download_t download = {.struct_size = 8, .identifier = "x", .url = "https://localhost/x"};
    answer("download-struct-size", ba_app_schedule_download(app, &download, &error), &error);
    answer("null-download", ba_app_schedule_download(app, NULL, &error), &error);
    ba_download_t no_url = {.struct_size = sizeof no_url, .kind = BA_DOWNLOAD_KIND_URL, .identifier = "x",
                            .application_group_identifier = "group.com.example.levels", .file_size = 1};
    answer("download-without-url", ba_app_schedule_download(app, &no_url, &error), &error);
    ba_download_t wrong_group = {.struct_size = sizeof wrong_group, .identifier = "x", .url = "https://localhost/x",
                                 .application_group_identifier = "group.com.example.other", .file_size = 1};
    answer("another-apps-group", ba_app_schedule_download(app, &wrong_group, &error), &error);
    ba_download_t unscheduled = {.struct_size = sizeof unscheduled, .identifier = "never-scheduled",
                                 .url = "https://localhost/x", .application_group_identifier = "group.com.example.levels",
                                 .file_size = 1};
    answer("cancel-unscheduled", ba_app_cancel_download(app, &unscheduled, &error), &error);

    ba_app_delegate_t delegate = {.struct_size = 0};
    answer("delegate-struct-size", ba_app_set_delegate(app, &delegate, &error), &error);
    answer("fetch-without-visitor", ba_app_fetch_current_downloads(app, NULL, NULL, &error), &error);
    answer("copy-without-list", ba_app_copy_current_downloads(app, NULL, &error), &error);
    answer("exclusive-control-without-handler", ba_app_with_exclusive_control(app, 0, NULL, NULL, &error), &error);

    char tiny[4];
    size_t length = 0;
    answer("container-small-buffer",
           ba_app_container_path(app, "group.com.example.levels", tiny, sizeof tiny, &length, &error), &error);
    number("container-length", (long long)length);
    char path[4096];
    answer("container", ba_app_container_path(app, "group.com.example.levels", path, sizeof path, NULL, &error),
           &error);
    answer("container-other-group",
           ba_app_container_path(app, "group.com.example.other", path, sizeof path, NULL, &error), &error);

    /* An error struct of the 1.0 layout's first 24 bytes: nothing past them is written. */
    struct {
        ba_error_t error;
        char canary[8];
    } cut = {.error = {.struct_size = 24}, .canary = "canary!"};
    bool ok = ba_app_schedule_download(app, NULL, &cut.error);
    number("short-error-written", (long long)cut.error.struct_size);
    number("short-error-code", (long long)cut.error.code);
    number("short-error-canary-intact", !ok && memcmp(cut.canary, "canary!", 8) == 0
                                            && memchr(cut.error.domain, 0, 8) != NULL ? 1 : 0);

    ba_app_disconnect(app);
    answer("after-disconnect", ba_app_schedule_download(app, &unscheduled, &error), &error);
    answer("fetch-after-disconnect", ba_app_fetch_current_downloads(app, ignore, NULL, &error), &error);
    answer("playing-after-disconnect", ba_app_set_playing(app, true, &error), &error);
    ba_download_list_t *list = (ba_download_list_t *)&error; /* not NULL: the call must clear it */
    answer("copy-after-disconnect", ba_app_copy_current_downloads(app, &list, &error), &error);
    number("copy-after-disconnect-list-cleared", list == NULL);
    ba_app_free(NULL); /* nothing happens */
    number("dispatch-after-disconnect", ba_app_dispatch(app));
    ba_app_disconnect(app); /* twice: nothing happens */
    answer("reconnect", ba_app_connect(&options, &app, &error), &error);
    ba_app_disconnect(app);
    ba_version_t version = ba_app_library_version();
    number("library-major", version.major);
    number("library-minor", version.minor);
    return 0;
}
