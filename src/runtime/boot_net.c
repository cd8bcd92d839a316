/*
 * boot_net.c — choosing and binding a node's address, and the datagram size
 * its interface carries; the join itself (boot_join) and the launch clock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "supervise/peer_process.h"
#include "net/wire.h"        /* the size of its header, for the datagram size only */
#include "base/launch.h"
#include "runtime/bootstrap.h"

#define SOCKET_BUFFER   (4 << 20)
#define LOOPBACK_DGRAM  61440   /* measured on loopback (README, DSM_NET_DATAGRAM) */
#define MIN_DGRAM       1024
#define IP_UDP_HEADERS  (20 + 8)

void boot_join(struct net_params *np, const struct dsm_config *cfg, int *argc, char ***argv)
{
    if (boot_env_present())
        boot_env(np);
    else if (boot_pmix_present())
        boot_pmix(np, cfg, argc, argv);
    else
        boot_solo(np);
}

void boot_done(struct net_params *np)
{
    free(np->peers);
    np->peers = NULL;
}

static uint64_t clock_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Under dsmrun, from its start (DSM_LAUNCH_NS, wall clock: hosts whose
 * clocks disagree show the disagreement too). Otherwise from this
 * process's start: field 22 of /proc/self/stat, in clock ticks since boot. */
uint64_t boot_since_launch_ns(void)
{
    const char *launch = getenv(BOOT_ENV_LAUNCH);
    if (launch) {
        char *end;
        unsigned long long t = strtoull(launch, &end, 10);
        uint64_t now = clock_of(CLOCK_REALTIME);
        if (end != launch && !*end && t <= now)
            return now - t;
    }
    char state;
    int ppid;
    unsigned long long start;
    uint64_t cpu_ns;
    if (!proc_parse_stat("/proc/self/stat", &state, &ppid, &start, &cpu_ns))
        return 0;
    long hz = sysconf(_SC_CLK_TCK);
    uint64_t started = hz > 0 ? start * (1000000000ull / (uint64_t)hz) : 0;
    uint64_t now = clock_of(CLOCK_BOOTTIME);
    return now > started ? now - started : 0;
}

int boot_bind(struct in_addr addr, struct sockaddr_in *bound)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr = addr};
    socklen_t len = sizeof *bound;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    /* As dsmrun does: the FORCE variants pass net.core.rmem_max when allowed. */
    int size = SOCKET_BUFFER;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) < 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size) < 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        getsockname(fd, (struct sockaddr *)bound, &len) < 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    return fd;
}

/* The interface of the default route, from /proc/net/route ("Iface
 * Destination ..." with destination 00000000). */
static int default_route_iface(char *name, size_t len)
{
    FILE *f = fopen("/proc/net/route", "r");
    char line[256], ifname[IFNAMSIZ + 1];
    unsigned long dest;
    int found = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%16s %lx", ifname, &dest) == 2 && dest == 0) {
            snprintf(name, len, "%s", ifname);
            found = 0;
            break;
        }
    fclose(f);
    return found;
}

/* The first IPv4 address of an interface that is up, by name; or with name
 * NULL, of any interface that is up and not the loopback. */
static int iface_addr(const char *name, struct in_addr *out)
{
    struct ifaddrs *list;
    int found = -1;
    if (getifaddrs(&list) < 0)
        return -1;
    for (struct ifaddrs *i = list; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP))
            continue;
        if (name ? strcmp(i->ifa_name, name) : (i->ifa_flags & IFF_LOOPBACK) != 0)
            continue;
        *out = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
        found = 0;
        break;
    }
    freeifaddrs(list);
    return found;
}

/* The address this host sends from toward the host the job was launched
 * from, where the resource manager names it (Slurm's
 * SLURM_LAUNCH_NODE_IPADDR, srun's host): the interface that reaches it,
 * as dsmrun's agents bind the one their ssh came in on. A connected UDP
 * socket asks the kernel's routing without sending anything. */
