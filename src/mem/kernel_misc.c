/*
 * kernel_misc.c — the other calls whose results (or arguments) a program
 * may keep in the shared region, through private memory (kernel.c says
 * why): pipe, pipe2, socketpair; poll, ppoll, select, pselect,
 * epoll_wait; nanosleep, clock_nanosleep; clock_gettime and gettimeofday
 * (their vDSO forms store in user space, which faults as the program's own
 * stores do, but a clock the vDSO does not serve is a system call);
 * getsockname, getpeername, getsockopt, setsockopt; uname, getrusage,
 * getrlimit, sysinfo, times, statfs, fstatfs, getrandom, getentropy.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/times.h>
#include <sys/utsname.h>
#include <time.h>

#include "base/state.h"
#include "mem/mem.h"

static int pipe_here(int fds[2])
{
    MEM_KERNEL_REAL(int, "pipe", (int *));
    MEM_KERNEL_THROUGH(NULL, fds, 2 * sizeof *fds, false, fn(O));
}

int pipe(int fds[2]) { return mem_kernel_fds_opened(pipe_here(fds), fds); }

static int pipe2_here(int fds[2], int flags)
{
    MEM_KERNEL_REAL(int, "pipe2", (int *, int));
    MEM_KERNEL_THROUGH(NULL, fds, 2 * sizeof *fds, false, fn(O, flags));
}

int pipe2(int fds[2], int flags) { return mem_kernel_fds_opened(pipe2_here(fds, flags), fds); }

static int socketpair_here(int domain, int type, int protocol, int fds[2])
{
    MEM_KERNEL_REAL(int, "socketpair", (int, int, int, int *));
    MEM_KERNEL_THROUGH(NULL, fds, 2 * sizeof *fds, false, fn(domain, type, protocol, O));
}

int socketpair(int domain, int type, int protocol, int fds[2]) { return mem_kernel_fds_opened(socketpair_here(domain, type, protocol, fds), fds); }

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    MEM_KERNEL_REAL(int, "poll", (struct pollfd *, nfds_t, int));
    MEM_KERNEL_THROUGH(NULL, fds, n * sizeof *fds, true, fn(O, n, timeout));
}

int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout, const sigset_t *mask)
{
    MEM_KERNEL_REAL(int, "ppoll", (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *));
    if (mem_kernel_touches(timeout, sizeof *timeout) || mem_kernel_touches(mask, sizeof *mask)) {
        struct { struct timespec t; sigset_t m; } *in = mem_kernel_take(sizeof *in);
        if (timeout)
            in->t = *timeout;
        if (mask)
            in->m = *mask;
        int r = ppoll(fds, n, timeout ? &in->t : NULL, mask ? &in->m : NULL);
        int err = errno;
        mem_kernel_give(in);
        errno = err;
        return r;
    }
    MEM_KERNEL_THROUGH(NULL, fds, n * sizeof *fds, true, fn(O, n, timeout, mask));
}

/* _FORTIFY_SOURCE's forms: the bound checked as the C library's does. */
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t room)
{
    if (room / sizeof *fds < n)
        __chk_fail();
    return poll(fds, n, timeout);
}

int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *timeout, const sigset_t *mask, size_t room)
{
    if (room / sizeof *fds < n)
        __chk_fail();
    return ppoll(fds, n, timeout, mask);
}

/* select's and pselect's sets and time, copied in and back. */
struct select_args {
    fd_set          set[3];
    struct timeval  tv;
    struct timespec ts;
    sigset_t        mask;
};

static bool select_touches(fd_set *sets[3], const void *time, size_t time_size, const sigset_t *mask)
{
    for (int i = 0; i < 3; i++)
        if (mem_kernel_touches(sets[i], sizeof *sets[i]))
            return true;
    return mem_kernel_touches(time, time_size) || mem_kernel_touches(mask, sizeof *mask);
}

static struct select_args *select_in(fd_set *sets[3], fd_set *copies[3])
{
    struct select_args *a = mem_kernel_take(sizeof *a);
    for (int i = 0; i < 3; i++) {
        copies[i] = sets[i] ? &a->set[i] : NULL;
        if (sets[i])
            a->set[i] = *sets[i];
    }
    return a;
}

static int select_out(struct select_args *a, fd_set *sets[3], int r)
{
    int err = errno;
    for (int i = 0; i < 3 && r >= 0; i++)
        if (sets[i])
            *sets[i] = a->set[i];
    mem_kernel_give(a);
    errno = err;
    return r;
}

int select(int n, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *timeout)
{
    MEM_KERNEL_REAL(int, "select", (int, fd_set *, fd_set *, fd_set *, struct timeval *));
    fd_set *sets[3] = {rd, wr, ex}, *copies[3];
    if (!select_touches(sets, timeout, sizeof *timeout, NULL))
        return fn(n, rd, wr, ex, timeout);
    struct select_args *a = select_in(sets, copies);
    if (timeout)
        a->tv = *timeout;
    int r = fn(n, copies[0], copies[1], copies[2], timeout ? &a->tv : NULL);
    if (timeout) /* Linux leaves the time not slept there, whatever the result */
        *timeout = a->tv;
    return select_out(a, sets, r);
}

