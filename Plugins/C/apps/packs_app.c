/* packs-app in C: the C twin of the Swift managed example app (Plugins/Swift/ManagedApp), written against
 * ba/app_asset_packs.h. Each option is one call, in the Swift app's order; what each got is printed as one JSON
 * object a line, as the Swift app prints it, so that the tests run both. Callbacks (status updates, an ensure's end)
 * come from the app's own poll loop.
 *
 *   cc -o packs-app-c packs_app.c $(pkg-config --cflags --libs backgroundassets)
 *   bahost launch com.example.game -- ./packs-app-c --list --ensure bonus --read bonus/readme.txt */
#define _GNU_SOURCE
#include <ba/app_asset_packs.h>

#include <dirent.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX 32

static ba_app_t *app;

static void put_string(const char *text) {
    putchar('"');
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\') printf("\\%c", *c);
        else if (*c < 0x20) printf("\\u%04x", *c);
        else putchar(*c);
    }
    putchar('"');
}

/* Apple's managed errors by case, as the Swift app prints them; others by domain and code. */
static void put_error(const ba_error_t *error, const char *subject) {
    char text[700];
    if (strcmp(error->domain, BA_MANAGED_ERROR_DOMAIN) == 0 && error->code == BA_MANAGED_ERROR_ASSET_PACK_NOT_FOUND)
        snprintf(text, sizeof text, "assetPackNotFound(%s)", subject);
    else if (strcmp(error->domain, BA_MANAGED_ERROR_DOMAIN) == 0 && error->code == BA_MANAGED_ERROR_FILE_NOT_FOUND)
        snprintf(text, sizeof text, "fileNotFound(%s)", subject);
    else
        snprintf(text, sizeof text, "%s %lld", error->domain, (long long)error->code);
    put_string(text);
}

/* ---- the loop: callbacks run here ---- */

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void run_until(bool (*done)(void), double seconds) {
    double deadline = now() + seconds;
    while (!done() && now() < deadline) {
        struct pollfd descriptor = {.fd = ba_app_fd(app), .events = POLLIN};
        if (poll(&descriptor, 1, 50) > 0) ba_app_dispatch(app);
    }
}

/* ---- one pack's updates, as the Swift app's watcher collects them ---- */

static struct {
    const char *id;
    const char *seen[256];
    int count;
    bool last, cancel_at_first_progress, ensured;
    ba_error_t error;
    bool failed;
} watch;

static void observe(void *context, const ba_asset_pack_update_t *update) {
    (void)context;
    if (!watch.id || strcmp(update->pack->id, watch.id) != 0 || watch.last || watch.count >= 256) return;
    static const char *names[] = {"began", "paused", "downloading", "finished", "failed"};
    const char *name = names[update->kind];
    if (update->kind == BA_ASSET_PACK_UPDATE_DOWNLOADING) {
        if (watch.count && strcmp(watch.seen[watch.count - 1], "downloading") == 0) return;
        if (watch.cancel_at_first_progress) ba_app_cancel_asset_pack_download(app, watch.id, NULL);
    }
    watch.seen[watch.count++] = name;
    watch.last = update->kind == BA_ASSET_PACK_UPDATE_FINISHED || update->kind == BA_ASSET_PACK_UPDATE_FAILED;
}

static void ensured(void *context, const char *id, const ba_error_t *error) {
    (void)context, (void)id;
    watch.ensured = true;
    watch.failed = error != NULL;
    if (error) watch.error = *error;
}

static bool ensure_returned(void) { return watch.ensured; }
static bool sequence_finished(void) { return watch.last; }

/* Ensures the pack while watching it; returns whether it failed. */
static void ensure(const char *id, bool cancel) {
    watch.id = id, watch.count = 0, watch.last = false, watch.ensured = false, watch.failed = false;
    watch.cancel_at_first_progress = cancel;
    ba_error_t error = {.struct_size = sizeof error};
    if (!ba_app_ensure_asset_pack(app, id, false, ensured, NULL, &error)) {
        watch.ensured = true, watch.failed = true, watch.error = error;
    }
    run_until(ensure_returned, 600);
    if (!(watch.failed && !cancel && watch.count == 0)) run_until(sequence_finished, 10);
}

