#include "runner.h"
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct queued {
    struct queued *next;
    uint8_t *packet;
    size_t length;
} queued_t;

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_changed = PTHREAD_COND_INITIALIZER;
static queued_t *head, *tail;
/* Events queued or running, and will_terminate while it runs: counted up by the control thread before it hands
 * them over, so that it never waits for ever while one may log. */
static atomic_int running;

bool extension_running(void) { return atomic_load(&running) > 0; }

void entry_thread_enqueue(uint8_t *packet, size_t length) {
    queued_t *q = malloc(sizeof *q);
    if (!q) runner_fail("out of memory for an event");
    *q = (queued_t){.packet = packet, .length = length};
    atomic_fetch_add(&running, 1);
    pthread_mutex_lock(&queue_lock);
    if (tail) tail->next = q;
    else head = q;
    tail = q;
    pthread_cond_signal(&queue_changed);
    pthread_mutex_unlock(&queue_lock);
}

static queued_t *dequeue(void) {
    pthread_mutex_lock(&queue_lock);
    while (!head) pthread_cond_wait(&queue_changed, &queue_lock);
    queued_t *q = head;
    head = q->next;
    if (!head) tail = NULL;
    pthread_mutex_unlock(&queue_lock);
    return q;
}

/* The downloads of one downloads_for_request call, gathered into DOWNLOAD packets of up to BA_WIRE_BATCH_BYTES. */
typedef struct sink_state {
    uint32_t event_id;
    ba_wire_writer_t packet;
    bool open;
} sink_state_t;

/* Sends the downloads gathered so far, if any. */
static void sink_flush(sink_state_t *state) {
    if (!state->open) return;
    channel_send(&state->packet);
    state->open = false;
}

static bool sink_add(const ba_download_sink_t *sink, const ba_download_t *download) {
    sink_state_t *state = sink->sink_data;
    const char *problem = ba_wire_download_problem(download);
    if (problem) {
        sink_flush(state);
        char message[200];
        snprintf(message, sizeof message, "downloads_for_request added a malformed download: %s", problem);
        channel_send_text(BA_WIRE_VIOLATION, message);
        return false;
    }
    if (state->open) {
        /* A download that would take the packet past the batch goes first in a packet of its own making, so that a
         * packet is never larger than its largest download plus a batch. */
        size_t before = state->packet.length;
        ba_wire_put_download(&state->packet, download);
        if (state->packet.length <= BA_WIRE_BATCH_BYTES) return true;
        state->packet.length = before;
        sink_flush(state);
    }
    ba_wire_writer_init(&state->packet, BA_WIRE_DOWNLOAD);
    ba_wire_put_u32(&state->packet, state->event_id);
    ba_wire_put_download(&state->packet, download);
    state->open = true;
    return true;
}

/* A challenge's reply, kept until the extension calls complete (and then on, as it may still hold the pointer: a
 * few bytes per challenge in a process that lives for one window). */
typedef struct challenge_reply {
    ba_challenge_reply_t reply;
    uint32_t event_id;
    atomic_bool completed;
} challenge_reply_t;

static void challenge_complete(const ba_challenge_reply_t *reply, int32_t disposition, const char *user,
                               const char *password) {
    challenge_reply_t *state = reply->reply_data;
    if (atomic_exchange(&state->completed, true)) return;
    bool credential = disposition == BA_CHALLENGE_USE_CREDENTIAL;
    if (credential && ((user && strlen(user) > BA_WIRE_MAX_CREDENTIAL) ||
                       (password && strlen(password) > BA_WIRE_MAX_CREDENTIAL))) {
        char message[160];
        snprintf(message, sizeof message, "a challenge's credential is longer than %u bytes", BA_WIRE_MAX_CREDENTIAL);
        channel_send_text(BA_WIRE_VIOLATION, message);
        return;
    }
    ba_wire_writer_t w;
    ba_wire_writer_init(&w, BA_WIRE_CHALLENGE_ANSWER);
    ba_wire_put_u32(&w, state->event_id);
    ba_wire_put_i32(&w, disposition);
    ba_wire_put_str(&w, credential ? user : NULL);
    ba_wire_put_str(&w, credential ? password : NULL);
    channel_send(&w);
}

