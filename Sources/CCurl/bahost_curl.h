/* bahost_curl.h: libcurl's calls that Swift cannot make directly (curl_easy_setopt and curl_easy_getinfo are
 * variadic), typed per argument kind, and the few constants Swift does not import (macros built from casts). Thin
 * and stateless: every rule about how bahost uses libcurl is in Sources/Transfer. */
#ifndef BAHOST_CURL_H
#define BAHOST_CURL_H

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

static inline CURLcode bahost_curl_set_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode bahost_curl_set_offset(CURL *handle, CURLoption option, int64_t value) {
    return curl_easy_setopt(handle, option, (curl_off_t)value);
}

static inline CURLcode bahost_curl_set_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode bahost_curl_set_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

typedef size_t (*bahost_curl_data_callback)(char *bytes, size_t size, size_t count, void *context);

static inline CURLcode bahost_curl_set_callback(CURL *handle, CURLoption option, bahost_curl_data_callback value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLMcode bahost_curl_multi_set_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

static inline long bahost_curl_info_long(CURL *handle, CURLINFO info) {
    long value = 0;
    return curl_easy_getinfo(handle, info, &value) == CURLE_OK ? value : 0;
}

static inline int64_t bahost_curl_info_offset(CURL *handle, CURLINFO info) {
    curl_off_t value = 0;
    return curl_easy_getinfo(handle, info, &value) == CURLE_OK ? (int64_t)value : 0;
}

typedef int (*bahost_curl_sockopt_callback)(void *context, curl_socket_t socket, curlsocktype purpose);

/* Has `callback` told of each socket the handle opens (CURLINFO_ACTIVESOCKET names one only once its transfer ended). */
static inline CURLcode bahost_curl_set_sockopt_callback(CURL *handle, bahost_curl_sockopt_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_SOCKOPTFUNCTION, callback);
}

/* The last connection a handle began to open: its socket and the peer's numeric address. libcurl names the peer
 * (CURLINFO_PRIMARY_IP) only once the connection is made; the path of one still connecting is judged from these. */
typedef struct {
    int socket;
    char peer[INET6_ADDRSTRLEN];
} bahost_curl_connect_attempt;

/* CURLOPT_OPENSOCKETFUNCTION: opens the socket as libcurl would (close-on-exec besides) and records it in the
 * handle's `bahost_curl_connect_attempt` (CURLOPT_OPENSOCKETDATA). */
static inline curl_socket_t bahost_curl_open_socket(
    void *context, curlsocktype purpose, struct curl_sockaddr *address) {
    curl_socket_t fd = socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
    bahost_curl_connect_attempt *attempt = (bahost_curl_connect_attempt *)context;
    if (fd == CURL_SOCKET_BAD || attempt == NULL || purpose != CURLSOCKTYPE_IPCXN) return fd;
    attempt->socket = fd;
    attempt->peer[0] = 0;
    const void *bytes = NULL;
    if (address->family == AF_INET) bytes = &((const struct sockaddr_in *)&address->addr)->sin_addr;
    if (address->family == AF_INET6) bytes = &((const struct sockaddr_in6 *)&address->addr)->sin6_addr;
    if (bytes == NULL || inet_ntop(address->family, bytes, attempt->peer, sizeof attempt->peer) == NULL) {
        attempt->peer[0] = 0;
    }
    return fd;
}

/* Has the handle's connections opened by bahost_curl_open_socket, recorded in `attempt`. */
static inline CURLcode bahost_curl_record_connects(CURL *handle, bahost_curl_connect_attempt *attempt) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, bahost_curl_open_socket);
    return code == CURLE_OK ? curl_easy_setopt(handle, CURLOPT_OPENSOCKETDATA, (void *)attempt) : code;
}

/* A string libcurl keeps for the handle (an address), or "" when it has none. */
static inline const char *bahost_curl_info_string(CURL *handle, CURLINFO info) {
    char *value = NULL;
    return curl_easy_getinfo(handle, info, &value) == CURLE_OK && value != NULL ? value : "";
}

static inline void *bahost_curl_info_private(CURL *handle) {
    char *value = NULL;
    return curl_easy_getinfo(handle, CURLINFO_PRIVATE, &value) == CURLE_OK ? (void *)value : NULL;
}

/* What a write callback returns to pause its transfer until curl_easy_pause(CURLPAUSE_CONT). */
static const size_t bahost_curl_write_pause = CURL_WRITEFUNC_PAUSE;
static const int bahost_curl_pause_continue = CURLPAUSE_CONT;
/* Every authentication scheme a proxy may ask for (CURLAUTH_ANY). */
static const long bahost_curl_auth_any = (long)CURLAUTH_ANY;

#endif
