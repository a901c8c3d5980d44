/* ba/challenge.h: a server's request for credentials and its answer (Apple's URLAuthenticationChallenge and
 * URLSession.AuthChallengeDisposition), shared by the extension's and the app's sides. */
#ifndef BA_CHALLENGE_H
#define BA_CHALLENGE_H

#include <stdint.h>

/* Apple's URLSession.AuthChallengeDisposition, same raw values. */
typedef enum ba_challenge_disposition {
    BA_CHALLENGE_USE_CREDENTIAL = 0,
    BA_CHALLENGE_PERFORM_DEFAULT_HANDLING = 1,
    BA_CHALLENGE_CANCEL = 2,
    BA_CHALLENGE_REJECT_PROTECTION_SPACE = 3,
} ba_challenge_disposition_t;

/* A server asked for credentials (Apple's URLAuthenticationChallenge). Borrowed for the call. */
typedef struct ba_auth_challenge {
    uint32_t struct_size;
    const char *host;
    int32_t port;
    const char *protocol;              /* "https" */
    const char *realm;                 /* may be NULL */
    const char *authentication_method; /* e.g. "NSURLAuthenticationMethodHTTPBasic" */
    int32_t previous_failure_count;
} ba_auth_challenge_t;

/* The answer to a challenge. complete must be called exactly once, from any thread, possibly after the callback
 * that passed it returned; the reply stays valid until then. An extension's window stays open until then; an app's
 * service waits for it up to its callback timeout (30 s by default), then goes on as if the app had not answered.
 * user and password are read only with BA_CHALLENGE_USE_CREDENTIAL (each at most 4,096 bytes); a second call is
 * ignored. */
typedef struct ba_challenge_reply ba_challenge_reply_t;
struct ba_challenge_reply {
    uint32_t struct_size;
    void *reply_data; /* the host's own */
    void (*complete)(const ba_challenge_reply_t *reply, int32_t disposition, const char *user, const char *password);
};

#endif
