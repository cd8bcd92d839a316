/*
 * kernel_io.c — descriptor I/O whose buffers lie in the shared region, moved
 * through private memory (kernel.c says why).
 *
 * Inputs — read, readv, pread, preadv, preadv2, recv, recvfrom, recvmsg and
 * the addresses of accept and accept4 — go into a private copy that is
 * then copied out; outputs — write, writev, pwrite, pwritev, pwritev2,
 * send, sendto, sendmsg — are copied into one first. A vector (readv,
 * recvmsg) is one private buffer, scattered after the call: the kernel
 * fills a vector in order, so its result is the same. Fortified builds'
 * __read_chk, __pread_chk, __recv_chk and __recvfrom_chk come here too.
 * x86-64's off_t is off64_t: the 64 forms are the same functions.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/state.h"
#include "mem/mem.h"

/* Whether the vector, or any buffer it names, reaches into the region. */
static bool iov_touches(const struct iovec *iov, int cnt)
{
    if (!mem.base || cnt <= 0)
        return false;
    if (mem_kernel_touches(iov, (size_t)cnt * sizeof *iov))
        return true;
    for (int i = 0; i < cnt; i++)
        if (mem_kernel_touches(iov[i].iov_base, iov[i].iov_len))
            return true;
    return false;
}

/* Its bytes; SIZE_MAX, with errno EINVAL as the kernel's, for a count
 * outside [0, IOV_MAX] or bytes past SSIZE_MAX. */
static size_t iov_total(const struct iovec *iov, int cnt)
{
    size_t total = 0;
    if (cnt < 0 || cnt > IOV_MAX) {
        errno = EINVAL;
        return SIZE_MAX;
    }
    for (int i = 0; i < cnt; i++) {
        if (iov[i].iov_len > SSIZE_MAX - total) {
            errno = EINVAL;
            return SIZE_MAX;
        }
        total += iov[i].iov_len;
    }
    return total;
}

/* len bytes between flat and the vector's bytes from `at` on. */
static void iov_copy(const struct iovec *iov, int cnt, size_t at, void *flat, size_t len, bool into_iov)
{
    char *f = flat;
    for (int i = 0; i < cnt && len; i++) {
        if (at >= iov[i].iov_len) {
            at -= iov[i].iov_len;
            continue;
        }
        size_t n = iov[i].iov_len - at < len ? iov[i].iov_len - at : len;
        if (into_iov)
            memcpy((char *)iov[i].iov_base + at, f, n);
        else
            memcpy(f, (char *)iov[i].iov_base + at, n);
        f += n;
        len -= n;
        at = 0;
    }
}

/* One of the C library's calls on private memory: up to len bytes, the
 * transfer's bytes from `done` on. */
struct transfer {
    enum { READ, READV, PREAD, PREADV, PREADV2, RECVFROM,
           WRITE, WRITEV, PWRITE, PWRITEV, PWRITEV2, SENDTO } how;
    void                  *fn;
    int                    fd;
    off_t                  at;    /* pread...: the offset; preadv2, pwritev2: -1 for the file's */
    int                    flags; /* recv..., send..., preadv2, pwritev2 */
    struct sockaddr       *from;  /* recvfrom: private */
    socklen_t             *fromlen;
    const struct sockaddr *to;    /* sendto: private */
    socklen_t              tolen;
};

static ssize_t transfer_call(const struct transfer *t, struct iovec *one, size_t done)
{
    void *copy = one->iov_base;
    size_t len = one->iov_len;
    const struct iovec *v = one; /* private too: the caller's stack may be in the region */
    off_t at = t->at < 0 ? -1 : t->at + (off_t)done;
    switch (t->how) {
    case READ:     return ((ssize_t(*)(int, void *, size_t))t->fn)(t->fd, copy, len);
    case READV:    return ((ssize_t(*)(int, const struct iovec *, int))t->fn)(t->fd, v, 1);
    case PREAD:    return ((ssize_t(*)(int, void *, size_t, off_t))t->fn)(t->fd, copy, len, at);
    case PREADV:   return ((ssize_t(*)(int, const struct iovec *, int, off_t))t->fn)(t->fd, v, 1, at);
    case PREADV2:  return ((ssize_t(*)(int, const struct iovec *, int, off_t, int))t->fn)(t->fd, v, 1, at, t->flags);
    case RECVFROM: return ((ssize_t(*)(int, void *, size_t, int, struct sockaddr *, socklen_t *))t->fn)(
                       t->fd, copy, len, t->flags, done ? NULL : t->from, done ? NULL : t->fromlen);
    case WRITE:    return ((ssize_t(*)(int, const void *, size_t))t->fn)(t->fd, copy, len);
    case WRITEV:   return ((ssize_t(*)(int, const struct iovec *, int))t->fn)(t->fd, v, 1);
    case PWRITE:   return ((ssize_t(*)(int, const void *, size_t, off_t))t->fn)(t->fd, copy, len, at);
    case PWRITEV:  return ((ssize_t(*)(int, const struct iovec *, int, off_t))t->fn)(t->fd, v, 1, at);
    case PWRITEV2: return ((ssize_t(*)(int, const struct iovec *, int, off_t, int))t->fn)(t->fd, v, 1, at, t->flags);
    case SENDTO:   return ((ssize_t(*)(int, const void *, size_t, int, const struct sockaddr *, socklen_t))t->fn)(
                       t->fd, copy, len, t->flags, t->to, t->tolen);
    }
    return -1;
}