static int launch_route_addr(struct in_addr *out)
{
    const char *ip = getenv("SLURM_LAUNCH_NODE_IPADDR");
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(9)}, from;
    socklen_t len = sizeof from;
    if (!ip || inet_pton(AF_INET, ip, &to.sin_addr) != 1)
        return -1;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int r = connect(fd, (struct sockaddr *)&to, sizeof to) == 0 &&
            getsockname(fd, (struct sockaddr *)&from, &len) == 0 &&
            from.sin_addr.s_addr != htonl(INADDR_ANY) ? 0 : -1;
    close(fd);
    if (r == 0)
        *out = from.sin_addr;
    return r;
}

int boot_pick_addr(const char *want, int all_local, struct in_addr *out, char *err,
                   size_t errlen)
{
    if (want && *want) {
        if (!strcmp(want, "any")) {
            out->s_addr = htonl(INADDR_ANY);
            return 0;
        }
        if (inet_pton(AF_INET, want, out) == 1 || iface_addr(want, out) == 0)
            return 0;
        snprintf(err, errlen, "DSM_NET_BIND=%s is neither an IPv4 address nor an interface "
                 "with one that is up", want);
        return -EINVAL;
    }
    if (all_local) {
        out->s_addr = htonl(INADDR_LOOPBACK);
        return 0;
    }
    char route_if[IFNAMSIZ + 1];
    if (launch_route_addr(out) == 0 ||
        (default_route_iface(route_if, sizeof route_if) == 0 && iface_addr(route_if, out) == 0) ||
        iface_addr(NULL, out) == 0)
        return 0;
    snprintf(err, errlen, "no interface toward the other hosts has an IPv4 address; "
             "set DSM_NET_BIND");
    return -EADDRNOTAVAIL;
}

/* The MTU of the interface holding addr; for INADDR_ANY the smallest of the
 * interfaces that are up, the loopback aside. 0 when unknown. */
static int iface_mtu(struct in_addr addr)
{
    struct ifaddrs *list;
    int mtu = 0;
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return 0;
    if (getifaddrs(&list) < 0) {
        close(s);
        return 0;
    }
    for (struct ifaddrs *i = list; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP))
            continue;
        struct in_addr a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
        bool any = addr.s_addr == htonl(INADDR_ANY);
        if (any ? (i->ifa_flags & IFF_LOOPBACK) != 0 : a.s_addr != addr.s_addr)
            continue;
        struct ifreq req;
        memset(&req, 0, sizeof req);
        snprintf(req.ifr_name, sizeof req.ifr_name, "%s", i->ifa_name);
        if (ioctl(s, SIOCGIFMTU, &req) == 0 && req.ifr_mtu > 0 &&
            (mtu == 0 || req.ifr_mtu < mtu))
            mtu = req.ifr_mtu;
        if (!any)
            break;
    }
    freeifaddrs(list);
    close(s);
    return mtu;
}

size_t boot_datagram(int fd)
{
    struct sockaddr_in self;
    socklen_t len = sizeof self;
    if (getsockname(fd, (struct sockaddr *)&self, &len) < 0 || self.sin_family != AF_INET)
        return LOOPBACK_DGRAM;
    if ((ntohl(self.sin_addr.s_addr) >> 24) == 127)
        return LOOPBACK_DGRAM;
    int mtu = iface_mtu(self.sin_addr);
    if (mtu <= 0)
        return LOOPBACK_DGRAM;  /* no interface of its own: as before */
    long payload = (long)mtu - IP_UDP_HEADERS - (long)sizeof(struct wire_hdr);
    if (payload < MIN_DGRAM)
        payload = MIN_DGRAM;     /* the network fragments; it still works */
    if (payload > LOOPBACK_DGRAM)
        payload = LOOPBACK_DGRAM;
    return (size_t)payload;
}
