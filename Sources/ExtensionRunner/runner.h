/* The extension runner: the child process of one window. It dlopens the extension, answers the host's messages,
 * and knows nothing about downloads beyond carrying them. Three kinds of thread touch the extension:
 *   - the control thread (main): reads every packet from the host and routes it;
 *   - the entry thread: runs entry points one at a time, in the order the host sent them;
 *   - a terminate thread, started when the host says the budget ran out: runs will_terminate, even while the
 *     entry thread is stuck.
 * Host functions may be called from any of them, or from the extension's own threads. */
#ifndef BA_RUNNER_H
#define BA_RUNNER_H

#include "ba_wire.h"

/* The socket to the host, inherited as this descriptor. */
#define RUNNER_CHANNEL_FD 3

/* The runner's exit status when it fails itself (never the extension's doing): it says why first, in a
 * BA_WIRE_RUNNER_FAILED packet, so that the window blames the runner, not the extension. */
#define RUNNER_FAILURE_EXIT 71

/* channel.c: sending, and waiting for replies to host calls. */
void channel_send(ba_wire_writer_t *w); /* sends and frees; a dead host ends the process */
/* Reports the runner's own failure to the host and exits with RUNNER_FAILURE_EXIT. */
_Noreturn void runner_fail(const char *why);
void channel_send_text(uint8_t type, const char *text);
/* Queues the message of `w`, a LOG packet of one, to go with the next packet or within a few milliseconds; frees
 * `w`. Any thread. */
void channel_log(ba_wire_writer_t *w);
/* Installs the crash handlers that send the log messages waiting. Once, before the extension is loaded. */
void channel_start_logs(void);
/* How long the control thread may wait before it looks at the log messages again: until the waiting ones are due,
 * a delay's worth while the extension runs (it may log any moment), or -1 (for ever) when it does neither. */
int channel_log_timeout_ms(bool extension_running);
/* Sends the waiting log messages: all of them, or only when the first has waited long enough. */
void channel_flush_logs(bool only_when_due);
uint32_t channel_begin_call(void);
/* Blocks until the next packet for `call_id` arrives; returns it (malloc'd) and its length. */
uint8_t *channel_wait_reply(uint32_t call_id, size_t *length);
void channel_end_call(uint32_t call_id);
/* Hands a reply packet to the caller waiting for it. Takes ownership of `packet`. */
void channel_deliver_reply(uint32_t call_id, uint8_t *packet, size_t length);

/* host_table.c: the ba_host_t given to the extension, built with libffi closures. */
const ba_host_t *host_table_create(void);

/* entry_thread.c */
void entry_thread_start(const ba_extension_t *ext);
/* Queues an EVENT packet for the entry thread. Takes ownership of `packet`. */
void entry_thread_enqueue(uint8_t *packet, size_t length);
void terminate_thread_start(const ba_extension_t *ext);
/* Whether an entry point, or will_terminate, is queued or running: the extension may be logging. */
bool extension_running(void);

/* sandbox.c: restricts this process before `plugin` is loaded and reports what it applied to the host. */
void sandbox_apply(const char *plugin);

#endif
