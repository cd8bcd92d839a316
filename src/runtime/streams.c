/*
 * streams.c — a program's descriptors and stdio streams are the job's,
 * not a node's (issue 89; docs/unmodified-programs.md, "Descriptors and
 * streams").
 *
 * A descriptor or FILE * is the kernel's and the C library's state of one
 * process, and a dsmcc program's threads run in a process per node: main
 * fopens a file on node 0 and a thread on node 1 that fprintfs to it hands
 * node 1's C library a pointer into node 0's private heap. So the node that
 * opened a descriptor or stream does the output for the others (function
 * shipping): the caller formats into its own memory and sends one message
 * per call (the bytes, up to ipc_message_room a piece), the owner does one
 * write or fwrite per message on its server thread (it may block: a pipe,
 * a terminal) and answers with the result and errno. Lines from different
 * nodes thus stay whole, and a thread's calls keep their order. Input
 * through another node's descriptor or stream is refused in one line
 * (src/mem/kernel_streams.c).
 *
 * Which is another node's. Descriptor numbers: after the start, a number
 * a node's open, socket, pipe, accept or dup returns is moved into that
 * node's band, base + rank * band up to band numbers, at the top of the
 * numbers the hard limit allows (fd_bands_start): the number alone names
 * its node, with no table to keep and no message. Numbers below the base
 * (0, 1, 2, what dsm, UCX and libraries
 * opened before the start) are each node's own. Streams: a FILE * is the
 * address of a block of its node's private heap, and nodes' heaps lie at
 * the same addresses, so a node's fopen can return the address of a
 * stream another node has open. Every stream opened after the start is
 * claimed at node 0, which keeps the job's table and refuses an address
 * another node holds (the opener then makes another stream on the same
 * descriptor, kernel_streams.c), and then made known to every other node,
 * each acknowledging before the fopen returns: any thread that can have
 * the pointer (through shared memory, after the fopen) finds it in its
 * node's table. A fclose is told to every node without waiting: a node
 * forgets an address only for the node that claimed it.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <unistd.h>

#include "base/job.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/state.h"
#include "ipc/ipc.h"
#include "mem/mem.h"
#include "runtime/runtime.h"

/* The bands lie at the top of the descriptor numbers, below the hard
 * limit (at most STREAMS_FD_TOP), each STREAMS_FD_BAND long (less when
 * the limit leaves less above STREAMS_FD_LOW): far above what the kernel
 * hands out first, and so above what dsm, UCX and the libraries opened
 * before the start. */
#define STREAMS_FD_TOP  65536
#define STREAMS_FD_BAND 1024
#define STREAMS_FD_LOW  1024

/* One message's fixed part: the calls (aux: the op) and their answers. */
struct stream_io_msg {
    uint64_t token;
    uint64_t key;   /* the descriptor, or the FILE's address */
    int64_t  at;    /* pwrite's offset */
};
struct stream_done_msg {
    uint64_t token;
    int64_t  result;
    int32_t  err;
};
/* aux of RUNTIME_STREAM_OWN */
enum { STREAM_FORGET, STREAM_CLAIM, STREAM_KNOW };

/* What a call's answer carries (stream_done_msg without its token). */
struct stream_result {
    int64_t result;
    int32_t err;
};

struct stream_file {
    uint64_t f;
    int      node;
};

struct stream_request {
    int                    src;
    unsigned               op;
    struct stream_io_msg   m;
    unsigned char         *data;
    size_t                 len;
    struct stream_request *next;
};

static DSM_STATE struct {
    bool                   on;
    int                    base, band; /* node r's descriptors: base + r * band, band of them */
    pthread_mutex_t        lock;       /* everything below */
    struct stream_file    *files;      /* node 0: the job's; elsewhere: as told */
    size_t                 nfiles, cap;
    _Atomic size_t         known;      /* nfiles, read without the lock */
    pthread_cond_t         work;
    struct stream_request *head, **tail;
} st = {.lock = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER, .tail = &st.head};

/* ---- the table of streams ------------------------------------------------- */

/* Before the job has started (a library's constructor that dsm's own
 * start loads: UCX's, libnuma's) the calls are this node's: the network
 * may not be up yet, and no other node can hold what is opened then. */
static bool job_running(void) { return job()->started; }


