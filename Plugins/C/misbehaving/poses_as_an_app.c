/* Connects to the service's socket (its path is the manifest's first line) as if it were the app, and logs the
 * first bytes the service answers, or why it could not connect. */
#include "common.h"
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)info, (void)sink;
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    char line[600], answer[400] = {0};
    FILE *manifest = fopen(manifest_path, "r");
    if (!manifest || !fgets(address.sun_path, sizeof address.sun_path, manifest)) {
        say("no socket path in the manifest");
        if (manifest) fclose(manifest);
        return;
    }
    fclose(manifest);
    address.sun_path[strcspn(address.sun_path, "\n")] = 0;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        snprintf(line, sizeof line, "connect: %s", strerror(errno));
    } else {
        struct timeval wait = {.tv_sec = 5};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
        ssize_t got = recv(fd, answer, sizeof answer - 1, MSG_WAITALL);
        for (ssize_t i = 0; i < got; i++)
            if (answer[i] < 32 || answer[i] > 126) answer[i] = '.';
        snprintf(line, sizeof line, "the service answered: %s", got > 0 ? answer : "nothing");
    }
    close(fd);
    say(line);
}