int pselect(int n, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *timeout, const sigset_t *mask)
{
    MEM_KERNEL_REAL(int, "pselect", (int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *));
    fd_set *sets[3] = {rd, wr, ex}, *copies[3];
    if (!select_touches(sets, timeout, sizeof *timeout, mask))
        return fn(n, rd, wr, ex, timeout, mask);
    struct select_args *a = select_in(sets, copies);
    if (timeout)
        a->ts = *timeout;
    if (mask)
        a->mask = *mask;
    int r = fn(n, copies[0], copies[1], copies[2], timeout ? &a->ts : NULL, mask ? &a->mask : NULL);
    return select_out(a, sets, r);
}

int epoll_wait(int epfd, struct epoll_event *events, int max, int timeout)
{
    MEM_KERNEL_REAL(int, "epoll_wait", (int, struct epoll_event *, int, int));
    if (max <= 0 || !mem_kernel_touches(events, (size_t)max * sizeof *events))
        return fn(epfd, events, max, timeout);
    struct mem_kernel_out o;
    mem_kernel_out_begin(&o, NULL, events, (size_t)max * sizeof *events, false);
    int r = fn(epfd, o.copy, max, timeout);
    mem_kernel_out_end(&o, r > 0, r > 0 ? (size_t)r * sizeof *events : 0);
    return r;
}

/* The time left, which the kernel writes only when a signal cut the
 * sleep short (interrupted: whether it did). */
static int sleep_through(struct timespec *rem, int r, bool interrupted, struct timespec *copy)
{
    int err = errno;
    if (interrupted && rem)
        *rem = copy[1];
    mem_kernel_give(copy);
    errno = err;
    return r;
}

int nanosleep(const struct timespec *req, struct timespec *rem)
{
    MEM_KERNEL_REAL(int, "nanosleep", (const struct timespec *, struct timespec *));
    if (!mem_kernel_touches(req, sizeof *req) && !mem_kernel_touches(rem, sizeof *rem))
        return fn(req, rem);
    struct timespec *copy = mem_kernel_take(2 * sizeof *copy);
    copy[0] = *req;
    int r = fn(&copy[0], rem ? &copy[1] : NULL);
    return sleep_through(rem, r, r < 0 && errno == EINTR, copy);
}

int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem)
{
    MEM_KERNEL_REAL(int, "clock_nanosleep", (clockid_t, int, const struct timespec *, struct timespec *));
    if (!mem_kernel_touches(req, sizeof *req) && !mem_kernel_touches(rem, sizeof *rem))
        return fn(clock, flags, req, rem);
    struct timespec *copy = mem_kernel_take(2 * sizeof *copy);
    copy[0] = *req;
    int r = fn(clock, flags, &copy[0], rem ? &copy[1] : NULL);
    return sleep_through(rem, r, r == EINTR && !(flags & TIMER_ABSTIME), copy);
}

int clock_gettime(clockid_t clock, struct timespec *ts)
{
    MEM_KERNEL_REAL(int, "clock_gettime", (clockid_t, struct timespec *));
    MEM_KERNEL_THROUGH(NULL, ts, sizeof *ts, false, fn(clock, O));
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    MEM_KERNEL_REAL(int, "gettimeofday", (struct timeval *, void *));
    if (mem_kernel_touches(tz, sizeof(struct timezone))) { /* obsolete, and rare: its own copy */
        struct mem_kernel_out o;
        mem_kernel_out_begin(&o, NULL, tz, sizeof(struct timezone), false);
        int r = gettimeofday(tv, o.copy);
        mem_kernel_out_end(&o, r >= 0, sizeof(struct timezone));
        return r;
    }
    MEM_KERNEL_THROUGH(NULL, tv, sizeof *tv, false, fn(O, tz));
}

int getsockopt(int fd, int level, int name, void *restrict value, socklen_t *restrict len)
{
    MEM_KERNEL_REAL(int, "getsockopt", (int, int, int, void *, socklen_t *));
    if (!mem_kernel_touches(len, sizeof *len) && !(value && len && mem_kernel_touches(value, *len)))
        return fn(fd, level, name, value, len);
    socklen_t room = len ? *len : 0;
    struct mem_kernel_out o;
    mem_kernel_out_begin(&o, NULL, value, room, false);
    socklen_t *said = mem_kernel_take(sizeof *said);
    *said = room;
    int r = fn(fd, level, name, o.copy, len ? said : NULL);
    int err = errno;
    if (r >= 0 && len)
        *len = *said;
    mem_kernel_give(said);
    errno = err;
    mem_kernel_out_end(&o, r >= 0, r >= 0 && *said < room ? *said : room);
    return r;
}