static struct stream_file *file_find(uint64_t f)
{
    for (size_t i = 0; i < st.nfiles; i++)
        if (st.files[i].f == f)
            return &st.files[i];
    return NULL;
}

static void file_set(uint64_t f, int node)
{
    struct stream_file *e = file_find(f);
    if (!e) {
        if (st.nfiles == st.cap)
            st.files = libheap_grow(st.files, &st.cap, sizeof *st.files, 64, "for the job's table of streams");
        e = &st.files[st.nfiles++];
        atomic_store(&st.known, st.nfiles);
    }
    *e = (struct stream_file){f, node};
}

static void file_forget(uint64_t f, int node)
{
    struct stream_file *e = file_find(f);
    if (e && e->node == node) {
        *e = st.files[--st.nfiles];
        atomic_store(&st.known, st.nfiles);
    }
}

/* Node 0's answer to a claim: the address is free, or already node's. */
static int file_claim_here(uint64_t f, int node)
{
    pthread_mutex_lock(&st.lock);
    struct stream_file *e = file_find(f);
    int rc = e && e->node != node ? -EEXIST : 0;
    if (!rc)
        file_set(f, node);
    pthread_mutex_unlock(&st.lock);
    return rc;
}

static int file_node(void *f)
{
    if (!job_running() || atomic_load_explicit(&st.known, memory_order_acquire) == 0)
        return -1;
    pthread_mutex_lock(&st.lock);
    struct stream_file *e = file_find((uint64_t)(uintptr_t)f);
    int node = e && e->node != job()->rank ? e->node : -1;
    pthread_mutex_unlock(&st.lock);
    return node;
}

static bool file_mine(uint64_t f)
{
    pthread_mutex_lock(&st.lock);
    struct stream_file *e = file_find(f);
    bool mine = e && e->node == job()->rank;
    pthread_mutex_unlock(&st.lock);
    return mine;
}

/* ---- calls and their answers -------------------------------------------- */

/* Sends type/aux with body (head, then len bytes of data) to node and
 * waits, off the run slot, for the answer: its result, errno as there. */
static int64_t call(int node, unsigned type, uint32_t aux, struct stream_io_msg *head, const void *data,
                    size_t len)
{
    struct ipc_question q;
    struct stream_result r = {0};
    head->token = ipc_question_open(&q, &r, sizeof r);

    struct iovec iov[2] = {{head, sizeof *head}, {(void *)data, len}};
    int err = ipc_sendv(node, type, aux, iov, len ? 2 : 1);
    if (err)
        log_fatal("node %d: cannot reach node %d for a descriptor or stream it opened: %s",
                  job()->rank, node, strerror(-err));
    smp_wait_begin();
    ipc_question_wait(&q);
    smp_wait_end();
    errno = r.err;
    return r.result;
}

static void answer(int node, uint64_t token, int64_t result, int err)
{
    struct stream_done_msg d = {.token = token, .result = result, .err = err};
    int rc = ipc_send(node, RUNTIME_STREAM_DONE, 0, &d, sizeof d);
    if (rc)
        log_fatal("node %d: cannot answer node %d's call on a descriptor or stream: %s", job()->rank, node,
                  strerror(-rc));
}

static void on_done(int src, const void *msg, size_t len)
{
    struct stream_done_msg d;
    ipc_body(src, msg, len, &d, sizeof d, NULL, "a stream call's answer");
    ipc_question_answered(d.token, &(struct stream_result){d.result, d.err}, sizeof(struct stream_result));
}

/* ---- the owner's side: the server thread ---------------------------------- */

static int64_t perform(unsigned op, uint64_t key, int64_t at, const void *data, size_t len)
{
    FILE *f = (FILE *)(uintptr_t)key;
    bool stream = op == MEM_STREAM_FWRITE || op == MEM_STREAM_FFLUSH || op == MEM_STREAM_FCLOSE;
    if (stream && !file_mine(key)) {
        errno = EBADF;
        return -1;
    }
    errno = 0;
    switch (op) {
    case MEM_STREAM_WRITE:
        return write((int)key, data, len);
    case MEM_STREAM_PWRITE:
        return pwrite((int)key, data, len, (off_t)at);
    case MEM_STREAM_CLOSE:
        return close((int)key);
    case MEM_STREAM_FWRITE:
        return (int64_t)fwrite(data, 1, len, f);
    case MEM_STREAM_FFLUSH:
        return fflush(f);
    case MEM_STREAM_FCLOSE:
        return fclose(f);
    default:
        errno = EINVAL;
        return -1;
    }
}

