/* bahost_systemd.h: libsystemd. sd-bus for the system bus (NetworkManager, logind: Sources/SystemBus) and the
 * session bus (the desktop's notifications and launcher entries), with the few of its calls that Swift cannot make
 * itself, the variadic ones, passed through below; sd-daemon for the service manager (socket activation, readiness:
 * Sources/Service). Every rule lives in Swift; these only pass arguments through. */
#ifndef BAHOST_SYSTEMD_H
#define BAHOST_SYSTEMD_H

#include <stdint.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>

/* Reads one boolean argument of `m` (a signal's "b"). Returns sd-bus's result: >= 0 on success. */
int bahost_bus_read_bool(sd_bus_message *m, int *value);

/* A property of a trivial type of `destination`'s object (org.freedesktop.DBus.Properties.Get), within sd-bus's
 * timeout: type 'u' a uint32_t (NetworkManager's Metered), 'b' an int 0 or 1 (UPower's OnBattery), 'd' a double
 * (its Percentage), 'i' an int32_t (GameMode's ClientCount). */
int bahost_bus_get_trivial(sd_bus *bus, const char *destination, const char *path, const char *interface,
                           const char *member, char type, void *value);

/* A string property, malloc'd into *value (the caller frees it). */
int bahost_bus_get_string(sd_bus *bus, const char *destination, const char *path, const char *interface,
                          const char *member, char **value);

/* logind's Inhibit(what, who, why, mode): the inhibitor's descriptor (close it to release), duplicated with
 * O_CLOEXEC so that it outlives the reply; or a negative errno. */
int bahost_bus_inhibit(sd_bus *bus, const char *what, const char *who, const char *why, const char *mode);


/* Waits until the bus has something to process, its next timeout passes, or `wake_fd` (a stop pipe's read end)
 * is written: 1 for the pipe (drained), 0 otherwise, or a negative errno. The bus threads' only wait. */
int bahost_bus_wait(sd_bus *bus, int wake_fd);

/* A bus client connected to `address` (D-Bus's address syntax, "unix:path=..."), or a negative errno. */
int bahost_bus_open_address(const char *address, sd_bus **bus);

/* Closes `bus` once what it has queued is sent. */
void bahost_bus_close(sd_bus *bus);

#endif
