/* network_path.c: what the kernel says of the network path: its changes (rtnetlink) and the route it would take
 * to an address now. Declared in host_support.h. */
#define _GNU_SOURCE
#include "host_support.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int bahost_network_changes_open(void) {
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0) return -1;
    struct sockaddr_nl address = {0};
    address.nl_family = AF_NETLINK;
    address.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE;
    if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int bahost_network_changes_drain(int fd) {
    /* Only that something changed matters (the route to each peer is asked anew), so the messages are not parsed.
     * An overrun (ENOBUFS) also means a change. */
    char buffer[8192];
    int count = 0;
    for (;;) {
        ssize_t got = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (got > 0) {
            count++;
        } else if (got < 0 && errno == EINTR) {
            continue;
        } else if (got < 0 && errno == ENOBUFS) {
            count++;
        } else {
            return count;
        }
    }
}

int bahost_route_source(const char *peer, char *local, size_t capacity) {
    struct sockaddr_storage address = {0};
    socklen_t length;
    struct sockaddr_in *v4 = (struct sockaddr_in *)&address;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&address;
    if (inet_pton(AF_INET, peer, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(9);
        length = sizeof *v4;
    } else if (inet_pton(AF_INET6, peer, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(9);
        length = sizeof *v6;
    } else {
        return EINVAL;
    }
    int fd = socket(address.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return errno;
    int result = 0;
    struct sockaddr_storage source = {0};
    socklen_t source_length = sizeof source;
    if (connect(fd, (struct sockaddr *)&address, length) != 0) {
        result = errno;
    } else if (getsockname(fd, (struct sockaddr *)&source, &source_length) != 0) {
        result = errno;
    } else {
        const void *bytes = source.ss_family == AF_INET ? (const void *)&((struct sockaddr_in *)&source)->sin_addr
                                                        : (const void *)&((struct sockaddr_in6 *)&source)->sin6_addr;
        if (inet_ntop(source.ss_family, bytes, local, (socklen_t)capacity) == NULL) result = errno;
    }
    close(fd);
    return result;
}

int bahost_address_link_up(const char *address) {
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) != 0) return -1;
    int result = -1;
    char text[INET6_ADDRSTRLEN];
    for (struct ifaddrs *entry = list; entry != NULL && result < 0; entry = entry->ifa_next) {
        if (entry->ifa_addr == NULL) continue;
        const void *bytes;
        if (entry->ifa_addr->sa_family == AF_INET) {
            bytes = &((struct sockaddr_in *)entry->ifa_addr)->sin_addr;
        } else if (entry->ifa_addr->sa_family == AF_INET6) {
            bytes = &((struct sockaddr_in6 *)entry->ifa_addr)->sin6_addr;
        } else {
            continue;
        }
        if (inet_ntop(entry->ifa_addr->sa_family, bytes, text, sizeof text) == NULL) continue;
        if (strcmp(text, address) != 0) continue;
        result = (entry->ifa_flags & IFF_UP) && (entry->ifa_flags & IFF_RUNNING) ? 1 : 0;
    }
    freeifaddrs(list);
    return result;
}

int bahost_socket_local_address(int fd, char *local, size_t capacity) {
    struct sockaddr_storage source = {0};
    socklen_t length = sizeof source;
    if (getsockname(fd, (struct sockaddr *)&source, &length) != 0) return errno;
    const void *bytes;
    if (source.ss_family == AF_INET) {
        bytes = &((struct sockaddr_in *)&source)->sin_addr;
    } else if (source.ss_family == AF_INET6) {
        bytes = &((struct sockaddr_in6 *)&source)->sin6_addr;
    } else {
        return EAFNOSUPPORT;
    }
    return inet_ntop(source.ss_family, bytes, local, (socklen_t)capacity) == NULL ? errno : 0;
}

int64_t bahost_tcp_receive_rtt(int fd, uint32_t *segment) {
    struct tcp_info info;
    socklen_t length = sizeof info;
    memset(&info, 0, sizeof info);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return -1;
    *segment = info.tcpi_rcv_mss;
    return (int64_t)info.tcpi_rcv_rtt;
}

void bahost_set_receive_buffer(int fd, int bytes) {
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}