/* The whole transfer of the vector's `total` bytes, step by step
 * (mem_kernel_step): an output's bytes are copied in before each call, an
 * input's out after it. Once bytes have moved an error ends it with their
 * count, as the kernel's own partial transfers do. */
static ssize_t transfer(const struct transfer *t, const struct iovec *iov, int cnt, size_t total)
{
    if (total == SIZE_MAX)
        return -1;
    bool output = t->how >= WRITE, more;
    size_t step = mem_kernel_step(t->fd, total, output,
                                  t->how == RECVFROM && (t->flags & MSG_WAITALL), &more);
    struct iovec *one = mem_kernel_take(sizeof *one + step);
    char *copy = (char *)(one + 1);
    size_t done = 0;
    int err = 0;
    do {
        size_t want = total - done < step ? total - done : step;
        if (output)
            iov_copy(iov, cnt, done, copy, want, false);
        *one = (struct iovec){.iov_base = copy, .iov_len = want};
        ssize_t got = transfer_call(t, one, done);
        if (got < 0) {
            err = errno;
            break;
        }
        if (!output) /* a datagram cut by MSG_TRUNC says its whole length */
            iov_copy(iov, cnt, done, copy, (size_t)got < want ? (size_t)got : want, true);
        done += (size_t)got;
        if ((size_t)got != want)
            break;
    } while (more && done < total);
    mem_kernel_give(one);
    if (err && !done) {
        errno = err;
        return -1;
    }
    return (ssize_t)done;
}

static ssize_t transfer_one(struct transfer t, void *buf, size_t n)
{
    struct iovec v = {.iov_base = buf, .iov_len = n};
    return transfer(&t, &v, 1, n);
}

ssize_t read(int fd, void *buf, size_t n)
{
    mem_kernel_fd_here("read", fd);
    MEM_KERNEL_REAL(ssize_t, "read", (int, void *, size_t));
    if (!mem_kernel_touches(buf, n))
        return fn(fd, buf, n);
    return transfer_one((struct transfer){.how = READ, .fn = fn, .fd = fd}, buf, n);
}

ssize_t pread(int fd, void *buf, size_t n, off_t at)
{
    mem_kernel_fd_here("pread", fd);
    MEM_KERNEL_REAL(ssize_t, "pread", (int, void *, size_t, off_t));
    if (!mem_kernel_touches(buf, n))
        return fn(fd, buf, n, at);
    return transfer_one((struct transfer){.how = PREAD, .fn = fn, .fd = fd, .at = at}, buf, n);
}

ssize_t pread64(int fd, void *buf, size_t n, off64_t at) __attribute__((alias("pread")));

ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
    mem_kernel_fd_here("readv", fd);
    MEM_KERNEL_REAL(ssize_t, "readv", (int, const struct iovec *, int));
    if (!iov_touches(iov, cnt))
        return fn(fd, iov, cnt);
    return transfer(&(struct transfer){.how = READV, .fn = fn, .fd = fd}, iov, cnt, iov_total(iov, cnt));
}

ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t at)
{
    mem_kernel_fd_here("preadv", fd);
    MEM_KERNEL_REAL(ssize_t, "preadv", (int, const struct iovec *, int, off_t));
    if (!iov_touches(iov, cnt))
        return fn(fd, iov, cnt, at);
    return transfer(&(struct transfer){.how = PREADV, .fn = fn, .fd = fd, .at = at}, iov, cnt,
                    iov_total(iov, cnt));
}

ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off64_t at) __attribute__((alias("preadv")));

ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t at, int flags)
{
    mem_kernel_fd_here("preadv2", fd);
    MEM_KERNEL_REAL(ssize_t, "preadv2", (int, const struct iovec *, int, off_t, int));
    if (!iov_touches(iov, cnt))
        return fn(fd, iov, cnt, at, flags);
    return transfer(&(struct transfer){.how = PREADV2, .fn = fn, .fd = fd, .at = at < 0 ? -1 : at, .flags = flags},
                    iov, cnt, iov_total(iov, cnt));
}

ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt, off64_t at, int flags) __attribute__((alias("preadv2")));

