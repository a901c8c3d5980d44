/* Tries to read and write outside its app group's container: the user's home, /tmp, another app's container (the
 * container's sibling group.com.example.other), and the host's data root. Logs each attempt with its errno
 * ("write …: Permission denied"), then writes one file inside its container, which must work. */
#include "common.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void attempt(const char *what, const char *path, int flags) {
    char line[4200];
    int fd = open(path, flags | O_CLOEXEC, 0600);
    snprintf(line, sizeof line, "%s %s: %s", what, path, fd >= 0 ? "done" : strerror(errno));
    if (fd >= 0) close(fd);
    say(line);
}

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info, (void)sink;
    const char *container = getenv("BAHOST_APP_GROUP_CONTAINER");
    const char *home = getenv("HOME");
    char path[4096];
    if (home) {
        snprintf(path, sizeof path, "%s/.bahost-escape", home);
        attempt("write", path, O_WRONLY | O_CREAT);
        attempt("list", home, O_RDONLY | O_DIRECTORY);
    }
    attempt("write", "/tmp/bahost-escape", O_WRONLY | O_CREAT);
    if (!container) return;
    snprintf(path, sizeof path, "%s/../group.com.example.other/secret", container);
    attempt("read", path, O_RDONLY);
    snprintf(path, sizeof path, "%s/../group.com.example.other/planted", container);
    attempt("write", path, O_WRONLY | O_CREAT);
    snprintf(path, sizeof path, "%s/../../planted", container);
    attempt("write", path, O_WRONLY | O_CREAT);
    snprintf(path, sizeof path, "%s/kept", container);
    attempt("write", path, O_WRONLY | O_CREAT);
}
