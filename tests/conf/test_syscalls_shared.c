/*
 * System calls whose pointers lie in shared memory another node wrote
 * (issue 89): the kernel's own access to a page this node holds invalid or
 * read-only fails with EFAULT instead of faulting, so each call must work
 * through libdsm's wrappers (src/mem/kernel.c), on every node.
 *
 * Node 0 writes a file of FILE_BYTES (a pattern), a symlink to it, and a
 * slot of shared memory per participant, all junk. Then each participant
 * runs the table below on its own slot: every call gets fresh pages of
 * it, which node 0 wrote and this node does not hold (each object from the
 * middle of a page, so that one of two pages or more lies across a page
 * boundary), and the call's result and bytes are checked. Calls the kernel
 * writes into (read, stat, pipe, recvmsg...) and calls it reads from
 * (write, send, a path, a timeout) alike; the vDSO's clocks too.
 * Usage: test_syscalls_shared [group] (one group of the table alone: read,
 * pread_readv_preadv, write, pipe, sockets, stat, stdio, time)
 */
#include "mp_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define FILE_BYTES (320u << 10) /* past one private chunk (256 KiB): read in pieces */
#define SLOT_BYTES (2u << 20)
#define SEED       89
#define SOURCES    8              /* copies of the file's start node 0 writes in each slot */
#define SOURCE_BYTES (16u << 10)

struct shared {
    char  dir[64];    /* the files' directory */
    char *slots;      /* SLOT_BYTES per participant */
};

/* A participant's slot, handed out fresh. Node 0 wrote its first pages:
 * the data file's path, then SOURCES copies of the file's first
 * SOURCE_BYTES, each from the middle of a page (the calls the kernel reads
 * from read them), then junk. */
struct slot {
    const char *data_path;
    char       *sources;
    int         sources_used;
    char  *next, *end;
    size_t page;
    int    me;
    const char *dir;
    const unsigned char *want; /* the file's bytes, private */
};

/* size bytes of pages nobody here has touched, from the middle of a page. */
static void *fresh(struct slot *s, size_t size)
{
    char *p = s->next + s->page / 2;
    size_t span = (s->page / 2 + size + s->page - 1) / s->page * s->page;
    MP_CHECK(s->next + span <= s->end, "participant %d: the slot is too small", s->me);
    s->next += span;
    return p;
}

/* Where slot `base` keeps its path and sources (node 0 writes them). */
static char *slot_source(char *base, size_t page, int k)
{
    return base + page + (size_t)k * (SOURCE_BYTES + page) + page / 2;
}

static void slot_fill(char *base, size_t page, const char *dir, const unsigned char *want)
{
    memset(base, 0xa5, SLOT_BYTES);
    snprintf(base + page - 8, 128, "%s/data", dir); /* across a page boundary */
    for (int k = 0; k < SOURCES; k++)
        memcpy(slot_source(base, page, k), want, SOURCE_BYTES);
}

/* The file's first SOURCE_BYTES, in pages node 0 wrote. */
static const char *source(struct slot *s)
{
    MP_CHECK(s->sources_used < SOURCES, "participant %d: out of sources", s->me);
    return slot_source(s->sources, s->page, s->sources_used++);
}

/* A path in fresh shared memory. */
static char *path_in(struct slot *s, const char *name)
{
    char *p = fresh(s, 128);
    snprintf(p, 128, "%s/%s", s->dir, name);
    return p;
}

static int open_data(struct slot *s)
{
    int fd = open(s->data_path, O_RDONLY);
    MP_CHECK(fd >= 0, "participant %d: open (path in shared memory): %s", s->me, strerror(errno));
    return fd;
}

static void same(struct slot *s, const char *call, const void *got, const void *want, size_t n)
{
    MP_CHECK(memcmp(got, want, n) == 0, "participant %d: %s: the bytes differ", s->me, call);
}

