#include "runner.h"
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t send_lock = PTHREAD_MUTEX_INITIALIZER;

/* Log messages wait in one LOG packet until a packet of another kind is sent (so that the host sees everything in
 * the order it happened), the packet would pass BA_WIRE_BATCH_BYTES, or the first of them has waited
 * LOG_DELAY_NS (the control thread looks that often while an entry point or will_terminate is queued or runs; what
 * the extension's own threads log between them goes with the next packet, the window's end at the latest): a
 * packet a message cost the host a receive and a wake-up each, a large part of a content request from an extension
 * that logs each download it returns (docs/performance/DECISIONS.md #32). A crash sends what waits from its
 * signal handler.
 * Under send_lock; `log_owner` besides while the packet changes or is sent, which the crash handler takes without
 * the lock. */
#define LOG_DELAY_NS 5000000L
static uint8_t log_packet[BA_WIRE_BATCH_BYTES];
static size_t log_length; /* 0 while no message waits */
static struct timespec log_since;
static atomic_int log_owner;

static void own_log_packet(void) {
    int expected = 0;
    /* Only the crash handler can hold it against a sender, and then the process is about to end. */
    while (!atomic_compare_exchange_weak(&log_owner, &expected, 1)) expected = 0;
}

static void release_log_packet(void) { atomic_store(&log_owner, 0); }

/* Sends one packet: 0, or the errno that stopped it. Under send_lock. */
static int send_locked(const uint8_t *bytes, size_t length) {
    ssize_t sent;
    do sent = send(RUNNER_CHANNEL_FD, bytes, length, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    return sent < 0 ? errno : 0;
}

/* Sends the waiting log messages, if any: 0, or the errno that stopped it. Under send_lock. */
static int flush_logs_locked(void) {
    if (log_length == 0) return 0;
    own_log_packet();
    int error = send_locked(log_packet, log_length);
    log_length = 0;
    release_log_packet();
    return error;
}

static void fail_on_send_error(int error) {
    if (error == EMSGSIZE) runner_fail("the socket refused a packet as too large");
    if (error) _exit(70); /* the host is gone: nothing left to serve */
}

void channel_send(ba_wire_writer_t *w) {
    if (w->length > BA_WIRE_MAX_PACKET) {
        /* Every packet the runner builds is bounded below this (ba_wire.h's limits): one that is not is the runner's
         * own bug, and must not end the window as if the extension had. */
        char why[128];
        snprintf(why, sizeof why, "a packet of type %u is %zu bytes, over the %u the wire allows", w->bytes[0],
                 w->length, BA_WIRE_MAX_PACKET);
        ba_wire_writer_free(w);
        runner_fail(why);
    }
    pthread_mutex_lock(&send_lock);
    int error = flush_logs_locked();
    if (!error) error = send_locked(w->bytes, w->length);
    pthread_mutex_unlock(&send_lock);
    ba_wire_writer_free(w);
    fail_on_send_error(error);
}

void channel_log(ba_wire_writer_t *w) {
    /* The message: w holds a LOG packet of one (its level, its text cut to BA_WIRE_MAX_LOG), well under the batch. */
    const uint8_t *message = w->bytes + 1;
    size_t length = w->length - 1;
    pthread_mutex_lock(&send_lock);
    int error = log_length + length > sizeof log_packet ? flush_logs_locked() : 0;
    if (!error) {
        own_log_packet();
        if (log_length == 0) {
            log_packet[0] = BA_WIRE_LOG;
            log_length = 1;
            clock_gettime(CLOCK_MONOTONIC, &log_since);
        }
        memcpy(log_packet + log_length, message, length);
        log_length += length;
        release_log_packet();
    }
    pthread_mutex_unlock(&send_lock);
    ba_wire_writer_free(w);
    fail_on_send_error(error);
}

static long waited_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - log_since.tv_sec) * 1000000000L + (now.tv_nsec - log_since.tv_nsec);
}

/* The control thread's two calls below never wait for the lock: a sender may hold it while the socket is full, and
 * the control thread must stay free to read the host's packets (willTerminate among them). They try again later. */
int channel_log_timeout_ms(bool extension_running) {
    if (pthread_mutex_trylock(&send_lock) != 0) return (int)(LOG_DELAY_NS / 1000000);
    bool waiting = log_length > 0;
    long left = waiting ? LOG_DELAY_NS - waited_ns() : LOG_DELAY_NS;
    pthread_mutex_unlock(&send_lock);
    if (!waiting && !extension_running) return -1;
    return left <= 0 ? 0 : (int)((left + 999999) / 1000000);
}

