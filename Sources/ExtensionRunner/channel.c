#include "runner.h"
#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static pthread_mutex_t send_lock = PTHREAD_MUTEX_INITIALIZER;

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
    ssize_t sent;
    do sent = send(RUNNER_CHANNEL_FD, w->bytes, w->length, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    int error = errno;
    pthread_mutex_unlock(&send_lock);
    ba_wire_writer_free(w);
    if (sent < 0 && error == EMSGSIZE) runner_fail("the socket refused a packet as too large");
    if (sent < 0) _exit(70); /* the host is gone: nothing left to serve */
}

_Noreturn void runner_fail(const char *why) {
    char text[256];
    snprintf(text, sizeof text, "bahost-extension-runner: %s", why);
    ba_wire_writer_t w;
    ba_wire_writer_init(&w, BA_WIRE_RUNNER_FAILED);
    ba_wire_put_str(&w, text);
    pthread_mutex_lock(&send_lock);
    ssize_t sent = send(RUNNER_CHANNEL_FD, w.bytes, w.length, MSG_NOSIGNAL);
    (void)sent;
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