static void call_read(struct slot *s)
{
    int fd = open_data(s);
    char *buf = fresh(s, 4096);
    ssize_t r = read(fd, buf, 4096);
    MP_CHECK(r == 4096, "participant %d: read: %zd (%s)", s->me, r, strerror(errno));
    same(s, "read", buf, s->want, 4096);
    char *big = fresh(s, FILE_BYTES); /* in chunks of a regular file, whole */
    r = read(fd, big, FILE_BYTES);
    MP_CHECK(r == FILE_BYTES - 4096, "participant %d: read %u: %zd (%s)", s->me, FILE_BYTES, r, strerror(errno));
    same(s, "read (large)", big, s->want + 4096, FILE_BYTES - 4096);
    close(fd);
}

static void call_pread_readv_preadv(struct slot *s)
{
    int fd = open_data(s);
    char *buf = fresh(s, 5000);
    ssize_t r = pread(fd, buf, 5000, 1000);
    MP_CHECK(r == 5000, "participant %d: pread: %zd (%s)", s->me, r, strerror(errno));
    same(s, "pread", buf, s->want + 1000, 5000);
    struct iovec *iov = fresh(s, 2 * sizeof *iov);
    iov[0] = (struct iovec){fresh(s, 3000), 3000};
    iov[1] = (struct iovec){fresh(s, 6000), 6000};
    r = readv(fd, iov, 2);
    MP_CHECK(r == 9000, "participant %d: readv: %zd (%s)", s->me, r, strerror(errno));
    same(s, "readv [0]", iov[0].iov_base, s->want, 3000);
    same(s, "readv [1]", iov[1].iov_base, s->want + 3000, 6000);
    iov = fresh(s, 2 * sizeof *iov);
    iov[0] = (struct iovec){fresh(s, 100), 100};
    iov[1] = (struct iovec){fresh(s, 8000), 8000};
    r = preadv(fd, iov, 2, 20000);
    MP_CHECK(r == 8100, "participant %d: preadv: %zd (%s)", s->me, r, strerror(errno));
    same(s, "preadv [0]", iov[0].iov_base, s->want + 20000, 100);
    same(s, "preadv [1]", iov[1].iov_base, s->want + 20100, 8000);
    close(fd);
}

/* write, pwrite, writev from shared memory into a file of the
 * participant's, read back privately. */
static void call_write_pwrite_writev(struct slot *s)
{
    char name[32];
    snprintf(name, sizeof name, "out.%d", s->me);
    char *path = path_in(s, name);
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
    MP_CHECK(fd >= 0, "participant %d: open %s: %s", s->me, path, strerror(errno));
    const char *src = source(s);
    MP_CHECK(write(fd, src, 4096) == 4096, "participant %d: write: %s", s->me, strerror(errno));
    MP_CHECK(pwrite(fd, src + 4096, 4096, 4096) == 4096, "participant %d: pwrite: %s", s->me, strerror(errno));
    struct iovec *iov = fresh(s, 2 * sizeof *iov);
    iov[0] = (struct iovec){(void *)(src + 8192), 2000};
    iov[1] = (struct iovec){(void *)(src + 10192), 2196};
    MP_CHECK(lseek(fd, 8192, SEEK_SET) == 8192, "lseek");
    MP_CHECK(writev(fd, iov, 2) == 4196, "participant %d: writev: %s", s->me, strerror(errno));
    struct flock *lock = fresh(s, sizeof *lock);
    *lock = (struct flock){.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 100};
    MP_CHECK(fcntl(fd, F_SETLK, lock) == 0, "participant %d: fcntl F_SETLK: %s", s->me, strerror(errno));
    lock = fresh(s, sizeof *lock);
    *lock = (struct flock){.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_len = 10}; /* the kernel says the write lock */
    MP_CHECK(fcntl(fd, F_OFD_GETLK, lock) == 0 && lock->l_type == F_WRLCK && lock->l_len == 100,
             "participant %d: fcntl F_OFD_GETLK: %s (type %d, pid %d)", s->me, strerror(errno), lock->l_type,
             (int)lock->l_pid);
    static __thread char back[3 * 4096 + 100];
    MP_CHECK(pread(fd, back, sizeof back, 0) == (ssize_t)sizeof back, "participant %d: pread back", s->me);
    same(s, "write, pwrite, writev", back, s->want, sizeof back);
    close(fd);
    unlink(path);
}

