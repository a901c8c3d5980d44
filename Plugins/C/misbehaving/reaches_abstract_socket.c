/* Tries to connect to an abstract Unix socket outside its window, named by the manifest's first line. */
#include "common.h"
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)info, (void)sink;
    char name[100] = {0}, line[256];
    FILE *manifest = fopen(manifest_path, "r");
    if (!manifest || !fgets(name, sizeof name, manifest)) {
        say("no socket name in the manifest");
        if (manifest) fclose(manifest);
        return;
    }
    fclose(manifest);
    name[strcspn(name, "\n")] = 0;
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    memcpy(address.sun_path + 1, name, strlen(name)); /* abstract: a leading NUL */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int result = connect(fd, (struct sockaddr *)&address, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name)));
    snprintf(line, sizeof line, "connect @%s: %s", name, result == 0 ? "done" : strerror(errno));
    say(line);
    close(fd);
}