static void put_updates(void) {
    printf(",\"updates\":[");
    for (int i = 0; i < watch.count; i++) printf(i ? "," : ""), put_string(watch.seen[i]);
    if (!watch.last && watch.count == 0 && !watch.failed) printf("\"timed out\"");
    printf("]");
}

/* ---- the calls ---- */

static void print_pack(void *context, const ba_asset_pack_t *pack) {
    int *index = context;
    printf(*index ? "," : ""), (*index)++;
    printf("{\"downloadSize\":%lld,\"id\":", (long long)pack->download_size), put_string(pack->id);
    printf(",\"language\":\"\",\"version\":%lld}", (long long)pack->version);
}

static void describe_status(int64_t status, char *text, size_t size) {
    static const char *names[] = {"downloadAvailable", "updateAvailable", "upToDate", "outOfDate", "obsolete",
                                  "downloading", "downloaded"};
    size_t used = (size_t)snprintf(text, size, "[");
    bool first = true;
    for (int bit = 0; bit < 7; bit++) {
        if (!(status & (1 << bit))) continue;
        used += (size_t)snprintf(text + used, size - used, "%s%s", first ? "" : ", ", names[bit]);
        first = false;
    }
    snprintf(text + used, size - used, "]");
}

static void read_file(const char *spec) {
    char *copy = strdup(spec), *colon = strchr(copy, ':'), *pack = NULL, *path = copy;
    if (colon) *colon = 0, pack = copy, path = colon + 1;
    void *data = NULL;
    size_t size = 0;
    ba_error_t error = {.struct_size = sizeof error};
    printf("{\"read\":"), put_string(spec);
    if (ba_app_asset_pack_contents(app, path, pack, &data, &size, &error)) {
        char *text = strndup(data, size);
        printf(",\"text\":"), put_string(text);
        free(text);
        ba_app_free(data);
    } else {
        printf(",\"error\":"), put_error(&error, path);
    }
    printf("}\n");
    free(copy);
}

/* The IDs checkForUpdates reported, as JSON arrays' insides. */
typedef struct id_lists {
    char updating[8192], removed[8192];
} id_lists_t;

static void append_id(char *list, size_t size, const char *id) {
    size_t used = strlen(list);
    snprintf(list + used, size - used, "%s\"%s\"", used ? "," : "", id);
}

static void add_updating(void *context, const char *id) {
    id_lists_t *lists = context;
    append_id(lists->updating, sizeof lists->updating, id);
}

static void add_removed(void *context, const char *id) {
    id_lists_t *lists = context;
    append_id(lists->removed, sizeof lists->removed, id);
}

/* A JSON array's insides, one language at a time. */
static void add_language(void *context, const char *language) {
    char *list = context;
    size_t used = strlen(list);
    snprintf(list + used, 4096 - used, "%s\"%s\"", used ? "," : "", language);
}

