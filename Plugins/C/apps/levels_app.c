/* levels-app in C: the C twin of the Swift example app (Plugins/Swift/ExampleApp), written against ba/app.h the
 * way a game would: callbacks arrive on the app's own thread, from its own poll loop (ba_app_fd, ba_app_dispatch).
 * Same options, same output (one JSON object per line with --json), so that the tests run both.
 *
 *   cc -o levels-app-c levels_app.c $(pkg-config --cflags --libs backgroundassets)
 *   bahost launch com.example.levels -- ./levels-app-c --schedule level-3=https://…/level-3.pack@1000 --wait-for 1
 *
 * --callbacks thread runs the callbacks on the library's thread instead, and takes exclusive control with the
 * blocking call instead of the callback form. */
#define _GNU_SOURCE
#include <ba/app.h>

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GROUP "group.com.example.levels"
#define MAX_SPECS 64

typedef struct spec {
    char *identifier, *url;
    int64_t size;
} spec_t;

static struct {
    spec_t schedule[MAX_SPECS], foreground[MAX_SPECS];
    int schedule_count, foreground_count;
    const char *promote[MAX_SPECS], *cancel[MAX_SPECS];
    int promote_count, cancel_count;
    const char *delegate; /* full, progress-only, none */
    int wait_for;
    double timeout, stay, hold;
    const char *credential;
    const char *in_finished;
    bool exclusive_control;
    int64_t exclusive_timeout_ms;
    bool list, json, library_thread, answer_later, playing;
    bool then_cancel, then_promote; /* with the very ba_download_t each --schedule was scheduled with */
} options = {.delegate = "full", .timeout = 60};

static ba_app_t *app;
static atomic_int received;
static atomic_bool exclusive_done;

/* ---- output: one event a line, JSON or text ---- */

static void put_json_string(FILE *out, const char *text) {
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\') fprintf(out, "\\%c", *c);
        else if (*c < 0x20) fprintf(out, "\\u%04x", *c);
        else fputc(*c, out);
    }
    fputc('"', out);
}

/* event("name", text_too, "key", 's', "value", "key", 'i', (int64_t)1, "key", 'b', true, NULL) */
static void event(const char *name, bool text, ...) {
    if (!options.json && !text) return;
    va_list fields;
    va_start(fields, text);
    flockfile(stdout);
    if (options.json) printf("{\"event\":"), put_json_string(stdout, name);
    else printf("%s", name);
    for (const char *key; (key = va_arg(fields, const char *));) {
        int kind = va_arg(fields, int);
        if (options.json) printf(","), put_json_string(stdout, key), printf(":");
        else printf(" %s=", key);
        if (kind == 's') {
            const char *value = va_arg(fields, const char *);
            if (options.json) put_json_string(stdout, value);
            else printf("%s", value);
        } else if (kind == 'i') {
            printf("%lld", (long long)va_arg(fields, int64_t));
        } else {
            printf("%s", va_arg(fields, int) ? "true" : "false");
        }
    }
    printf(options.json ? "}\n" : "\n");
    fflush(stdout);
    funlockfile(stdout);
    va_end(fields);
}

static const char *describe(const ba_error_t *error) {
    static __thread char text[700];
    snprintf(text, sizeof text, "%s %lld: %s", error->domain, (long long)error->code, error->message);
    return text;
}

/* ---- the delegate ---- */

static void did_begin(void *context, const ba_download_t *download) {
    (void)context;
    event("began", true, "identifier", 's', download->identifier, NULL);
}

static void did_pause(void *context, const ba_download_t *download) {
    (void)context;
    event("paused", true, "identifier", 's', download->identifier, NULL);
}

static void did_write(void *context, const ba_download_t *download, int64_t written, int64_t total, int64_t expected) {
    (void)context, (void)written;
    event("progress", false, "identifier", 's', download->identifier, "written", 'i', total, "expected", 'i', expected,
          NULL);
}