static void *serve(void *arg)
{
    (void)arg;
    smp_internal_thread();
    for (;;) {
        pthread_mutex_lock(&st.lock);
        while (!st.head)
            pthread_cond_wait(&st.work, &st.lock);
        struct stream_request *r = st.head;
        st.head = r->next;
        if (!st.head)
            st.tail = &st.head;
        pthread_mutex_unlock(&st.lock);
        int64_t result = perform(r->op, r->m.key, r->m.at, r->data, r->len);
        answer(r->src, r->m.token, result, errno);
        free(r->data);
        free(r);
    }
    return NULL;
}

/* The delivery thread may not wait: the call goes to the server thread. */
static void on_io(int src, const void *msg, size_t len)
{
    struct stream_request *r = calloc(1, sizeof *r);
    if (!r)
        log_fatal("out of memory for node %d's call on a descriptor or stream", src);
    size_t rest;
    ipc_body(src, msg, len, &r->m, sizeof r->m, &rest, "a stream call");
    r->src = src;
    r->op = ipc_msg_aux(msg);
    if (r->op >= MEM_STREAM_OPS)
        log_fatal("node %d sent a stream call this build does not know (%u)", src, r->op);
    r->data = ipc_copy_payload(msg, len, sizeof r->m, &r->len);
    pthread_mutex_lock(&st.lock);
    *st.tail = r;
    st.tail = &r->next;
    pthread_cond_signal(&st.work);
    pthread_mutex_unlock(&st.lock);
}

/* Claims on node 0, news of a stream elsewhere, and fcloses. */
static void on_own(int src, const void *msg, size_t len)
{
    struct stream_io_msg m;
    ipc_body(src, msg, len, &m, sizeof m, NULL, "a stream's owner");
    int node = (int)m.at;
    if (node < 0 || node >= job()->nodes)
        log_fatal("node %d named node %d as a stream's owner, which this job has not", src, node);
    uint32_t what = ipc_msg_aux(msg);
    int rc = 0;
    if (what == STREAM_CLAIM)
        rc = file_claim_here(m.key, node);
    else {
        pthread_mutex_lock(&st.lock);
        if (what == STREAM_KNOW)
            file_set(m.key, node);
        else
            file_forget(m.key, node);
        pthread_mutex_unlock(&st.lock);
    }
    if (what != STREAM_FORGET)
        answer(src, m.token, rc, 0);
}

/* ---- what the C library's wrappers call (mem/kernel_streams.c) ------------ */

static int fd_node(int fd)
{
    if (st.band == 0 || !job_running() || fd < st.base || fd >= st.base + st.band * job()->nodes)
        return -1;
    int node = (fd - st.base) / st.band;
    return node == job()->rank ? -1 : node;
}

static void fd_band(int *lo, int *hi)
{
    *lo = st.base + job()->rank * st.band;
    *hi = *lo + st.band;
    if (st.band == 0 || !job_running()) {
        *lo = 0;
        *hi = INT_MAX;
    }
}

static long ship(int node, enum mem_stream_op op, uint64_t key, int64_t at, const void *buf, size_t len)
{
    size_t room = ipc_message_room() - sizeof(struct stream_io_msg);
    /* Bytes the caller may still change (shared memory, which another
     * thread may hold): one private copy of each piece as it goes. */
    size_t piece = len < room ? len : room;
    char *copy = piece ? malloc(piece) : NULL;
    if (piece && !copy) {
        errno = ENOMEM;
        return -1;
    }
    size_t done = 0;
    int64_t r = 0;
    do {
        size_t n = len - done < piece ? len - done : piece;
        if (n)
            memcpy(copy, (const char *)buf + done, n);
        struct stream_io_msg m = {.key = key, .at = at + (int64_t)done};
        r = call(node, RUNTIME_STREAM_IO, op, &m, copy, n);
        if (r < 0 || (op != MEM_STREAM_WRITE && op != MEM_STREAM_PWRITE && op != MEM_STREAM_FWRITE))
            break;
        done += (size_t)r;
        if ((size_t)r < n)
            break;
    } while (done < len);
    int err = errno;
    free(copy);
    errno = err;
    if (op == MEM_STREAM_WRITE || op == MEM_STREAM_PWRITE || op == MEM_STREAM_FWRITE)
        return done || r >= 0 ? (long)done : -1;
    return (long)r;
}

