#define _GNU_SOURCE
#include "bahost_systemd.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int bahost_bus_read_bool(sd_bus_message *m, int *value) { return sd_bus_message_read(m, "b", value); }

int bahost_bus_get_trivial(sd_bus *bus, const char *destination, const char *path, const char *interface,
                           const char *member, char type, void *value) {
    sd_bus_error error = SD_BUS_ERROR_NULL;
    int r = sd_bus_get_property_trivial(bus, destination, path, interface, member, &error, type, value);
    sd_bus_error_free(&error);
    return r;
}

int bahost_bus_get_string(sd_bus *bus, const char *destination, const char *path, const char *interface,
                          const char *member, char **value) {
    sd_bus_error error = SD_BUS_ERROR_NULL;
    int r = sd_bus_get_property_string(bus, destination, path, interface, member, &error, value);
    sd_bus_error_free(&error);
    return r;
}

int bahost_bus_inhibit(sd_bus *bus, const char *what, const char *who, const char *why, const char *mode) {
    sd_bus_error error = SD_BUS_ERROR_NULL;
    sd_bus_message *reply = NULL;
    int r = sd_bus_call_method(bus, "org.freedesktop.login1", "/org/freedesktop/login1",
                               "org.freedesktop.login1.Manager", "Inhibit", &error, &reply, "ssss", what, who, why,
                               mode);
    sd_bus_error_free(&error);
    if (r < 0) return r;
    int fd = -1;
    r = sd_bus_message_read(reply, "h", &fd);
    int copy = r >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : -1;
    int saved = errno;
    sd_bus_message_unref(reply);
    if (r < 0) return r;
    return copy >= 0 ? copy : -saved;
}

void bahost_bus_close(sd_bus *bus) { sd_bus_flush_close_unref(bus); }


int bahost_bus_wait(sd_bus *bus, int wake_fd) {
    struct pollfd fds[2] = {
        {.fd = sd_bus_get_fd(bus), .events = (short)sd_bus_get_events(bus)},
        {.fd = wake_fd, .events = POLLIN},
    };
    uint64_t until = 0;
    int timeout = -1;
    if (sd_bus_get_timeout(bus, &until) >= 0 && until != UINT64_MAX) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint64_t micros = (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
        uint64_t left = until > micros ? (until - micros + 999) / 1000 : 0;
        timeout = left > 60000 ? 60000 : (int)left;
    }
    int r = poll(fds, 2, timeout);
    if (r < 0) return errno == EINTR ? 0 : -errno;
    if (fds[1].revents & POLLIN) {
        char drain[64];
        while (read(wake_fd, drain, sizeof drain) > 0) {}
        return 1;
    }
    return 0;
}

int bahost_bus_open_address(const char *address, sd_bus **bus) {
    sd_bus *made = NULL;
    int r = sd_bus_new(&made);
    if (r < 0) return r;
    if ((r = sd_bus_set_address(made, address)) < 0 || (r = sd_bus_set_bus_client(made, 1)) < 0 ||
        (r = sd_bus_start(made)) < 0) {
        sd_bus_unref(made);
        return r;
    }
    *bus = made;
    return 0;
}