/* --answer-challenge-later: the answer comes from a thread of the app's, after the callback returned. */
typedef struct late_answer {
    const ba_challenge_reply_t *reply;
    int32_t disposition;
    char user[256], password[256];
} late_answer_t;

static void *answer_later(void *argument) {
    late_answer_t *answer = argument;
    usleep(300000);
    answer->reply->complete(answer->reply, answer->disposition, answer->user, answer->password);
    free(answer);
    return NULL;
}

static void complete(const ba_challenge_reply_t *reply, int32_t disposition, const char *user, const char *password) {
    if (!options.answer_later) {
        reply->complete(reply, disposition, user, password);
        return;
    }
    late_answer_t *answer = calloc(1, sizeof *answer);
    *answer = (late_answer_t){.reply = reply, .disposition = disposition};
    snprintf(answer->user, sizeof answer->user, "%s", user ? user : "");
    snprintf(answer->password, sizeof answer->password, "%s", password ? password : "");
    pthread_t thread;
    pthread_create(&thread, NULL, answer_later, answer);
    pthread_detach(thread);
}

static void did_receive_challenge(void *context, const ba_download_t *download, const ba_auth_challenge_t *challenge,
                                  const ba_challenge_reply_t *reply) {
    (void)context;
    event("challenge", true, "identifier", 's', download->identifier, "host", 's', challenge->host, "realm", 's',
          challenge->realm ? challenge->realm : "", "previousFailureCount", 'i',
          (int64_t)challenge->previous_failure_count, NULL);
    const char *colon = options.credential ? strchr(options.credential, ':') : NULL;
    if (!colon || challenge->previous_failure_count > 0) {
        complete(reply, BA_CHALLENGE_CANCEL, NULL, NULL);
        return;
    }
    char user[256];
    snprintf(user, sizeof user, "%.*s", (int)(colon - options.credential), options.credential);
    complete(reply, BA_CHALLENGE_USE_CREDENTIAL, user, colon + 1);
}

static void download_failed(void *context, const ba_download_t *download, const ba_error_t *error) {
    (void)context;
    event("failed", true, "identifier", 's', download->identifier, "error", 's', describe(error), NULL);
    atomic_fetch_add(&received, 1);
}

/* Moves the file into the app group's container before returning, or the system deletes it. */
static void download_finished(void *context, const ba_download_t *download, const char *file_path) {
    (void)context;
    event("finishing", false, "identifier", 's', download->identifier, NULL);
    const char *misbehaviour = options.in_finished ? options.in_finished : "";
    if (strncmp(misbehaviour, "sleep=", 6) == 0) usleep((useconds_t)(atof(misbehaviour + 6) * 1e6));
    if (strcmp(misbehaviour, "exit") == 0) _exit(3);
    char container[4096], destination[4096 + 300];
    ba_error_t error = {.struct_size = sizeof error};
    if (!ba_app_container_path(app, GROUP, container, sizeof container, NULL, &error)) {
        event("finished", true, "identifier", 's', download->identifier, "error", 's', describe(&error), NULL);
    } else {
        snprintf(destination, sizeof destination, "%s/Assets", container);
        mkdir(destination, 0755);
        snprintf(destination, sizeof destination, "%s/Assets/%s", container, download->identifier);
        if (rename(file_path, destination) == 0)
            event("finished", true, "identifier", 's', download->identifier, "path", 's', destination, NULL);
        else
            event("finished", true, "identifier", 's', download->identifier, "error", 's', strerror(errno), NULL);
    }
    if (strncmp(misbehaviour, "kill=", 5) == 0) kill((pid_t)atoi(misbehaviour + 5), SIGKILL);
    atomic_fetch_add(&received, 1);
}

/* ---- acting ---- */