static void print_languages(void) {
    char primary[128], resolved[128], available[4096] = "", local[4096] = "";
    ba_error_t error = {.struct_size = sizeof error};
    if (!ba_app_asset_pack_language(app, BA_ASSET_PACK_LANGUAGE_PRIMARY, primary, sizeof primary, NULL, &error)
        || !ba_app_asset_pack_language(app, BA_ASSET_PACK_LANGUAGE_RESOLVED, resolved, sizeof resolved, NULL, &error)
        || !ba_app_asset_pack_languages(app, BA_ASSET_PACK_LANGUAGES_AVAILABLE, add_language, available, &error)
        || !ba_app_asset_pack_languages(app, BA_ASSET_PACK_LANGUAGES_LOCAL, add_language, local, &error)) {
        printf("{\"languages\":false,\"error\":"), put_error(&error, ""), printf("}\n");
        return;
    }
    /* The resolved language and resolvedLanguageID are one value here: the service's. */
    printf("{\"availableLanguages\":[%s],\"locallyAvailableLanguages\":[%s],\"primaryLanguage\":", available, local);
    put_string(primary), printf(",\"resolvedLanguage\":"), put_string(resolved);
    printf(",\"resolvedLanguageID\":"), put_string(resolved), printf("}\n");
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
    const char *status[MAX], *reads[MAX], *ensures[MAX], *cancels[MAX], *folders[MAX], *removes[MAX];
    const char *localized[MAX], *set_language = NULL;
    int n_status = 0, n_reads = 0, n_ensures = 0, n_cancels = 0, n_folders = 0, n_removes = 0, n_localized = 0;
    bool list = false, check = false, reconcile = false, languages = false;
    enum { LIST = 256, STATUS, READ, ENSURE, CANCEL, FOLDER, CHECK, REMOVE, SET_LANGUAGE, RECONCILE, LOCALIZED, LANGUAGES,
           HELP };
    static const struct option options[] = {
        {"list", no_argument, 0, LIST}, {"status", required_argument, 0, STATUS}, {"read", required_argument, 0, READ},
        {"ensure", required_argument, 0, ENSURE}, {"cancel", required_argument, 0, CANCEL},
        {"list-folder", required_argument, 0, FOLDER}, {"check-for-updates", no_argument, 0, CHECK},
        {"remove", required_argument, 0, REMOVE}, {"set-language", required_argument, 0, SET_LANGUAGE},
        {"reconcile", no_argument, 0, RECONCILE}, {"read-localized", required_argument, 0, LOCALIZED},
        {"languages", no_argument, 0, LANGUAGES},
        {"help", no_argument, 0, HELP}, {0, 0, 0, 0}};
    for (int option; (option = getopt_long(argc, argv, "", options, NULL)) != -1;) {
        switch (option) {
        case LIST: list = true; break;
        case STATUS: if (n_status < MAX) status[n_status++] = optarg; break;
        case READ: if (n_reads < MAX) reads[n_reads++] = optarg; break;
        case ENSURE: if (n_ensures < MAX) ensures[n_ensures++] = optarg; break;
        case CANCEL: if (n_cancels < MAX) cancels[n_cancels++] = optarg; break;
        case FOLDER: if (n_folders < MAX) folders[n_folders++] = optarg; break;
        case CHECK: check = true; break;
        case REMOVE: if (n_removes < MAX) removes[n_removes++] = optarg; break;
        case SET_LANGUAGE: set_language = optarg; break;
        case RECONCILE: reconcile = true; break;
        case LOCALIZED: if (n_localized < MAX) localized[n_localized++] = optarg; break;
        case LANGUAGES: languages = true; break;
        case HELP:
            printf("usage: packs-app-c [--list] [--status ID] [--read [PACK:]PATH] [--ensure ID] [--cancel ID]\n"
                   "                   [--list-folder PATH] [--check-for-updates] [--remove ID] [--set-language TAG|none]\n"
                   "                   [--reconcile] [--languages] [--read-localized LANGUAGE:PATH]\n"
                   "The managed example app in C: lists, reads, downloads, updates and removes asset packs.\n");
            return 0;
        default: return 64;
        }
    }
    ba_app_options_t settings = {.struct_size = sizeof settings, .callback_mode = BA_APP_CALLBACKS_ON_DISPATCH};
    ba_error_t error = {.struct_size = sizeof error};
    if (!ba_app_connect(&settings, &app, &error)) {
        printf("{\"connect\":false,\"error\":"), put_error(&error, ""), printf("}\n");
        return 2;
    }
    if (!ba_app_set_asset_pack_observer(app, observe, NULL, &error)) {
        printf("{\"observer\":false,\"error\":"), put_error(&error, ""), printf("}\n");
        return 2;
    }
    if (set_language) ba_app_set_asset_pack_language(app, strcmp(set_language, "none") ? set_language : NULL, NULL);
    if (reconcile) {
        bool ok = ba_app_reconcile_asset_pack_languages(app, &error);
        printf("{\"reconciled\":%s", ok ? "true" : "false");
        if (!ok) printf(",\"error\":"), put_error(&error, "");
        printf("}\n");
    }
    if (list) {
        int index = 0;
        printf("{\"packs\":[");
        if (!ba_app_asset_packs(app, print_pack, &index, &error)) return 1;
        printf("]}\n");
    }
    if (languages) print_languages();
    for (int i = 0; i < n_localized; i++) {
        char *copy = strdup(localized[i]), *colon = strchr(copy, ':');
        if (!colon) return 64;
        *colon = 0;
        void *data = NULL;
        size_t size = 0;
        printf("{\"readLocalized\":"), put_string(localized[i]);
        if (ba_app_asset_pack_localized_contents(app, colon + 1, copy, &data, &size, &error)) {
            char *text = strndup(data, size);
            printf(",\"text\":"), put_string(text);
            free(text), ba_app_free(data);
        } else {
            printf(",\"error\":"), put_error(&error, colon + 1);
        }
        printf("}\n");
        free(copy);
    }
    for (int i = 0; i < n_status; i++) {
        int64_t value = 0;
        if (!ba_app_asset_pack_status(app, status[i], &value, &error)) return 1;
        char text[200];
        describe_status(value, text, sizeof text);
        printf("{\"description\":"), put_string(text), printf(",\"raw\":%lld,\"status\":", (long long)value);
        put_string(status[i]), printf("}\n");
    }
    for (int i = 0; i < n_ensures; i++) {
        ensure(ensures[i], false);
        printf("{\"ensured\":"), put_string(ensures[i]);
        if (watch.failed) {
            printf(",\"error\":"), put_error(&watch.error, ensures[i]);
        } else {
            printf(",\"available\":%s", ba_app_asset_pack_is_available_locally(app, ensures[i]) ? "true" : "false");
            put_updates();
        }
        printf("}\n");
    }
    for (int i = 0; i < n_cancels; i++) {
        ensure(cancels[i], true);
        printf("{\"cancelled\":"), put_string(cancels[i]), printf(",\"error\":");
        if (watch.failed) put_error(&watch.error, cancels[i]);
        else put_string("none");
        put_updates();
        printf(",\"available\":%s}\n", ba_app_asset_pack_is_available_locally(app, cancels[i]) ? "true" : "false");
    }
    for (int i = 0; i < n_reads; i++) read_file(reads[i]);
    for (int i = 0; i < n_folders; i++) {
        char path[4096];
        if (!ba_app_asset_pack_path(app, folders[i], path, sizeof path, NULL, &error)) return 1;
        char *names[1024];
        int count = 0;
        DIR *folder = opendir(path);
        for (struct dirent *entry; folder && count < 1024 && (entry = readdir(folder));)
            if (strcmp(entry->d_name, ".") && strcmp(entry->d_name, "..")) names[count++] = strdup(entry->d_name);
        if (folder) closedir(folder);
        qsort(names, (size_t)count, sizeof *names, compare_names);
        printf("{\"folder\":"), put_string(folders[i]), printf(",\"names\":[");
        for (int j = 0; j < count; j++) printf(j ? "," : ""), put_string(names[j]), free(names[j]);
        printf("]}\n");
    }
    if (check) {
        static id_lists_t lists;
        if (!ba_app_check_for_asset_pack_updates(app, add_updating, add_removed, &lists, &error)) return 1;
        printf("{\"removed\":[%s],\"updating\":[%s]}\n", lists.removed, lists.updating);
    }
    for (int i = 0; i < n_removes; i++) {
        printf("{\"removed\":"), put_string(removes[i]);
        if (ba_app_remove_asset_pack(app, removes[i], &error))
            printf(",\"available\":%s", ba_app_asset_pack_is_available_locally(app, removes[i]) ? "true" : "false");
        else
            printf(",\"error\":"), put_error(&error, removes[i]);
        printf("}\n");
    }
    ba_app_disconnect(app);
    return 0;
}
