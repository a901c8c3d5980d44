/* Answers authentication challenges from the credential in its app group container ("USER:PASSWORD" in the file
 * `credential`), on a thread of its own after its entry point returned (the window must wait for the answer), and
 * only the first time for each download; with no credential it cancels. It logs each challenge, keeps finished
 * files, and logs failures. Its manifest holds lines "ID URL SIZE". */
#include "probe_support.h"
#include <ba/ba.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const ba_host_t *host;

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)info;
    add_manifest_lines(manifest_path, sink);
}

typedef struct answer {
    const ba_challenge_reply_t *reply;
    int32_t disposition;
    char user[600], password[600];
} answer_t;

static void *answer_later(void *arg) {
    answer_t *answer = arg;
    usleep(200 * 1000);
    answer->reply->complete(answer->reply, answer->disposition, answer->user, answer->password);
    free(answer);
    return NULL;
}

static void did_receive_challenge(const ba_extension_t *ext, const ba_download_t *download,
                                  const ba_auth_challenge_t *challenge, const ba_challenge_reply_t *reply) {
    (void)ext;
    char line[2048], path[2048], credential[600] = "";
    snprintf(line, sizeof line, "challenge %s host=%s port=%d protocol=%s realm=%s method=%s previous=%d",
             download->identifier, challenge->host, challenge->port, challenge->protocol,
             challenge->realm ? challenge->realm : "(none)", challenge->authentication_method,
             challenge->previous_failure_count);
    host->log(host, BA_LOG_INFO, line);

    answer_t *answer = calloc(1, sizeof *answer);
    answer->reply = reply;
    answer->disposition = BA_CHALLENGE_CANCEL;
    snprintf(path, sizeof path, "%s/credential", getenv("BAHOST_APP_GROUP_CONTAINER"));
    FILE *file = fopen(path, "r");
    if (file) {
        if (fgets(credential, sizeof credential, file)) credential[strcspn(credential, "\n")] = 0;
        fclose(file);
    }
    char *colon = strchr(credential, ':');
    if (colon && challenge->previous_failure_count == 0) {
        *colon = 0;
        snprintf(answer->user, sizeof answer->user, "%s", credential);
        snprintf(answer->password, sizeof answer->password, "%s", colon + 1);
        answer->disposition = BA_CHALLENGE_USE_CREDENTIAL;
    }
    pthread_t thread;
    pthread_create(&thread, NULL, answer_later, answer);
    pthread_detach(thread);
}

static void download_finished(const ba_extension_t *ext, const ba_download_t *download, const char *file_path) {
    (void)ext;
    keep_in_container(host, download, file_path);
}

static void download_failed(const ba_extension_t *ext, const ba_download_t *download, const ba_error_t *error) {
    (void)ext;
    char line[2200];
    snprintf(line, sizeof line, "failed %s: %lld %s", download->identifier, (long long)error->code, error->message);
    host->log(host, BA_LOG_INFO, line);
}

static const ba_extension_t extension = {.struct_size = sizeof extension,
                                         .downloads_for_request = downloads_for_request,
                                         .download_failed = download_failed,
                                         .download_finished = download_finished,
                                         .did_receive_challenge = did_receive_challenge};

static const ba_extension_t *init(const ba_host_t *h) {
    host = h;
    return &extension;
}

static const ba_entry_t entry = {
    .struct_size = sizeof entry, .abi_version = BA_ABI_VERSION, .identifier = "probe.answers-challenges", .init = init};

BA_EXPORT const ba_entry_t *ba_extension_entry(void) { return &entry; }