static ba_download_t describe_spec(const spec_t *spec) {
    return (ba_download_t){
        .struct_size = sizeof(ba_download_t),
        .kind = BA_DOWNLOAD_KIND_URL,
        .identifier = spec->identifier,
        .url = spec->url,
        .application_group_identifier = GROUP,
        .file_size = spec->size,
        .priority = BA_DOWNLOAD_PRIORITY_DEFAULT,
    };
}

static void report(const char *action, const char *identifier, bool ok, const ba_error_t *error) {
    if (ok) event(action, true, "identifier", 's', identifier, "ok", 'b', 1, NULL);
    else event(action, true, "identifier", 's', identifier, "ok", 'b', 0, "error", 's', describe(error), NULL);
}

/* fetchCurrentDownloads, looking for one identifier: the visitor acts on the match while it is borrowed. */
typedef struct found {
    const char *identifier;
    bool (*act)(ba_app_t *, const ba_download_t *, ba_error_t *);
    bool matched, ok;
    ba_error_t error;
} found_t;

static void act_on_match(void *context, const ba_download_t *download) {
    found_t *found = context;
    if (found->matched || strcmp(download->identifier, found->identifier) != 0) return;
    found->matched = true;
    found->ok = found->act(app, download, &found->error);
}

static void act_on_current(const char *action, const char *identifier,
                           bool (*act)(ba_app_t *, const ba_download_t *, ba_error_t *), bool must_exist) {
    found_t found = {.identifier = identifier, .act = act, .error = {.struct_size = sizeof(ba_error_t)}};
    if (!ba_app_fetch_current_downloads(app, act_on_match, &found, &found.error)) {
        report(action, identifier, false, &found.error);
    } else if (found.matched) {
        report(action, identifier, found.ok, &found.error);
    } else if (must_exist) {
        ba_error_t error = {.code = BA_ERROR_DOWNLOAD_NOT_SCHEDULED, .domain = BA_ERROR_DOMAIN};
        snprintf(error.message, sizeof error.message, "%s is not scheduled", identifier);
        report(action, identifier, false, &error);
    } else {
        /* A download that is not scheduled any more is cancelled by a fresh one: the service says 101. */
        spec_t spec = {(char *)identifier, "https://localhost/", 1};
        ba_download_t fresh = describe_spec(&spec);
        ba_error_t error = {.struct_size = sizeof error};
        report(action, identifier, act(app, &fresh, &error), &error);
    }
}