static void call_pipe(struct slot *s)
{
    int *fds = fresh(s, 2 * sizeof(int));
    MP_CHECK(pipe(fds) == 0, "participant %d: pipe: %s", s->me, strerror(errno));
    const char *src = source(s);
    MP_CHECK(write(fds[1], src, 6000) == 6000, "participant %d: write (pipe): %s", s->me, strerror(errno));
    int *queued = fresh(s, sizeof *queued);
    MP_CHECK(ioctl(fds[0], FIONREAD, queued) == 0 && *queued == 6000, "participant %d: ioctl FIONREAD: %s", s->me,
             strerror(errno));
    char *dst = fresh(s, 6000);
    MP_CHECK(read(fds[0], dst, 6000) == 6000, "participant %d: read (pipe): %s", s->me, strerror(errno));
    same(s, "read (pipe)", dst, src, 6000);
    struct pollfd *pf = fresh(s, sizeof *pf);
    *pf = (struct pollfd){.fd = fds[1], .events = POLLOUT};
    MP_CHECK(poll(pf, 1, 0) == 1 && (pf->revents & POLLOUT), "participant %d: poll: %s", s->me, strerror(errno));
    fd_set *set = fresh(s, sizeof *set);
    FD_ZERO(set);
    FD_SET(fds[1], set);
    struct timeval *tv = fresh(s, sizeof *tv);
    *tv = (struct timeval){0, 0};
    MP_CHECK(select(fds[1] + 1, NULL, set, NULL, tv) == 1 && FD_ISSET(fds[1], set),
             "participant %d: select: %s", s->me, strerror(errno));
    int *more = fresh(s, 2 * sizeof(int));
    MP_CHECK(pipe2(more, O_CLOEXEC) == 0, "participant %d: pipe2: %s", s->me, strerror(errno));
    close(more[0]), close(more[1]), close(fds[0]), close(fds[1]);
}