ssize_t write(int fd, const void *buf, size_t n)
{
    int node = mem_kernel_fd_node(fd);
    if (node >= 0)
        return mem_kernel_ship(node, MEM_STREAM_WRITE, (unsigned)fd, 0, buf, n);
    MEM_KERNEL_REAL(ssize_t, "write", (int, const void *, size_t));
    if (!mem_kernel_touches(buf, n))
        return fn(fd, buf, n);
    return transfer_one((struct transfer){.how = WRITE, .fn = fn, .fd = fd}, (void *)buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t at)
{
    int node = mem_kernel_fd_node(fd);
    if (node >= 0)
        return mem_kernel_ship(node, MEM_STREAM_PWRITE, (unsigned)fd, at, buf, n);
    MEM_KERNEL_REAL(ssize_t, "pwrite", (int, const void *, size_t, off_t));
    if (!mem_kernel_touches(buf, n))
        return fn(fd, buf, n, at);
    return transfer_one((struct transfer){.how = PWRITE, .fn = fn, .fd = fd, .at = at}, (void *)buf, n);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t at) __attribute__((alias("pwrite")));

/* writev on another node's descriptor: its bytes in one write there. */
static ssize_t writev_shipped(int node, int fd, const struct iovec *iov, int cnt)
{
    size_t total = iov_total(iov, cnt);
    if (total == SIZE_MAX)
        return -1;
    char *flat = malloc(total ? total : 1);
    if (!flat) {
        errno = ENOMEM;
        return -1;
    }
    iov_copy(iov, cnt, 0, flat, total, false);
    ssize_t r = mem_kernel_ship(node, MEM_STREAM_WRITE, (unsigned)fd, 0, flat, total);
    int err = errno;
    free(flat);
    errno = err;
    return r;
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    int node = mem_kernel_fd_node(fd);
    if (node >= 0)
        return writev_shipped(node, fd, iov, cnt);
    MEM_KERNEL_REAL(ssize_t, "writev", (int, const struct iovec *, int));
    if (!iov_touches(iov, cnt))
        return fn(fd, iov, cnt);
    return transfer(&(struct transfer){.how = WRITEV, .fn = fn, .fd = fd}, iov, cnt, iov_total(iov, cnt));
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t at)
{
    mem_kernel_fd_here("pwritev", fd);
    MEM_KERNEL_REAL(ssize_t, "pwritev", (int, const struct iovec *, int, off_t));
    if (!iov_touches(iov, cnt))
        return fn(fd, iov, cnt, at);
    return transfer(&(struct transfer){.how = PWRITEV, .fn = fn, .fd = fd, .at = at}, iov, cnt,
                    iov_total(iov, cnt));
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t at) __attribute__((alias("pwritev")));

ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t at, int flags)
{
    mem_kernel_fd_here("pwritev2", fd);
    MEM_KERNEL_REAL(ssize_t, "pwritev2", (int, const struct iovec *, int, off_t, int));
    if (!iov_touches(iov, cnt))
        return fn(fd, iov, cnt, at, flags);
    return transfer(&(struct transfer){.how = PWRITEV2, .fn = fn, .fd = fd, .at = at < 0 ? -1 : at, .flags = flags},
                    iov, cnt, iov_total(iov, cnt));
}

ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t at, int flags) __attribute__((alias("pwritev2")));

/* A socket address the kernel writes (recvfrom, recvmsg, accept): a
 * private one, its length given as the caller's, written back as the
 * kernel leaves it (truncated to the caller's room, the full length said). */
struct peer {
    struct sockaddr_storage addr;
    socklen_t               len;
};

static void peer_in(struct peer *p, const socklen_t *len)
{
    p->len = len && *len < sizeof p->addr ? *len : sizeof p->addr;
}

