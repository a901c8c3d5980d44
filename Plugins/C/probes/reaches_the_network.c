/* Connects to the TCP port its manifest names ("PORT", on 127.0.0.1), sends an HTTP request and logs the status
 * line it got, or why it could not: the sandbox leaves the network open, as Apple does. */
#include <arpa/inet.h>
#include <ba/ba.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const ba_host_t *host;

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)info, (void)sink;
    char line[512] = "";
    int port = 0;
    FILE *manifest = fopen(manifest_path, "r");
    if (!manifest || fscanf(manifest, "%d", &port) != 1) {
        host->log(host, BA_LOG_ERROR, "no port in the manifest");
        if (manifest) fclose(manifest);
        return;
    }
    fclose(manifest);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        snprintf(line, sizeof line, "connect: %s", strerror(errno));
    } else {
        const char *get = "GET / HTTP/1.0\r\nHost: localhost\r\n\r\n";
        char reply[256] = "";
        if (write(fd, get, strlen(get)) < 0 || read(fd, reply, sizeof reply - 1) <= 0)
            snprintf(line, sizeof line, "no reply: %s", strerror(errno));
        else
            snprintf(line, sizeof line, "reply: %.*s", (int)strcspn(reply, "\r\n"), reply);
    }
    if (fd >= 0) close(fd);
    host->log(host, BA_LOG_INFO, line);
}

static const ba_extension_t extension = {.struct_size = sizeof extension,
                                         .downloads_for_request = downloads_for_request};

static const ba_extension_t *init(const ba_host_t *h) {
    host = h;
    return &extension;
}

static const ba_entry_t entry = {
    .struct_size = sizeof entry, .abi_version = BA_ABI_VERSION, .identifier = "probe.reaches-the-network", .init = init};

BA_EXPORT const ba_entry_t *ba_extension_entry(void) { return &entry; }