static void call_sockets(struct slot *s)
{
    int *sv = fresh(s, 2 * sizeof(int));
    MP_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "participant %d: socketpair: %s", s->me, strerror(errno));
    const char *out = source(s);
    char *in = fresh(s, 5000);
    MP_CHECK(send(sv[0], out, 5000, 0) == 5000, "participant %d: send: %s", s->me, strerror(errno));
    MP_CHECK(recv(sv[1], in, 5000, MSG_WAITALL) == 5000, "participant %d: recv: %s", s->me, strerror(errno));
    same(s, "send, recv", in, s->want, 5000);
    close(sv[0]), close(sv[1]);

    sv = fresh(s, 2 * sizeof(int));
    MP_CHECK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0, "participant %d: socketpair: %s", s->me, strerror(errno));
    /* The sender autobound to an abstract name, which recvfrom says. */
    sa_family_t family = AF_UNIX;
    MP_CHECK(bind(sv[0], (struct sockaddr *)&family, sizeof family) == 0, "participant %d: bind: %s", s->me,
             strerror(errno));
    MP_CHECK(sendto(sv[0], source(s), 3000, 0, NULL, 0) == 3000, "participant %d: sendto: %s", s->me, strerror(errno));
    struct sockaddr_storage *from = fresh(s, sizeof *from);
    socklen_t *fromlen = fresh(s, sizeof *fromlen);
    *fromlen = sizeof *from;
    in = fresh(s, 3000);
    MP_CHECK(recvfrom(sv[1], in, 3000, 0, (struct sockaddr *)from, fromlen) == 3000,
             "participant %d: recvfrom: %s", s->me, strerror(errno));
    same(s, "sendto, recvfrom", in, s->want, 3000);
    MP_CHECK(*fromlen > sizeof family && *fromlen <= sizeof *from && from->ss_family == AF_UNIX, "participant %d: recvfrom's address", s->me);

    /* sendmsg and recvmsg: header, vector, data and control in shared
     * memory, a descriptor passed (SCM_RIGHTS). */
    int passed = open_data(s);
    struct msghdr *m = fresh(s, sizeof *m);
    struct iovec *iov = fresh(s, 2 * sizeof *iov);
    const char *from_source = source(s);
    iov[0] = (struct iovec){(void *)from_source, 1000};
    iov[1] = (struct iovec){(void *)(from_source + 1000), 2000};
    char *control = fresh(s, CMSG_SPACE(sizeof(int)));
    *m = (struct msghdr){.msg_iov = iov, .msg_iovlen = 2, .msg_control = control,
                         .msg_controllen = CMSG_SPACE(sizeof(int))};
    struct cmsghdr *c = CMSG_FIRSTHDR(m);
    c->cmsg_level = SOL_SOCKET, c->cmsg_type = SCM_RIGHTS, c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &passed, sizeof passed);
    MP_CHECK(sendmsg(sv[0], m, 0) == 3000, "participant %d: sendmsg: %s", s->me, strerror(errno));
    close(passed);
    m = fresh(s, sizeof *m);
    iov = fresh(s, 2 * sizeof *iov);
    iov[0] = (struct iovec){fresh(s, 2500), 2500};
    iov[1] = (struct iovec){fresh(s, 2500), 2500};
    control = fresh(s, CMSG_SPACE(sizeof(int)));
    *m = (struct msghdr){.msg_iov = iov, .msg_iovlen = 2, .msg_control = control,
                         .msg_controllen = CMSG_SPACE(sizeof(int)), .msg_name = fresh(s, sizeof(struct sockaddr_storage)),
                         .msg_namelen = sizeof(struct sockaddr_storage)};
    MP_CHECK(recvmsg(sv[1], m, 0) == 3000, "participant %d: recvmsg: %s", s->me, strerror(errno));
    same(s, "recvmsg [0]", iov[0].iov_base, s->want, 2500);
    same(s, "recvmsg [1]", iov[1].iov_base, s->want + 2500, 500);
    c = CMSG_FIRSTHDR(m);
    MP_CHECK(c && c->cmsg_type == SCM_RIGHTS && !(m->msg_flags & MSG_CTRUNC), "participant %d: recvmsg's control", s->me);
    int got_fd;
    memcpy(&got_fd, CMSG_DATA(c), sizeof got_fd);
    static __thread char head[64];
    MP_CHECK(pread(got_fd, head, sizeof head, 0) == sizeof head, "participant %d: the passed descriptor", s->me);
    same(s, "the passed descriptor", head, s->want, sizeof head);
    close(got_fd), close(sv[0]), close(sv[1]);
}