static void peer_out(const struct peer *p, void *addr, socklen_t *len)
{
    if (!addr || !len)
        return;
    memcpy(addr, &p->addr, p->len < *len ? p->len : *len);
    *len = p->len;
}

ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr, socklen_t *addrlen)
{
    mem_kernel_fd_here("recvfrom", fd);
    MEM_KERNEL_REAL(ssize_t, "recvfrom", (int, void *, size_t, int, struct sockaddr *, socklen_t *));
    if (!mem_kernel_touches(buf, n) && !mem_kernel_touches(addrlen, sizeof *addrlen) &&
        !(addr && addrlen && mem_kernel_touches(addr, *addrlen)))
        return fn(fd, buf, n, flags, addr, addrlen);
    struct peer *from = mem_kernel_take(sizeof *from);
    peer_in(from, addr ? addrlen : NULL);
    ssize_t got = transfer_one((struct transfer){.how = RECVFROM, .fn = fn, .fd = fd, .flags = flags,
                                                 .from = addr && addrlen ? (struct sockaddr *)&from->addr : NULL,
                                                 .fromlen = addr && addrlen ? &from->len : NULL},
                               buf, n);
    int err = errno;
    if (got >= 0)
        peer_out(from, addr, addrlen);
    mem_kernel_give(from);
    errno = err;
    return got;
}

ssize_t recv(int fd, void *buf, size_t n, int flags) { return recvfrom(fd, buf, n, flags, NULL, NULL); }

ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr, socklen_t addrlen)
{
    mem_kernel_fd_here("sendto", fd);
    MEM_KERNEL_REAL(ssize_t, "sendto", (int, const void *, size_t, int, const struct sockaddr *, socklen_t));
    if (!mem_kernel_touches(buf, n) && !mem_kernel_touches(addr, addr ? addrlen : 0))
        return fn(fd, buf, n, flags, addr, addrlen);
    void *to = addr ? mem_kernel_take(addrlen) : NULL;
    if (to)
        memcpy(to, addr, addrlen);
    ssize_t sent = transfer_one((struct transfer){.how = SENDTO, .fn = fn, .fd = fd, .flags = flags,
                                                  .to = to, .tolen = addrlen},
                                (void *)buf, n);
    int err = errno;
    if (to)
        mem_kernel_give(to);
    errno = err;
    return sent;
}

ssize_t send(int fd, const void *buf, size_t n, int flags) { return sendto(fd, buf, n, flags, NULL, 0); }

/* A message header, its vector, name and control data: whether any
 * reaches into the region. */
static bool msg_touches(const struct msghdr *m)
{
    return mem_kernel_touches(m, sizeof *m) || iov_touches(m->msg_iov, (int)m->msg_iovlen) ||
           mem_kernel_touches(m->msg_name, m->msg_namelen) ||
           mem_kernel_touches(m->msg_control, m->msg_controllen);
}

/* A private header for *m: one buffer of `step` bytes, then the name and
 * the control data's room (an output's copied in). */
static struct msghdr *msg_private(const struct msghdr *m, size_t step, bool output)
{
    size_t name = (m->msg_namelen + 15u) & ~(size_t)15u;
    struct msghdr *p = mem_kernel_take(sizeof *p + sizeof(struct iovec) + name + m->msg_controllen + step);
    struct iovec  *v = (struct iovec *)(p + 1);
    char          *at = (char *)(v + 1);
    *p = (struct msghdr){.msg_iov = v, .msg_iovlen = 1, .msg_flags = m->msg_flags};
    if (m->msg_name) {
        p->msg_name = at;
        p->msg_namelen = m->msg_namelen;
        if (output)
            memcpy(at, m->msg_name, m->msg_namelen);
    }
    at += name;
    if (m->msg_control) {
        p->msg_control = at;
        p->msg_controllen = m->msg_controllen;
        if (output)
            memcpy(at, m->msg_control, m->msg_controllen);
    }
    at += m->msg_controllen;
    *v = (struct iovec){.iov_base = at, .iov_len = step};
    if (output)
        iov_copy(m->msg_iov, (int)m->msg_iovlen, 0, at, step, false);
    return p;
}

ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
    mem_kernel_fd_here("sendmsg", fd);
    MEM_KERNEL_REAL(ssize_t, "sendmsg", (int, const struct msghdr *, int));
    if (!mem.base || !msg_touches(m))
        return fn(fd, m, flags);
    struct msghdr h = *m; /* read once, in user space */
    size_t total = iov_total(h.msg_iov, (int)h.msg_iovlen), sent = 0;
    if (total == SIZE_MAX)
        return -1;
    bool more;
    size_t step = mem_kernel_step(fd, total, true, false, &more);
    ssize_t got;
    do { /* the name and control data go with the first step only */
        size_t want = total - sent < step ? total - sent : step;
        struct msghdr *p = msg_private(&h, step, true);
        p->msg_iov->iov_len = want;
        iov_copy(h.msg_iov, (int)h.msg_iovlen, sent, p->msg_iov->iov_base, want, false);
        got = fn(fd, p, flags);
        int err = errno;
        mem_kernel_give(p);
        errno = err;
        if (got < 0)
            break;
        sent += (size_t)got;
        h.msg_name = NULL, h.msg_namelen = 0, h.msg_control = NULL, h.msg_controllen = 0;
        if ((size_t)got != want)
            break;
    } while (more && sent < total);
    return sent ? (ssize_t)sent : got;
}