void channel_flush_logs(bool only_when_due) {
    if (only_when_due ? pthread_mutex_trylock(&send_lock) != 0 : pthread_mutex_lock(&send_lock) != 0) return;
    int error = !only_when_due || (log_length > 0 && waited_ns() >= LOG_DELAY_NS) ? flush_logs_locked() : 0;
    pthread_mutex_unlock(&send_lock);
    fail_on_send_error(error);
}

/* A crash sends the messages that wait, unless the packet is changing at that moment, then dies of its signal. */
static void send_logs_and_die(int signal_number) {
    int expected = 0;
    if (log_length > 0 && atomic_compare_exchange_strong(&log_owner, &expected, 1)) {
        ssize_t sent = send(RUNNER_CHANNEL_FD, log_packet, log_length, MSG_NOSIGNAL);
        (void)sent;
    }
    raise(signal_number); /* SA_RESETHAND restored the default action, SA_NODEFER lets it act now */
}

void channel_start_logs(void) {
    struct sigaction action = {.sa_handler = send_logs_and_die, .sa_flags = SA_RESETHAND | SA_NODEFER};
    sigemptyset(&action.sa_mask);
    const int crashes[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t i = 0; i < sizeof crashes / sizeof crashes[0]; i++) sigaction(crashes[i], &action, NULL);
}

_Noreturn void runner_fail(const char *why) {
    char text[256];
    snprintf(text, sizeof text, "bahost-extension-runner: %s", why);
    ba_wire_writer_t w;
    ba_wire_writer_init(&w, BA_WIRE_RUNNER_FAILED);
    ba_wire_put_str(&w, text);
    pthread_mutex_lock(&send_lock);
    (void)flush_logs_locked();
    (void)send_locked(w.bytes, w.length);
    pthread_mutex_unlock(&send_lock);
    fflush(NULL);
    _exit(RUNNER_FAILURE_EXIT);
}

void channel_send_text(uint8_t type, const char *text) {
    ba_wire_writer_t w;
    ba_wire_writer_init(&w, type);
    ba_wire_put_str(&w, text);
    channel_send(&w);
}

/* Calls waiting for their replies. A call gets every REPLY_DOWNLOAD packet and then one REPLY packet. */
typedef struct reply {
    struct reply *next;
    uint8_t *packet;
    size_t length;
} reply_t;

typedef struct pending {
    struct pending *next;
    uint32_t id;
    reply_t *head, *tail;
} pending_t;

static pthread_mutex_t calls_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t calls_changed = PTHREAD_COND_INITIALIZER;
static pending_t *calls;
static uint32_t next_call_id = 1;

static pending_t *find(uint32_t id) {
    for (pending_t *p = calls; p; p = p->next)
        if (p->id == id) return p;
    return NULL;
}

uint32_t channel_begin_call(void) {
    pending_t *p = calloc(1, sizeof *p);
    if (!p) runner_fail("out of memory for a host call");
    pthread_mutex_lock(&calls_lock);
    p->id = next_call_id++;
    p->next = calls;
    calls = p;
    pthread_mutex_unlock(&calls_lock);
    return p->id;
}

uint8_t *channel_wait_reply(uint32_t call_id, size_t *length) {
    pthread_mutex_lock(&calls_lock);
    pending_t *p = find(call_id);
    while (!p->head) pthread_cond_wait(&calls_changed, &calls_lock);
    reply_t *r = p->head;
    p->head = r->next;
    if (!p->head) p->tail = NULL;
    pthread_mutex_unlock(&calls_lock);
    uint8_t *packet = r->packet;
    *length = r->length;
    free(r);
    return packet;
}

void channel_end_call(uint32_t call_id) {
    pthread_mutex_lock(&calls_lock);
    for (pending_t **link = &calls; *link; link = &(*link)->next)
        if ((*link)->id == call_id) {
            pending_t *p = *link;
            *link = p->next;
            for (reply_t *r = p->head, *next; r; r = next) {
                next = r->next;
                free(r->packet);
                free(r);
            }
            free(p);
            break;
        }
    pthread_mutex_unlock(&calls_lock);
}

void channel_deliver_reply(uint32_t call_id, uint8_t *packet, size_t length) {
    pthread_mutex_lock(&calls_lock);
    pending_t *p = find(call_id);
    if (!p) {
        /* a reply nobody waits for: the host is confused, which is not the extension's fault; drop it */
        pthread_mutex_unlock(&calls_lock);
        free(packet);
        return;
    }
    reply_t *r = malloc(sizeof *r);
    if (!r) runner_fail("out of memory for a host reply");
    *r = (reply_t){.packet = packet, .length = length};
    if (p->tail) p->tail->next = r;
    else p->head = r;
    p->tail = r;
    pthread_cond_broadcast(&calls_changed);
    pthread_mutex_unlock(&calls_lock);
}