static void call_stat(struct slot *s)
{
    struct stat *st = fresh(s, sizeof *st);
    MP_CHECK(stat(s->data_path, st) == 0 && st->st_size == FILE_BYTES, "participant %d: stat: %s", s->me,
             strerror(errno));
    st = fresh(s, sizeof *st);
    MP_CHECK(lstat(path_in(s, "link"), st) == 0 && S_ISLNK(st->st_mode), "participant %d: lstat: %s", s->me,
             strerror(errno));
    int fd = open_data(s);
    st = fresh(s, sizeof *st);
    MP_CHECK(fstat(fd, st) == 0 && st->st_size == FILE_BYTES, "participant %d: fstat: %s", s->me, strerror(errno));
    st = fresh(s, sizeof *st);
    MP_CHECK(fstatat(AT_FDCWD, path_in(s, "link"), st, 0) == 0 && S_ISREG(st->st_mode) && st->st_size == FILE_BYTES,
             "participant %d: fstatat: %s", s->me, strerror(errno));
    struct statx *sx = fresh(s, sizeof *sx);
    MP_CHECK(statx(fd, "", AT_EMPTY_PATH, STATX_SIZE, sx) == 0 && sx->stx_size == FILE_BYTES,
             "participant %d: statx: %s", s->me, strerror(errno));
    close(fd);
    char *target = fresh(s, 64);
    if (!target) /* never: said for gcc's -Wnonnull under the sanitizers, which lost track of it */
        abort();
    ssize_t n = readlink(path_in(s, "link"), target, 64);
    MP_CHECK(n == 4 && memcmp(target, "data", 4) == 0, "participant %d: readlink: %zd (%s)", s->me, n, strerror(errno));
    int dir = open(s->dir, O_RDONLY | O_DIRECTORY);
    char *ents = fresh(s, 4096);
    n = getdents64(dir, ents, 4096);
    MP_CHECK(n > 0, "participant %d: getdents64: %s", s->me, strerror(errno));
    bool found = false;
    for (ssize_t at = 0; at < n;) {
        struct dirent64 *e = (struct dirent64 *)(ents + at);
        found |= strcmp(e->d_name, "data") == 0;
        at += e->d_reclen;
    }
    MP_CHECK(found, "participant %d: getdents64 did not list data", s->me);
    close(dir);
    char *cwd = fresh(s, 4096);
    MP_CHECK(getcwd(cwd, 4096) == cwd && cwd[0] == '/', "participant %d: getcwd: %s", s->me, strerror(errno));
    MP_CHECK(access(s->data_path, R_OK) == 0, "participant %d: access: %s", s->me, strerror(errno));
}

static void call_stdio(struct slot *s)
{
    FILE *f = fopen(s->data_path, "r");
    MP_CHECK(f, "participant %d: fopen: %s", s->me, strerror(errno));
    char *sbuf = fresh(s, 4096);
    MP_CHECK(setvbuf(f, sbuf, _IOFBF, 4096) == 0, "participant %d: setvbuf", s->me);
    char *buf = fresh(s, 100);
    MP_CHECK(fread(buf, 1, 100, f) == 100, "participant %d: fread (100): %s", s->me, strerror(errno));
    same(s, "fread (through a shared stream buffer)", buf, s->want, 100);
    buf = fresh(s, 40000); /* more than the stream's buffer: straight from the descriptor */
    MP_CHECK(fread(buf, 4, 10000, f) == 10000, "participant %d: fread (40000): %s", s->me, strerror(errno));
    same(s, "fread (large)", buf, s->want + 100, 40000);
    fclose(f);
}

static void call_time_and_identity(struct slot *s)
{
    struct timespec *ts = fresh(s, sizeof *ts);
    MP_CHECK(clock_gettime(CLOCK_REALTIME, ts) == 0 && ts->tv_sec > 1000000000, "participant %d: clock_gettime",
             s->me);
    ts = fresh(s, sizeof *ts); /* not the vDSO's: a system call */
    MP_CHECK(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, ts) == 0 && (ts->tv_sec || ts->tv_nsec),
             "participant %d: clock_gettime (CPU time): %s", s->me, strerror(errno));
    struct timeval *tv = fresh(s, sizeof *tv);
    MP_CHECK(gettimeofday(tv, NULL) == 0 && tv->tv_sec > 1000000000, "participant %d: gettimeofday", s->me);
    time_t *t = fresh(s, sizeof *t);
    MP_CHECK(time(t) > 1000000000 && *t > 1000000000, "participant %d: time", s->me);
    struct timespec *req = fresh(s, 2 * sizeof *req);
    req[0] = (struct timespec){0, 1000};
    MP_CHECK(nanosleep(&req[0], &req[1]) == 0, "participant %d: nanosleep: %s", s->me, strerror(errno));
    struct utsname *u = fresh(s, sizeof *u);
    MP_CHECK(uname(u) == 0 && strcmp(u->sysname, "Linux") == 0, "participant %d: uname", s->me);
    struct rusage *ru = fresh(s, sizeof *ru);
    MP_CHECK(getrusage(RUSAGE_SELF, ru) == 0 && ru->ru_maxrss > 0, "participant %d: getrusage", s->me);
    struct sysinfo *si = fresh(s, sizeof *si);
    MP_CHECK(sysinfo(si) == 0 && si->totalram > 0, "participant %d: sysinfo", s->me);
    unsigned char *r = fresh(s, 6000);
    MP_CHECK(getrandom(r, 6000, 0) == 6000, "participant %d: getrandom: %s", s->me, strerror(errno));
}