int setsockopt(int fd, int level, int name, const void *value, socklen_t len)
{
    MEM_KERNEL_REAL(int, "setsockopt", (int, int, int, const void *, socklen_t));
    if (!mem_kernel_touches(value, len))
        return fn(fd, level, name, value, len);
    void *copy = mem_kernel_take(len);
    memcpy(copy, value, len);
    int r = fn(fd, level, name, copy, len);
    int err = errno;
    mem_kernel_give(copy);
    errno = err;
    return r;
}

/* getsockname and getpeername: an address of at most *len bytes. */
static int name_through(int (*fn)(int, struct sockaddr *, socklen_t *), int fd, struct sockaddr *addr,
                        socklen_t *len)
{
    if (!mem_kernel_touches(len, sizeof *len) && !(addr && len && mem_kernel_touches(addr, *len)))
        return fn(fd, addr, len);
    struct { struct sockaddr_storage addr; socklen_t len; } *p = mem_kernel_take(sizeof *p);
    p->len = *len < sizeof p->addr ? *len : sizeof p->addr;
    int r = fn(fd, (struct sockaddr *)&p->addr, &p->len);
    int err = errno;
    if (r >= 0) {
        memcpy(addr, &p->addr, p->len < *len ? p->len : *len);
        *len = p->len;
    }
    mem_kernel_give(p);
    errno = err;
    return r;
}

int getsockname(int fd, struct sockaddr *restrict addr, socklen_t *restrict len)
{
    MEM_KERNEL_REAL(int, "getsockname", (int, struct sockaddr *, socklen_t *));
    return name_through(fn, fd, addr, len);
}

int getpeername(int fd, struct sockaddr *restrict addr, socklen_t *restrict len)
{
    MEM_KERNEL_REAL(int, "getpeername", (int, struct sockaddr *, socklen_t *));
    return name_through(fn, fd, addr, len);
}

int uname(struct utsname *u)
{
    MEM_KERNEL_REAL(int, "uname", (struct utsname *));
    MEM_KERNEL_THROUGH(NULL, u, sizeof *u, false, fn(O));
}

int getrusage(__rusage_who_t who, struct rusage *ru)
{
    MEM_KERNEL_REAL(int, "getrusage", (__rusage_who_t, struct rusage *));
    MEM_KERNEL_THROUGH(NULL, ru, sizeof *ru, false, fn(who, O));
}

int getrlimit(__rlimit_resource_t resource, struct rlimit *rl)
{
    MEM_KERNEL_REAL(int, "getrlimit", (__rlimit_resource_t, struct rlimit *));
    MEM_KERNEL_THROUGH(NULL, rl, sizeof *rl, false, fn(resource, O));
}

int getrlimit64(__rlimit_resource_t resource, struct rlimit64 *rl) { return getrlimit(resource, (struct rlimit *)rl); }

int sysinfo(struct sysinfo *info)
{
    MEM_KERNEL_REAL(int, "sysinfo", (struct sysinfo *));
    MEM_KERNEL_THROUGH(NULL, info, sizeof *info, false, fn(O));
}

clock_t times(struct tms *t)
{
    MEM_KERNEL_REAL(clock_t, "times", (struct tms *));
    MEM_KERNEL_THROUGH(NULL, t, sizeof *t, false, fn(O));
}

int statfs(const char *path, struct statfs *st)
{
    MEM_KERNEL_REAL(int, "statfs", (const char *, struct statfs *));
    MEM_KERNEL_THROUGH(path, st, sizeof *st, false, fn(P, O));
}

int fstatfs(int fd, struct statfs *st)
{
    MEM_KERNEL_REAL(int, "fstatfs", (int, struct statfs *));
    MEM_KERNEL_THROUGH(NULL, st, sizeof *st, false, fn(fd, O));
}

int statfs64(const char *path, struct statfs64 *st) { return statfs(path, (struct statfs *)st); }
int fstatfs64(int fd, struct statfs64 *st) { return fstatfs(fd, (struct statfs *)st); }

ssize_t getrandom(void *buf, size_t n, unsigned flags)
{
    MEM_KERNEL_REAL(ssize_t, "getrandom", (void *, size_t, unsigned));
    if (!mem_kernel_touches(buf, n))
        return fn(buf, n, flags);
    struct mem_kernel_out o;
    mem_kernel_out_begin(&o, NULL, buf, n, false);
    ssize_t got = fn(o.copy, n, flags);
    mem_kernel_out_end(&o, got > 0, got > 0 ? (size_t)got : 0);
    return got;
}

int getentropy(void *buf, size_t n)
{
    MEM_KERNEL_REAL(int, "getentropy", (void *, size_t));
    MEM_KERNEL_THROUGH(NULL, buf, n, false, fn(O, n));
}
