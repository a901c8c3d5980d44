/* Reads the environment of the process whose pid the manifest holds (the host's test process: same user), and
 * counts the processes /proc lists. Logs "environ PID: ok" or the error, and "processes visible: N". */
#include "common.h"
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)info, (void)sink;
    char pid[32] = "", path[64], line[256], byte;
    FILE *manifest = fopen(manifest_path, "r");
    if (manifest) {
        if (!fgets(pid, sizeof pid, manifest)) pid[0] = 0;
        fclose(manifest);
    }
    pid[strcspn(pid, "\n")] = 0;
    snprintf(path, sizeof path, "/proc/%s/environ", pid);
    int fd = open(path, O_RDONLY);
    int error = fd < 0 ? errno : 0;
    if (fd >= 0) {
        if (read(fd, &byte, 1) < 0) error = errno;
        close(fd);
    }
    snprintf(line, sizeof line, "environ %s: %s", pid, error ? strerror(error) : "ok");
    say(line);
    int count = 0;
    DIR *proc = opendir("/proc");
    for (struct dirent *entry; proc && (entry = readdir(proc));)
        if (isdigit((unsigned char)entry->d_name[0])) count++;
    if (proc) closedir(proc);
    snprintf(line, sizeof line, "processes visible: %d", count);
    say(line);
}