ssize_t recvmsg(int fd, struct msghdr *m, int flags)
{
    mem_kernel_fd_here("recvmsg", fd);
    MEM_KERNEL_REAL(ssize_t, "recvmsg", (int, struct msghdr *, int));
    if (!mem.base || !msg_touches(m))
        return fn(fd, m, flags);
    size_t total = iov_total(m->msg_iov, (int)m->msg_iovlen);
    if (total == SIZE_MAX)
        return -1;
    bool more;
    size_t step = mem_kernel_step(fd, total, false, flags & MSG_WAITALL, &more);
    struct msghdr *p = msg_private(m, step, false);
    ssize_t got = fn(fd, p, flags); /* one step: a message's control data is its first part's */
    int err = errno;
    if (got >= 0) {
        iov_copy(m->msg_iov, (int)m->msg_iovlen, 0, p->msg_iov->iov_base,
                 (size_t)got < step ? (size_t)got : step, true);
        if (m->msg_name)
            memcpy(m->msg_name, p->msg_name, p->msg_namelen < m->msg_namelen ? p->msg_namelen : m->msg_namelen);
        m->msg_namelen = p->msg_namelen;
        if (m->msg_control)
            memcpy(m->msg_control, p->msg_control, p->msg_controllen);
        m->msg_controllen = p->msg_controllen;
        m->msg_flags = p->msg_flags;
    }
    mem_kernel_give(p);
    errno = err;
    return got;
}

static int accept_through(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags, bool four)
{
    MEM_KERNEL_REAL(int, "accept4", (int, struct sockaddr *, socklen_t *, int));
    static DSM_STATE _Atomic(void *) real_accept;
    int (*plain)(int, struct sockaddr *, socklen_t *) = (int (*)(int, struct sockaddr *, socklen_t *))
        mem_kernel_next(&real_accept, "accept");
    if (!mem_kernel_touches(addrlen, sizeof *addrlen) && !(addr && addrlen && mem_kernel_touches(addr, *addrlen)))
        return four ? fn(fd, addr, addrlen, flags) : plain(fd, addr, addrlen);
    /* A connection the kernel accepted and could not describe would be lost. */
    struct peer *from = mem_kernel_take(sizeof *from);
    peer_in(from, addrlen);
    struct sockaddr *a = addr ? (struct sockaddr *)&from->addr : NULL;
    int s = four ? fn(fd, a, a ? &from->len : NULL, flags) : plain(fd, a, a ? &from->len : NULL);
    int err = errno;
    if (s >= 0)
        peer_out(from, addr, addrlen);
    mem_kernel_give(from);
    errno = err;
    return s;
}

int accept(int fd, struct sockaddr *addr, socklen_t *addrlen)
{
    mem_kernel_fd_here("accept", fd);
    return mem_kernel_fd_opened(accept_through(fd, addr, addrlen, 0, false));
}
int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags)
{
    mem_kernel_fd_here("accept4", fd);
    return mem_kernel_fd_opened(accept_through(fd, addr, addrlen, flags, true));
}

/* _FORTIFY_SOURCE's forms: the bound checked as the C library's does. */

ssize_t __read_chk(int fd, void *buf, size_t n, size_t room)
{
    if (n > room)
        __chk_fail();
    return read(fd, buf, n);
}

ssize_t __pread_chk(int fd, void *buf, size_t n, off_t at, size_t room)
{
    if (n > room)
        __chk_fail();
    return pread(fd, buf, n, at);
}

ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t at, size_t room)
{
    return __pread_chk(fd, buf, n, at, room);
}

ssize_t __recv_chk(int fd, void *buf, size_t n, size_t room, int flags)
{
    if (n > room)
        __chk_fail();
    return recv(fd, buf, n, flags);
}

ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t room, int flags, struct sockaddr *addr,
                       socklen_t *addrlen)
{
    if (n > room)
        __chk_fail();
    return recvfrom(fd, buf, n, flags, addr, addrlen);
}