/* Runs one EVENT packet's entry point. A packet the runner cannot read is the host's fault: say so and go on. */
static void dispatch(const ba_extension_t *ext, const uint8_t *packet, size_t length) {
    ba_wire_reader_t r;
    ba_wire_reader_init(&r, packet + 1, length - 1);
    uint32_t event_id = 0;
    uint8_t kind = 0;
    ba_wire_get_u32(&r, &event_id);
    ba_wire_get_u8(&r, &kind);
#define HAS(field) BA_STRUCT_HAS(ba_extension_t, ext->struct_size, field) && ext->field
    ba_download_t download;
    const char *headers[BA_WIRE_MAX_HEADERS];
    const char *text = NULL, *domain = NULL;
    size_t n;
    switch (kind) {
    case BA_WIRE_CONTENT_REQUEST: {
        int32_t request = 0;
        ba_app_extension_info_t info = {.struct_size = sizeof info};
        if (ba_wire_get_i32(&r, &request) && ba_wire_get_str(&r, &text, &n) &&
            ba_wire_get_i64(&r, &info.restricted_download_size_remaining) &&
            ba_wire_get_i64(&r, &info.restricted_essential_download_size_remaining) && HAS(downloads_for_request)) {
            sink_state_t state = {.event_id = event_id};
            ba_download_sink_t sink = {.struct_size = sizeof sink, .sink_data = &state, .add = sink_add};
            ext->downloads_for_request(ext, request, text, &info, &sink);
            sink_flush(&state); /* before EVENT_DONE: the host counts only downloads that came before it */
        }
        break;
    }
    /* A completion's ticket (the finished file, or the failure's own) goes once the entry point returned, before
     * EVENT_DONE: its absence is what tells a host killed in between that the completion was delivered. */
    case BA_WIRE_FAILED: {
        ba_error_t error = {.struct_size = sizeof error};
        const char *ticket = NULL;
        if (ba_wire_get_download(&r, &download, headers) && ba_wire_get_i64(&r, &error.code) &&
            ba_wire_get_str(&r, &domain, &n) && ba_wire_get_str(&r, &text, &n) && ba_wire_get_str(&r, &ticket, &n)) {
            snprintf(error.domain, sizeof error.domain, "%s", domain ? domain : "");
            snprintf(error.message, sizeof error.message, "%s", text ? text : "");
            if (HAS(download_failed)) ext->download_failed(ext, &download, &error);
            if (ticket) unlink(ticket);
        }
        break;
    }
    case BA_WIRE_FINISHED:
        if (ba_wire_get_download(&r, &download, headers) && ba_wire_get_str(&r, &text, &n)) {
            if (HAS(download_finished)) ext->download_finished(ext, &download, text);
            if (text && unlink(text) == 0) {
                ba_wire_writer_t w;
                ba_wire_writer_init(&w, BA_WIRE_FILE_LEFT);
                ba_wire_put_u32(&w, event_id);
                channel_send(&w);
            }
        }
        break;
    case BA_WIRE_SHOULD_DOWNLOAD: {
        ba_asset_pack_t pack = {.struct_size = sizeof pack};
        const char *id = NULL, *user_info = NULL;
        size_t user_info_length = 0;
        if (ba_wire_get_str(&r, &id, &n) && ba_wire_get_i64(&r, &pack.version) &&
            ba_wire_get_i64(&r, &pack.download_size) && ba_wire_get_str(&r, &user_info, &user_info_length)) {
            pack.id = id;
            pack.user_info_json = user_info_length > 0 ? user_info : NULL;
            /* Apple's default: every pack downloads. */
            bool answer = HAS(should_download_asset_pack) ? ext->should_download_asset_pack(ext, &pack) : true;
            ba_wire_writer_t w;
            ba_wire_writer_init(&w, BA_WIRE_ANSWER);
            ba_wire_put_u32(&w, event_id);
            ba_wire_put_u8(&w, answer ? 1 : 0);
            channel_send(&w);
        }
        break;
    }
    case BA_WIRE_CHALLENGE: {
        ba_auth_challenge_t challenge = {.struct_size = sizeof challenge};
        if (ba_wire_get_download(&r, &download, headers) && ba_wire_get_str(&r, &challenge.host, &n) &&
            ba_wire_get_i32(&r, &challenge.port) && ba_wire_get_str(&r, &challenge.protocol, &n) &&
            ba_wire_get_str(&r, &challenge.realm, &n) && ba_wire_get_str(&r, &challenge.authentication_method, &n) &&
            ba_wire_get_i32(&r, &challenge.previous_failure_count)) {
            challenge_reply_t *state = calloc(1, sizeof *state);
            if (!state) runner_fail("out of memory for a challenge");
            state->reply = (ba_challenge_reply_t){
                .struct_size = sizeof state->reply, .reply_data = state, .complete = challenge_complete};
            state->event_id = event_id;
            if (HAS(did_receive_challenge))
                ext->did_receive_challenge(ext, &download, &challenge, &state->reply);
            else
                challenge_complete(&state->reply, BA_CHALLENGE_PERFORM_DEFAULT_HANDLING, NULL, NULL);
        }
        break;
    }
    default:
        break;
    }
#undef HAS
    ba_wire_writer_t w;
    ba_wire_writer_init(&w, BA_WIRE_EVENT_DONE);
    ba_wire_put_u32(&w, event_id);
    channel_send(&w);
}

static void *entry_main(void *arg) {
    const ba_extension_t *ext = arg;
    for (;;) {
        queued_t *q = dequeue();
        dispatch(ext, q->packet, q->length);
        free(q->packet);
        free(q);
        atomic_fetch_sub(&running, 1);
    }
    return NULL;
}

static void *terminate_main(void *arg) {
    const ba_extension_t *ext = arg;
    if (BA_STRUCT_HAS(ba_extension_t, ext->struct_size, will_terminate) && ext->will_terminate)
        ext->will_terminate(ext);
    ba_wire_writer_t w;
    ba_wire_writer_init(&w, BA_WIRE_TERMINATE_DONE);
    channel_send(&w);
    atomic_fetch_sub(&running, 1);
    return NULL;
}

static void start(void *(*body)(void *), const ba_extension_t *ext) {
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* The process limit counts threads: an extension that spent it leaves the runner none (the runner's failure,
     * caused by the extension; reported as the runner's, with the reason). */
    if (pthread_create(&thread, &attr, body, (void *)ext) != 0) runner_fail("cannot start a thread");
    pthread_attr_destroy(&attr);
}

void entry_thread_start(const ba_extension_t *ext) { start(entry_main, ext); }
void terminate_thread_start(const ba_extension_t *ext) {
    atomic_fetch_add(&running, 1);
    start(terminate_main, ext);
}
