/*
 * ucx_settings.c — the UCX settings dsm chooses for its own transport,
 * each applied only where the user's environment has no UCX_* of that
 * name (theirs always wins). Measured between two network namespaces over
 * UCX's tcp (docs/performance.md, "UCX tcp between namespace hosts"):
 *
 *  - NET_DEVICES: UCX opens its tcp transport on every interface (lo and
 *    eth0 on a typical host) and its progress waits on each one's epoll
 *    set, a system call per interface on every poll of a waiting thread,
 *    for an interface no peer is reached through. We name the interfaces
 *    the kernel routes to the job's peers on other hosts (a peer on this
 *    host is reached through shared memory), and every InfiniBand/RoCE
 *    port, so that a verbs network stays in use. A job whose peers all
 *    share this host names none and UCX keeps its own choice.
 *  - TCP_TX_SEG_SIZE (and RX_SEG_SIZE, which UCX wants no smaller): UCX's
 *    tcp sends a message larger than a segment (8 KiB) in fragments; a
 *    page with its headers is just larger, so every page went as two.
 *    A segment the size of a page and its headers sends it as one.
 */
#include "net/ucx.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/job.h"

#define SEG_MIN      (64 * 1024) /* UCX's default receive segment */
#define HEADERS_ROOM 1024        /* dsm's, ours and UCX's headers on a page */

/* Whether addr is one of this host's own (then the peer is here). */
static bool is_local(struct ifaddrs *ifs, struct in_addr addr)
{
    if ((ntohl(addr.s_addr) >> 24) == 127)
        return true;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
            ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == addr.s_addr)
            return true;
    return false;
}

/* The interface the kernel sends to peer from: connect a datagram socket
 * (nothing is sent) and look up the source address it was given. */
static const char *route_to(struct ifaddrs *ifs, const struct sockaddr_in *peer)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return NULL;
    struct sockaddr_in src;
    socklen_t len = sizeof src;
    bool ok = connect(s, (const struct sockaddr *)peer, sizeof *peer) == 0 &&
              getsockname(s, (struct sockaddr *)&src, &len) == 0;
    close(s);
    if (!ok)
        return NULL;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
            ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == src.sin_addr.s_addr)
            return i->ifa_name;
    return NULL;
}

/* Appends name to the comma-separated list unless it is there. */
static void add_name(char *list, size_t size, const char *name)
{
    size_t n = strlen(name), at = 0;
    while (list[at]) {
        size_t end = at + strcspn(list + at, ",");
        if (end - at == n && !memcmp(list + at, name, n))
            return;
        at = list[end] ? end + 1 : end;
    }
    size_t used = strlen(list);
    if (used + n + 2 <= size)
        snprintf(list + used, size - used, "%s%s", used ? "," : "", name);
}

/* Every InfiniBand/RoCE port, as UCX names them (mlx5_0:1). */
static void add_verbs_ports(char *list, size_t size)
{
    DIR *d = opendir("/sys/class/infiniband");
    if (!d)
        return;
    struct dirent *dev;
    while ((dev = readdir(d))) {
        if (dev->d_name[0] == '.')
            continue;
        char path[512];
        snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports", dev->d_name);
        DIR *p = opendir(path);
        if (!p)
            continue;
        struct dirent *port;
        while ((port = readdir(p))) {
            if (port->d_name[0] == '.')
                continue;
            char name[600];
            snprintf(name, sizeof name, "%s:%s", dev->d_name, port->d_name);
            add_name(list, size, name);
        }
        closedir(p);
    }
    closedir(d);
}

static void choose_devices(const struct net_params *p, char *list, size_t size)
{
    list[0] = 0;
    struct ifaddrs *ifs;
    if (getifaddrs(&ifs) < 0)
        return;
    for (int i = 0; i < job()->nodes; i++) {
        if (i == job()->rank || is_local(ifs, p->peers[i].sin_addr))
            continue;
        const char *name = route_to(ifs, &p->peers[i]);
        if (!name) {
            /* A peer we cannot place: leave UCX every interface. */
            list[0] = 0;
            break;
        }
        add_name(list, size, name);
    }
    freeifaddrs(ifs);
    if (list[0])
        add_verbs_ports(list, size);
}

static bool user_set(const char *name)
{
    char var[64];
    snprintf(var, sizeof var, "UCX_%s", name);
    return getenv(var) != NULL;
}

int ucx_choose_settings(const struct net_params *p, size_t page_size,
                        struct ucx_setting out[UCX_SETTINGS_MAX])
{
    int n = 0;
    if (!user_set("NET_DEVICES")) {
        choose_devices(p, out[n].value, sizeof out[n].value);
        if (out[n].value[0])
            out[n++].name = "NET_DEVICES";
    }
    if (!user_set("TCP_TX_SEG_SIZE") && !user_set("TCP_RX_SEG_SIZE")) {
        size_t seg = 8192;
        while (seg < page_size + HEADERS_ROOM)
            seg *= 2;
        out[n].name = "TCP_TX_SEG_SIZE";
        snprintf(out[n++].value, sizeof out->value, "%zu", seg);
        out[n].name = "TCP_RX_SEG_SIZE";
        snprintf(out[n++].value, sizeof out->value, "%zu", seg > SEG_MIN ? seg : (size_t)SEG_MIN);
    }
    return n;
}
