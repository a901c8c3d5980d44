/* Tries to read what a window running as root could read if the sandbox allowed all of /etc, and what it does need
 * (certificates, name resolution, users), and logs each as "read PATH: ok" or "read PATH: <error>". */
#include "common.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static void try_read(const char *path) {
    char line[256], byte;
    int fd = open(path, O_RDONLY);
    int error = fd < 0 ? errno : 0;
    if (fd >= 0) {
        if (read(fd, &byte, 1) < 0) error = errno;
        close(fd);
    }
    snprintf(line, sizeof line, "read %s: %s", path, error ? strerror(error) : "ok");
    say(line);
}

static void try_list(const char *path) {
    char line[256];
    DIR *folder = opendir(path);
    snprintf(line, sizeof line, "list %s: %s", path, folder ? "ok" : strerror(errno));
    if (folder) closedir(folder);
    say(line);
}

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info, (void)sink;
    try_read("/etc/shadow");
    try_read("/etc/gshadow");
    try_list("/etc");
    try_list("/root");
    try_read("/etc/ssl/certs/ca-certificates.crt");
    try_read("/etc/resolv.conf");
    try_read("/etc/passwd");
}