static int file_claim(void *f)
{
    uint64_t key = (uint64_t)(uintptr_t)f;
    int me = job()->rank;
    if (!job_running())
        return 0;
    struct stream_io_msg m = {.key = key, .at = me};
    int rc = me == 0 ? file_claim_here(key, 0) : (int)call(0, RUNTIME_STREAM_OWN, STREAM_CLAIM, &m, NULL, 0);
    if (rc)
        return rc;
    if (me != 0) {
        pthread_mutex_lock(&st.lock);
        file_set(key, me);
        pthread_mutex_unlock(&st.lock);
    }
    for (int n = 1; n < job()->nodes; n++)
        if (n != me)
            call(n, RUNTIME_STREAM_OWN, STREAM_KNOW, &m, NULL, 0);
    return 0;
}

static void file_closed(void *f)
{
    uint64_t key = (uint64_t)(uintptr_t)f;
    int me = job()->rank;
    if (!file_mine(key))
        return;
    pthread_mutex_lock(&st.lock);
    file_forget(key, me);
    pthread_mutex_unlock(&st.lock);
    struct stream_io_msg m = {.key = key, .at = me};
    for (int n = 0; n < job()->nodes; n++)
        if (n != me)
            ipc_send(n, RUNTIME_STREAM_OWN, STREAM_FORGET, &m, sizeof m);
}

static const struct mem_kernel_streams ops = {
    .fd_node = fd_node,
    .file_node = file_node,
    .ship = ship,
    .fd_band = fd_band,
    .file_claim = file_claim,
    .file_closed = file_closed,
};

/* ---- start and end -------------------------------------------------------- */

/* The same numbers on every node (the same limits: one user, one host's
 * settings). A descriptor already open among them (one a library opened
 * before the start) would be taken for another node's: one line. With
 * too few numbers, descriptors are not moved and stay each node's. */
static void fd_bands_start(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    rlim_t top = rl.rlim_max < STREAMS_FD_TOP ? rl.rlim_max : STREAMS_FD_TOP;
    int nodes = job()->nodes;
    rlim_t room = top > STREAMS_FD_LOW ? (top - STREAMS_FD_LOW) / (rlim_t)nodes : 0;
    if (room < 16)
        return;
    st.band = room < STREAMS_FD_BAND ? (int)room : STREAMS_FD_BAND;
    st.base = (int)top - st.band * nodes;
    if (rl.rlim_cur < top) {
        rl.rlim_cur = top;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    for (int fd = st.base; fd < st.base + st.band * nodes; fd++)
        if (fcntl(fd, F_GETFD) >= 0)
            log_fatal("node %d: descriptor %d is open at the start, among the numbers dsm gives the "
                      "program's descriptors (%d to %d; docs/unmodified-programs.md, \"Descriptors and "
                      "streams\")", job()->rank, fd, st.base, st.base + st.band * nodes - 1);
}

void streams_start(void)
{
    ipc_register(RUNTIME_STREAM_IO, "STREAM_IO", on_io, NULL);
    ipc_register(RUNTIME_STREAM_OWN, "STREAM_OWN", on_own, NULL);
    ipc_register(RUNTIME_STREAM_DONE, "STREAM_DONE", on_done, NULL);
    /* A dsmcc program (main on node 0 alone; its threads, an OpenMP
     * team's or a fork style's workers elsewhere) on several nodes. */
    st.on = rt()->share_globals && job()->nodes > 1;
    if (!st.on)
        return;
    fd_bands_start();
    pthread_t t;
    int err = pthread_create(&t, NULL, serve, NULL);
    if (err)
        log_fatal("node %d: cannot start the thread that serves other nodes' output: %s", job()->rank,
                  strerror(err));
    pthread_detach(t);
    atomic_store(&mem_kernel_streams, &ops);
}

/* After the job the calls are this node's again (exit handlers). */
void streams_finish(void) { atomic_store(&mem_kernel_streams, NULL); }