static const struct {
    const char *name;
    void      (*run)(struct slot *);
} calls[] = {
    {"read", call_read},         {"pread_readv_preadv", call_pread_readv_preadv},
    {"write", call_write_pwrite_writev}, {"pipe", call_pipe},
    {"sockets", call_sockets},   {"stat", call_stat},
    {"stdio", call_stdio},       {"time", call_time_and_identity},
};
#define NCALLS (sizeof calls / sizeof calls[0])

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), nodes = dsm_nodes();
    const char *only = argc > 1 ? argv[1] : NULL;
    size_t page = dsm_page_size();
    unsigned char *want = malloc(FILE_BYTES); /* private, on every participant */
    MP_CHECK(want, "malloc");
    mp_fill(want, FILE_BYTES, SEED);
    struct shared sh = {0};
    if (me == 0) {
        snprintf(sh.dir, sizeof sh.dir, "/tmp/dsm_syscalls.XXXXXX");
        MP_CHECK(mkdtemp(sh.dir), "mkdtemp: %s", strerror(errno));
        char path[128];
        snprintf(path, sizeof path, "%s/data", sh.dir);
        FILE *f = fopen(path, "w");
        MP_CHECK(f && fwrite(want, 1, FILE_BYTES, f) == FILE_BYTES && fclose(f) == 0, "writing %s", path);
        char link[128];
        snprintf(link, sizeof link, "%s/link", sh.dir);
        MP_CHECK(symlink("data", link) == 0, "symlink: %s", strerror(errno));
        sh.slots = dsm_malloc((size_t)nodes * SLOT_BYTES);
        MP_CHECK(sh.slots, "dsm_malloc");
        for (int k = 0; k < nodes; k++) /* node 0's pages, everywhere */
            slot_fill(sh.slots + (size_t)k * SLOT_BYTES, page, sh.dir, want);
    }
    dsm_bcast(&sh, sizeof sh, 0);
    char *mine = sh.slots + (size_t)me * SLOT_BYTES;
    struct slot s = {.data_path = mine + page - 8, .sources = mine,
                     .next = slot_source(mine, page, SOURCES) - page / 2, .end = sh.slots + (size_t)(me + 1) * SLOT_BYTES,
                     .page = page, .me = me, .dir = sh.dir, .want = want};
    size_t ran = 0;
    for (size_t i = 0; i < NCALLS; i++)
        if (!only || strcmp(only, calls[i].name) == 0) {
            calls[i].run(&s);
            ran++;
        }
    MP_CHECK(ran, "no group of calls named %s", only);
    dsm_barrier();
    if (me == 0) {
        char path[128];
        snprintf(path, sizeof path, "%s/link", sh.dir);
        unlink(path);
        snprintf(path, sizeof path, "%s/data", sh.dir);
        unlink(path);
        rmdir(sh.dir);
        printf("syscalls_shared: %zu groups of calls on %d participants: ok\n", ran, nodes);
    }
    free(want);
    dsm_finish();
    return 0;
}