static int compare_strings(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* fetchCurrentDownloads as one copy (ba_app_copy_current_downloads), sorted by identifier. */
static void print_current(void) {
    ba_download_list_t *list = NULL;
    ba_error_t error = {.struct_size = sizeof error};
    if (!ba_app_copy_current_downloads(app, &list, &error)) {
        event("currentDownloads", true, "error", 's', describe(&error), NULL);
        return;
    }
    const char **identifiers = calloc(list->count + 1, sizeof *identifiers);
    for (size_t i = 0; i < list->count; i++) identifiers[i] = BA_DOWNLOAD_AT(list, i)->identifier;
    qsort(identifiers, list->count, sizeof *identifiers, compare_strings);
    flockfile(stdout);
    if (options.json) {
        printf("{\"event\":\"currentDownloads\",\"identifiers\":[");
        for (size_t i = 0; i < list->count; i++) printf(i ? "," : ""), put_json_string(stdout, identifiers[i]);
        printf("]}\n");
    } else {
        printf("currentDownloads identifiers=");
        for (size_t i = 0; i < list->count; i++) printf("%s%s", i ? "," : "", identifiers[i]);
        printf("\n");
    }
    fflush(stdout);
    funlockfile(stdout);
    free(identifiers);
    ba_app_free(list);
}

static void exclusive_handler(void *context, const ba_error_t *error) {
    (void)context;
    if (error) {
        event("exclusiveControl", true, "acquired", 'b', 0, "error", 's', describe(error), NULL);
    } else {
        event("exclusiveControl", true, "acquired", 'b', 1, NULL);
        usleep((useconds_t)(options.hold * 1e6));
    }
    atomic_store(&exclusive_done, true);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The app's own loop: waits on ba_app_fd and runs the callbacks on this thread, until `done` or `deadline`. */
static bool run_loop(double deadline, bool (*done)(void)) {
    while (!(done && done())) {
        double left = deadline - now();
        if (left <= 0) return false;
        if (options.library_thread) {
            usleep(left < 0.02 ? (useconds_t)(left * 1e6) : 20000);
            continue;
        }
        struct pollfd descriptor = {.fd = ba_app_fd(app), .events = POLLIN};
        int timeout_ms = left > 0.1 ? 100 : (int)(left * 1000) + 1;
        if (poll(&descriptor, 1, timeout_ms) > 0) ba_app_dispatch(app);
    }
    return true;
}

static bool exclusive_finished(void) { return atomic_load(&exclusive_done); }
static bool enough_received(void) { return atomic_load(&received) >= options.wait_for; }

/* ---- options ---- */

static bool parse_spec(const char *argument, spec_t *spec) {
    const char *equals = strchr(argument, '='), *at = strrchr(argument, '@');
    if (!equals || !at || at < equals) return false;
    spec->identifier = strndup(argument, (size_t)(equals - argument));
    spec->url = strndup(equals + 1, (size_t)(at - equals - 1));
    char *end;
    spec->size = strtoll(at + 1, &end, 10);
    return *end == 0;
}

static void usage(FILE *out) {
    fprintf(out,
            "usage: levels-app-c [options]\n"
            "The example app in C: sets a delegate, schedules and promotes downloads, prints callbacks.\n"
            "  --schedule ID=URL@SIZE      schedule a download in the background\n"
            "  --foreground ID=URL@SIZE    start a download in the foreground now\n"
            "  --promote ID                promote a scheduled download to the foreground\n"
            "  --cancel ID                 cancel a scheduled download\n"
            "  --then-cancel               cancel each download scheduled here, with the struct it was scheduled with\n"
            "  --then-promote              promote each download scheduled here, with the struct it was scheduled with\n"
            "  --delegate KIND             full, progress-only (no completion functions) or none\n"
            "  --wait-for N                exit after N completions reached the delegate\n"
            "  --timeout SECONDS           how long to wait for them (60)\n"
            "  --stay SECONDS              keep running after acting, with the delegate set\n"
            "  --credential USER:PASSWORD  answer a server's challenge with these\n"
            "  --in-finished MISBEHAVIOUR  sleep=SECONDS, exit, or kill=PID, in the finished callback\n"
            "  --exclusive-control MS      take exclusive control first (-1: as long as needed)\n"
            "  --hold SECONDS              hold it this long\n"
            "  --list                      print the current downloads after acting\n"
            "  --playing                   say a game of the app is being played (ba_app_set_playing) first\n"
            "  --callbacks MODE            dispatch (the app's poll loop, the default) or thread (the library's)\n"
            "  --answer-challenge-later    answer a challenge from a thread of the app's, after the callback\n"
            "  --json                      one JSON object per line\n");
}

static void parse(int argc, char **argv) {
    enum { SCHEDULE = 256, FOREGROUND, PROMOTE, CANCEL, DELEGATE, WAIT_FOR, TIMEOUT, STAY, CREDENTIAL, IN_FINISHED,
           EXCLUSIVE, HOLD, LIST, JSON, CALLBACKS, ANSWER_LATER, THEN_CANCEL, THEN_PROMOTE, PLAYING, HELP };
    static const struct option long_options[] = {
        {"schedule", required_argument, 0, SCHEDULE}, {"foreground", required_argument, 0, FOREGROUND},
        {"promote", required_argument, 0, PROMOTE}, {"cancel", required_argument, 0, CANCEL},
        {"delegate", required_argument, 0, DELEGATE}, {"wait-for", required_argument, 0, WAIT_FOR},
        {"timeout", required_argument, 0, TIMEOUT}, {"stay", required_argument, 0, STAY},
        {"credential", required_argument, 0, CREDENTIAL}, {"in-finished", required_argument, 0, IN_FINISHED},
        {"exclusive-control", required_argument, 0, EXCLUSIVE}, {"hold", required_argument, 0, HOLD},
        {"list", no_argument, 0, LIST}, {"json", no_argument, 0, JSON}, {"callbacks", required_argument, 0, CALLBACKS},
        {"answer-challenge-later", no_argument, 0, ANSWER_LATER},
        {"then-cancel", no_argument, 0, THEN_CANCEL}, {"then-promote", no_argument, 0, THEN_PROMOTE},
        {"playing", no_argument, 0, PLAYING},
        {"help", no_argument, 0, HELP}, {0, 0, 0, 0}};
    for (int option; (option = getopt_long(argc, argv, "h", long_options, NULL)) != -1;) {
        bool ok = true;
        switch (option) {
        case SCHEDULE:
            ok = options.schedule_count < MAX_SPECS && parse_spec(optarg, &options.schedule[options.schedule_count++]);
            break;
        case FOREGROUND:
            ok = options.foreground_count < MAX_SPECS
                 && parse_spec(optarg, &options.foreground[options.foreground_count++]);
            break;
        case PROMOTE: ok = options.promote_count < MAX_SPECS; if (ok) options.promote[options.promote_count++] = optarg; break;
        case CANCEL: ok = options.cancel_count < MAX_SPECS; if (ok) options.cancel[options.cancel_count++] = optarg; break;
        case DELEGATE:
            options.delegate = optarg;
            ok = !strcmp(optarg, "full") || !strcmp(optarg, "progress-only") || !strcmp(optarg, "none");
            break;
        case WAIT_FOR: options.wait_for = atoi(optarg); break;
        case TIMEOUT: options.timeout = atof(optarg); break;
        case STAY: options.stay = atof(optarg); break;
        case CREDENTIAL: options.credential = optarg; break;
        case IN_FINISHED: options.in_finished = optarg; break;
        case EXCLUSIVE: options.exclusive_control = true; options.exclusive_timeout_ms = atoll(optarg); break;
        case HOLD: options.hold = atof(optarg); break;
        case LIST: options.list = true; break;
        case JSON: options.json = true; break;
        case ANSWER_LATER: options.answer_later = true; break;
        case THEN_CANCEL: options.then_cancel = true; break;
        case THEN_PROMOTE: options.then_promote = true; break;
        case PLAYING: options.playing = true; break;
        case CALLBACKS:
            ok = !strcmp(optarg, "thread") || !strcmp(optarg, "dispatch");
            options.library_thread = !strcmp(optarg, "thread");
            break;
        case 'h': case HELP: usage(stdout); exit(0);
        default: ok = false;
        }
        if (!ok) {
            fprintf(stderr, "levels-app-c: invalid option or value%s%s\n", optarg ? ": " : "", optarg ? optarg : "");
            usage(stderr);
            exit(64);
        }
    }
}

int main(int argc, char **argv) {
    parse(argc, argv);
    ba_app_options_t settings = {
        .struct_size = sizeof settings,
        .callback_mode = options.library_thread ? BA_APP_CALLBACKS_ON_LIBRARY_THREAD : BA_APP_CALLBACKS_ON_DISPATCH,
    };
    ba_error_t error = {.struct_size = sizeof error};
    if (!ba_app_connect(&settings, &app, &error)) {
        /* Refused (55: not launched as this app) or no service (56): each action the app meant to take fails so. */
        event("connect", true, "ok", 'b', 0, "error", 's', describe(&error), NULL);
        for (int i = 0; i < options.schedule_count; i++) report("schedule", options.schedule[i].identifier, false, &error);
        for (int i = 0; i < options.foreground_count; i++)
            report("startForeground", options.foreground[i].identifier, false, &error);
        for (int i = 0; i < options.promote_count; i++) report("promote", options.promote[i], false, &error);
        for (int i = 0; i < options.cancel_count; i++) report("cancel", options.cancel[i], false, &error);
        if (options.list) event("currentDownloads", true, "error", 's', describe(&error), NULL);
        return 2;
    }
    bool full = !strcmp(options.delegate, "full");
    ba_app_delegate_t delegate = {
        .struct_size = sizeof delegate,
        .download_did_begin = did_begin,
        .download_did_pause = full ? did_pause : NULL,
        .download_did_write = full ? did_write : NULL,
        .download_did_receive_challenge = full ? did_receive_challenge : NULL,
        .download_failed = full ? download_failed : NULL,
        .download_finished = full ? download_finished : NULL,
    };
    if (strcmp(options.delegate, "none") != 0 && !ba_app_set_delegate(app, &delegate, &error)) {
        event("delegate", true, "ok", 'b', 0, "error", 's', describe(&error), NULL);
        return 2;
    }

    if (options.exclusive_control) {
        if (options.library_thread) {
            /* The blocking form, with a deadline. */
            if (ba_app_acquire_exclusive_control(app, options.exclusive_timeout_ms, &error)) {
                event("exclusiveControl", true, "acquired", 'b', 1, NULL);
                usleep((useconds_t)(options.hold * 1e6));
                ba_app_release_exclusive_control(app);
            } else {
                event("exclusiveControl", true, "acquired", 'b', 0, "error", 's', describe(&error), NULL);
            }
        } else if (ba_app_with_exclusive_control(app, options.exclusive_timeout_ms, exclusive_handler, NULL, &error)) {
            /* The callback form: the handler runs from the loop, holding the lock. */
            run_loop(now() + 1e9, exclusive_finished);
        }
    }

    if (options.playing) {
        if (ba_app_set_playing(app, true, &error)) event("playing", true, "ok", 'b', 1, NULL);
        else event("playing", true, "ok", 'b', 0, "error", 's', describe(&error), NULL);
    }

    ba_download_t scheduled[MAX_SPECS];
    for (int i = 0; i < options.schedule_count; i++) {
        scheduled[i] = describe_spec(&options.schedule[i]);
        report("schedule", scheduled[i].identifier, ba_app_schedule_download(app, &scheduled[i], &error), &error);
    }
    /* What a game does: the struct it filled (unique_identifier NULL) names the download it scheduled. */
    for (int i = 0; i < options.schedule_count; i++) {
        if (options.then_promote)
            report("promote", scheduled[i].identifier, ba_app_start_foreground_download(app, &scheduled[i], &error),
                   &error);
        if (options.then_cancel)
            report("cancel", scheduled[i].identifier, ba_app_cancel_download(app, &scheduled[i], &error), &error);
    }
    for (int i = 0; i < options.foreground_count; i++) {
        ba_download_t download = describe_spec(&options.foreground[i]);
        report("startForeground", download.identifier, ba_app_start_foreground_download(app, &download, &error),
               &error);
    }
    for (int i = 0; i < options.promote_count; i++)
        act_on_current("promote", options.promote[i], ba_app_start_foreground_download, true);
    for (int i = 0; i < options.cancel_count; i++)
        act_on_current("cancel", options.cancel[i], ba_app_cancel_download, false);
    if (options.list) print_current();

    if (options.stay > 0) run_loop(now() + options.stay, NULL);
    if (options.wait_for > 0 && !run_loop(now() + options.timeout, enough_received)) {
        event("timeout", true, "received", 'i', (int64_t)atomic_load(&received), NULL);
        ba_app_disconnect(app);
        return 1;
    }
    ba_app_disconnect(app);
    return 0;
}
