/*
 * ucx_diff_put.c — should hlrc's diffs go to the home as messages or as
 * puts into its page? (issue 41). The time from a writer starting to send
 * a diff until it knows the home has it (what a release waits for before
 * granting the lock), measured over UCX's ucp API directly, between two
 * processes of this program: the writer, and the home of one 8 KiB page.
 *
 *   build/bench/ucx_diff_put [--samples N] [--home poll|sleep|both] ...
 *
 * Each transfer carries one diff of a shape typical of dsm (one run of
 * 64 B; 8 runs of 8 B spread over the page; 64 runs of 64 B; the whole
 * page as one run), encoded by dsm's own mem_diff_create (diff.c), four
 * ways:
 *   (a)  message: the diff in one ucp_am_send_nbx; the home's handler
 *        applies it to its page (mem_diff_apply) and answers with a small
 *        active message, after ucp_worker_progress returns, as dsm's home
 *        does; the writer waits for that ack. What dsm does today.
 *   (b1) put + flush: each run ucp_put_nbx'ed straight into the home's
 *        page (allocated by ucp_mem_map with UCP_MEM_MAP_ALLOCATE, its key
 *        packed and sent at the start, as ucx_rma.c does), then an endpoint
 *        flush: the runs are in the home's memory, and the home knows
 *        nothing. The data alone; not a protocol.
 *   (b2) put + flush + note: (b1), then a small active message telling the
 *        home (which a protocol needs: the home moves the page's version
 *        and republishes or invalidates its published copy), and its ack.
 *   (b3) put + fence + note: as (b2) with ucp_worker_fence in place of the
 *        flush: the note may leave before the puts complete, UCX only
 *        promises it is not delivered before them. The home checks that it
 *        was not (every word of a run is the transfer's number; the last
 *        run's first is read) and counts the notes that came early.
 * Finding the runs (the twin comparison) is common to all four and is not
 * timed; the encoding into the message is (it is the message's copy).
 *
 * The home either polls its worker (both sides busy: the best case for
 * messages) or sleeps on the worker's event fd between transfers
 * (ucp_worker_get_efd, ucp_worker_arm, epoll), as dsm's service thread does
 * on a node that computes or waits: a message then pays the home's
 * wake-up, and the home's CPU per transfer is printed (a put over shared
 * memory does not wake it at all). With a sleeping home the writer pauses
 * --gap-us between transfers (nanosleep) so that the home falls asleep;
 * the table gives the home's wake-ups per transfer.
 *
 * The four ways alternate in blocks (--blocks), so that the drift of a
 * shared machine falls on all alike; after each block the writer sends its
 * page and the home compares it with its own: a put that did not land, or
 * a diff applied wrongly, ends the run (exit status 1). A cell (shape and
 * way) gets at most --max-s seconds: over tcp, where UCX emulates puts,
 * 64 runs take milliseconds; such a cell has fewer transfers, and the
 * table says how many. Medians and p10/p90 in µs. A benchmark: it checks
 * data, never times.
 *
 * Where it runs: the home is a child of the writer (fork); the two trade
 * worker addresses over a socketpair made before the fork. UCX picks its
 * transports as ever (UCX_TLS): on one host its shared memory; with
 * --home-ns/--writer-ns each side first enters that network namespace
 * (setns on /run/netns/NAME, as `ip netns exec` does), so that the two
 * reach each other over the namespaces' network (tests/hosts/netns.sh
 * makes such hosts; docs/performance.md gives the command). As dsm does,
 * it sets UCX_TCP_TX_SEG_SIZE=16k unless the environment has it, so that
 * a page and its headers go over tcp as one segment.
 *
 * Built only where the build has UCX (DSM_HAVE_UCX); linked with libucp,
 * unlike dsm itself, which loads it at run time.
 */
#include "args.h"
#include "mem/diff.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <ucp/api/ucp.h>

#define PAGE       8192u
#define AM_ID      7                        /* one slot, the kind in the header (as dsm) */
#define WAIT_NS    (10ull * 1000000000)     /* an ack not come by then: the peer is gone */
#define NS_PATH    "/run/netns/"

/* Every message's header: 32 bytes, the size of dsm's (ucx.c), which a
 * diff and its ack carry too. */
enum kind { K_DIFF = 1, K_NOTE, K_ACK, K_MODE, K_CHECK, K_END };
struct wire {
    uint32_t seq;   /* the transfer (or control message) it belongs to */
    uint16_t kind;
    uint16_t shape; /* K_DIFF, K_NOTE: index in shapes[]; K_MODE: 1 = sleep */
    uint64_t pad[3];
};

/* What the home answers a K_CHECK with (the ack's payload): its page
 * compared with the writer's, and what it did since the last check. */
struct report {
    uint64_t differ;  /* bytes of the page that differ from the writer's */
    uint64_t early;   /* notes or diffs that came before their last run */
    uint64_t wakeups; /* times the home slept on the event fd and woke */
    uint64_t cpu_ns;  /* the home's CPU time */
};

/* A diff's shape: `runs` runs of `len` bytes, the first at `first`, each
 * `stride` after the last. Every run is whole words (diff.c's unit) and
 * they never touch, so the diff has exactly these runs. */
static const struct shape {
    const char *name;
    unsigned    runs, len, first, stride;
} shapes[] = {
    {"1 run of 64 B", 1, 64, 4096, 0},
    {"8 runs of 8 B", 8, 8, 512, 1024},
    {"64 runs of 64 B", 64, 64, 0, 128},
    {"whole page", 1, PAGE, 0, 0},
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))

enum way { W_MSG, W_PUT_FLUSH, W_PUT_NOTE, W_PUT_FENCE, NWAYS };
static const char *const way_name[NWAYS] = {"(a) message", "(b1) put+flush", "(b2) put+flush+note",
                                            "(b3) put+fence+note"};

static const char *side = "writer"; /* for error lines */

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ucx_diff_put: %s: ", side);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static pid_t home_pid; /* in the writer: its child, the home */

/* The other side is gone or silent (`why`). In the writer, a home that
 * ended with an error has said why on its own line: the writer adds
 * none. (The home ends with the writer: PR_SET_PDEATHSIG.) */
__attribute__((noreturn)) static void other_side_gone(const char *why)
{
    int status;
    struct timespec tick = {.tv_nsec = 10000000};
    /* its socket closes as it exits: give it a second to be done */
    for (int i = 0; home_pid > 0 && i < 100; i++) {
        pid_t p = waitpid(home_pid, &status, WNOHANG);
        if (p == home_pid && WIFEXITED(status) && WEXITSTATUS(status))
            exit(1);
        if (p != 0)
            break;
        nanosleep(&tick, NULL);
    }
    die("%s", why);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the two sides' UCX ------------------------------------------------- */

static struct {
    ucp_context_h ctx;
    ucp_worker_h  worker;
    ucp_ep_h      ep;      /* to the other side */
    int           efd, epfd;
    int           sock;    /* the socketpair to the other side */
} u;

static void check(ucs_status_t st, const char *what)
{
    if (st != UCS_OK)
        die("%s: %s", what, ucs_status_string(st));
}

/* Progresses until req (from a *_nbx call) is complete, then frees it. */
static void wait_req(ucs_status_ptr_t req, const char *what)
{
    if (req == NULL)
        return;
    if (UCS_PTR_IS_ERR(req))
        check(UCS_PTR_STATUS(req), what);
    uint64_t deadline = now_ns() + WAIT_NS;
    ucs_status_t st;
    for (unsigned i = 1; (st = ucp_request_check_status(req)) == UCS_INPROGRESS; i++) {
        ucp_worker_progress(u.worker);
        if (!(i & 0xfff) && now_ns() > deadline) {
            char why[160];
            snprintf(why, sizeof why, "%s: not complete after %llu s (the other side is gone?)",
                     what, WAIT_NS / 1000000000);
            other_side_gone(why);
        }
    }
    ucp_request_free(req);
    check(st, what);
}

/* `hdr` and `data` must stay as they are until the send completes: the
 * caller keeps them (the writer's page, diff and headers live for the run;
 * the home waits). */
static ucs_status_ptr_t send_am(const struct wire *hdr, const void *data, size_t len)
{
    ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                               .flags = UCP_AM_SEND_FLAG_EAGER}; /* as dsm: eager only */
    ucs_status_ptr_t r = ucp_am_send_nbx(u.ep, AM_ID, hdr, sizeof *hdr, data, len, &prm);
    if (UCS_PTR_IS_ERR(r))
        check(UCS_PTR_STATUS(r), "sending an active message");
    return r;
}

static void write_all(const void *p, size_t n)
{
    for (const char *c = p; n;) {
        ssize_t k = write(u.sock, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            other_side_gone("the other side ended before the start");
        c += k, n -= (size_t)k;
    }
}

static void read_all(void *p, size_t n)
{
    for (char *c = p; n;) {
        ssize_t k = read(u.sock, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            other_side_gone("the other side ended before the start");
        c += k, n -= (size_t)k;
    }
}

static void send_blob(const void *p, size_t n)
{
    uint32_t len = (uint32_t)n;
    write_all(&len, sizeof len);
    write_all(p, n);
}

/* A blob from the other side, at most `max` bytes (malloc'ed). */
static void *recv_blob(size_t max, size_t *n)
{
    uint32_t len;
    read_all(&len, sizeof len);
    if (len > max)
        die("the other side sent %u bytes where at most %zu fit", len, max);
    void *p = malloc(len ? len : 1);
    if (!p)
        die("out of memory");
    read_all(p, len);
    *n = len;
    return p;
}

static void enter_netns(const char *name)
{
    if (!name)
        return;
    char path[256];
    snprintf(path, sizeof path, NS_PATH "%s", name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) < 0)
        die("cannot enter network namespace %s (%s): %s", name, path, strerror(errno));
    close(fd);
}

/* UCX as dsm opens it (ucx.c): active messages, RMA, wake-ups; one
 * serialized worker; its event fd in an epoll set. */
static void ucx_open(ucp_am_recv_callback_t on_am)
{
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME,
        .features = UCP_FEATURE_AM | UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP,
        .name = "ucx_diff_put",
    };
    check(ucp_init(&params, NULL, &u.ctx), "cannot initialise UCX");
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SERIALIZED};
    check(ucp_worker_create(u.ctx, &wp, &u.worker), "cannot create a UCX worker");
    ucp_am_handler_param_t hp = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                      UCP_AM_HANDLER_PARAM_FIELD_CB,
        .id = AM_ID,
        .flags = UCP_AM_FLAG_WHOLE_MSG,
        .cb = on_am,
    };
    check(ucp_worker_set_am_recv_handler(u.worker, &hp), "cannot set the active-message handler");
    check(ucp_worker_get_efd(u.worker, &u.efd), "cannot get the worker's event fd");
    u.epfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event e = {.events = EPOLLIN, .data.fd = u.efd};
    if (u.epfd < 0 || epoll_ctl(u.epfd, EPOLL_CTL_ADD, u.efd, &e) < 0)
        die("cannot wait on the worker's event fd: %s", strerror(errno));
}

/* Trades worker addresses over the socketpair and connects to the other
 * side. Without UCX's error handling, as dsm's endpoints to co-located
 * nodes (network namespaces included: same host name and boot id): in
 * UCX 1.13 UCP_ERR_HANDLING_MODE_PEER rules out its shared-memory
 * transports, and the two would meet over tcp on the loopback. A side
 * that is gone is found by the other's deadline (WAIT_NS). */
static void ucx_connect(void)
{
    ucp_address_t *mine;
    size_t len;
    check(ucp_worker_get_address(u.worker, &mine, &len), "cannot get the worker's address");
    send_blob(mine, len);
    ucp_worker_release_address(u.worker, mine);
    void *theirs = recv_blob(1 << 20, &len);
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
        .address = theirs,
        .err_mode = UCP_ERR_HANDLING_MODE_NONE,
    };
    check(ucp_ep_create(u.worker, &ep, &u.ep), "cannot connect to the other side");
    free(theirs);
}

static void ucx_close(void)
{
    ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                               .flags = UCP_EP_CLOSE_FLAG_FORCE}; /* the peer may be gone */
    ucs_status_ptr_t r = ucp_ep_close_nbx(u.ep, &prm);
    if (r && !UCS_PTR_IS_ERR(r)) {
        while (ucp_request_check_status(r) == UCS_INPROGRESS)
            ucp_worker_progress(u.worker);
        ucp_request_free(r);
    }
    close(u.epfd);
    ucp_worker_destroy(u.worker);
    ucp_cleanup(u.ctx);
}

/* Whether the shape's last run in `page` holds transfer `seq` (its first
 * word; each run is the transfer's number in every word). The last run
 * alone: it is put last, and reading one line of the page is what the
 * home's check costs either way, where reading every run would pull up
 * to 64 lines from the writer's cache and time that against puts. */
static bool last_run_holds(const volatile unsigned char *page, const struct shape *s, uint32_t seq)
{
    size_t at = s->first + (s->runs - 1) * s->stride;
    return *(const volatile uint32_t *)(page + at) == seq;
}

/* ---- the home ----------------------------------------------------------- */

/* An ack the home owes, sent once ucp_worker_progress has returned (as
 * dsm's home delivers, and so answers, after it). */
struct owed {
    struct wire   ack;
    struct report rep; /* its payload, for a K_CHECK */
    bool          has_rep;
};

static struct {
    unsigned char *page; /* UCX's (ucp_mem_map), the writer puts into it */
    ucp_mem_h      memh;
    bool           sleeping, ending;
    struct report  rep;
    uint64_t       cpu_since;
    struct owed    owed[8]; /* the writer sends one thing at a time: a few do */
    int            nowed;
} home;

static struct owed *owe_ack(uint32_t seq)
{
    if (home.nowed == (int)(sizeof home.owed / sizeof home.owed[0]))
        die("more than %d acks owed at once (the writer sends one thing at a time)", home.nowed);
    struct owed *o = &home.owed[home.nowed++];
    *o = (struct owed){.ack = {.seq = seq, .kind = K_ACK}};
    return o;
}

static ucs_status_t home_on_am(void *arg, const void *header, size_t header_length, void *data,
                               size_t length, const ucp_am_recv_param_t *param)
{
    (void)arg;
    struct wire h;
    /* Sent eager with a header of ours: a rendezvous would be someone else's. */
    if (header_length != sizeof h || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV))
        die("an active message of an unexpected form (a %zu-byte header, %zu bytes)",
            header_length, length);
    memcpy(&h, header, sizeof h);
    if ((h.kind == K_DIFF || h.kind == K_NOTE) && h.shape >= NSHAPES)
        die("a diff of shape %u (there are %d)", h.shape, NSHAPES);
    struct owed *o;
    switch (h.kind) {
    case K_DIFF:
        if (mem_diff_apply(home.page, PAGE, data, length) < 0)
            die("a malformed diff (%zu B)", length);
        __attribute__((fallthrough)); /* the check and the ack are the note's */
    case K_NOTE:
        if (!last_run_holds(home.page, &shapes[h.shape], h.seq))
            home.rep.early++;
        owe_ack(h.seq);
        break;
    case K_MODE:
        home.sleeping = h.shape != 0;
        owe_ack(h.seq);
        break;
    case K_CHECK: {
        if (length != PAGE)
            die("a page to compare of %zu B (a page is %u)", length, PAGE);
        const unsigned char *theirs = data;
        home.rep.differ = 0;
        for (unsigned i = 0; i < PAGE; i++)
            home.rep.differ += home.page[i] != theirs[i];
        uint64_t t = cpu_ns();
        home.rep.cpu_ns = t - home.cpu_since;
        o = owe_ack(h.seq);
        o->rep = home.rep;
        o->has_rep = true;
        home.rep = (struct report){0};
        home.cpu_since = t;
        break;
    }
    case K_END:
        home.ending = true;
        owe_ack(h.seq);
        break;
    default:
        die("a message of unknown kind %u", h.kind);
    }
    return UCS_OK; /* the data is UCX's again: applied or compared already */
}

static int run_home(void)
{
    ucx_open(home_on_am);
    ucp_mem_map_params_t mp = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                      UCP_MEM_MAP_PARAM_FIELD_FLAGS,
        .address = NULL,
        .length = PAGE,
        .flags = UCP_MEM_MAP_ALLOCATE, /* UCX's own: shared memory here, registered on RDMA */
    };
    check(ucp_mem_map(u.ctx, &mp, &home.memh), "cannot map the page");
    ucp_mem_attr_t attr = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH};
    check(ucp_mem_query(home.memh, &attr), "cannot query the page's mapping");
    if (attr.length < PAGE)
        die("UCX mapped %zu bytes for a page of %u", attr.length, PAGE);
    home.page = attr.address;
    memset(home.page, 0, PAGE);
    void *key;
    size_t key_len;
    check(ucp_rkey_pack(u.ctx, home.memh, &key, &key_len), "cannot pack the page's key");
    ucx_connect();
    uint64_t base = (uintptr_t)home.page;
    send_blob(&base, sizeof base);
    send_blob(key, key_len);
    ucp_rkey_buffer_release(key);

    home.cpu_since = cpu_ns();
    while (!home.ending || home.nowed) {
        unsigned n = ucp_worker_progress(u.worker);
        for (int i = 0; i < home.nowed; i++) {
            struct owed *o = &home.owed[i];
            wait_req(send_am(&o->ack, o->has_rep ? &o->rep : NULL, o->has_rep ? sizeof o->rep : 0),
                     "sending an ack");
        }
        bool sent = home.nowed > 0;
        home.nowed = 0;
        if (!home.sleeping || n || sent)
            continue;
        /* Asleep until the worker has something (UCS_ERR_BUSY: it has
         * already, progress again), as dsm's service thread sleeps. */
        ucs_status_t st = ucp_worker_arm(u.worker);
        if (st == UCS_ERR_BUSY)
            continue;
        check(st, "cannot arm the worker's event fd");
        struct epoll_event e;
        while (epoll_wait(u.epfd, &e, 1, -1) < 0)
            if (errno != EINTR)
                die("cannot wait on the worker's event fd: %s", strerror(errno));
        home.rep.wakeups++;
    }
    ucp_mem_unmap(u.ctx, home.memh);
    ucx_close();
    return 0;
}

/* ---- the writer --------------------------------------------------------- */

static struct {
    unsigned char *page, *twin, *diff;
    long           diff_len;
    uint64_t       remote;  /* the home page's address there */
    ucp_rkey_h     rkey;
    struct wire    hdr;     /* of the message in flight (UCX may read it until sent) */
    uint32_t       seq;
    volatile uint32_t acked;   /* the last seq the home acked */
    struct report  rep;        /* with the last K_CHECK's ack */
} wr;

static ucs_status_t writer_on_am(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ucp_am_recv_param_t *param)
{
    (void)arg, (void)param;
    struct wire h;
    if (header_length != sizeof h)
        die("an active message with a %zu-byte header", header_length);
    memcpy(&h, header, sizeof h);
    if (h.kind != K_ACK || (length && length != sizeof wr.rep))
        die("a message of kind %u and %zu bytes where an ack was due", h.kind, length);
    if (length)
        memcpy(&wr.rep, data, sizeof wr.rep);
    wr.acked = h.seq;
    return UCS_OK;
}

static void wait_ack(uint32_t seq, const char *what)
{
    uint64_t deadline = now_ns() + WAIT_NS;
    for (unsigned i = 1; wr.acked != seq; i++) {
        ucp_worker_progress(u.worker);
        if (!(i & 0xfff) && now_ns() > deadline) {
            char why[160];
            snprintf(why, sizeof why, "no ack for %s from the home in %llu s (it is gone?)", what,
                     WAIT_NS / 1000000000);
            other_side_gone(why);
        }
    }
}

/* A control message and its ack, untimed. */
static void control(enum kind kind, uint16_t arg, const void *data, size_t len)
{
    wr.hdr = (struct wire){.seq = ++wr.seq, .kind = (uint16_t)kind, .shape = arg};
    ucs_status_ptr_t r = send_am(&wr.hdr, data, len);
    wait_ack(wr.seq, "a control message");
    wait_req(r, "sending a control message");
}

static void flush(void)
{
    ucp_request_param_t prm = {.op_attr_mask = 0};
    wait_req(ucp_ep_flush_nbx(u.ep, &prm), "flushing the puts");
}

/* Each run of the encoded diff (diff.c: u16 word offset, u16 word count
 * with bit 15 set when a byte mask of (count + 1) / 2 bytes follows,
 * little-endian, then the words) put whole from the writer's page into the
 * home's: the run list a protocol would have from its twin comparison. A
 * masked run's unnamed bytes go too: here the writer is the page's only
 * one, so they equal the home's. */
static void put_runs(void)
{
    ucp_request_param_t prm = {.op_attr_mask = 0};
    const unsigned char *p = wr.diff, *end = wr.diff + wr.diff_len;
    while (p < end) {
        size_t off = ((size_t)p[0] | (size_t)p[1] << 8) * 4;
        size_t count = (size_t)p[2] | (size_t)p[3] << 8;
        size_t mask = count & 0x8000u ? ((count & 0x7fffu) + 1) / 2 : 0;
        size_t len = (count & 0x7fffu) * 4;
        ucs_status_ptr_t r = ucp_put_nbx(u.ep, wr.page + off, len, wr.remote + off, wr.rkey, &prm);
        if (UCS_PTR_IS_ERR(r))
            check(UCS_PTR_STATUS(r), "putting a run");
        if (r) /* completes all the same; the flush or fence waits for it */
            ucp_request_free(r);
        p += 4 + mask + len;
    }
}

/* One transfer of a diff of shape `s` the way `w`: ns from its start until
 * the writer knows the home has it (for (b1): has it in its memory). */
static uint64_t transfer(int s, enum way w)
{
    const struct shape *sh = &shapes[s];
    uint32_t seq = ++wr.seq;
    for (unsigned r = 0; r < sh->runs; r++) {
        uint32_t *run = (uint32_t *)(wr.page + sh->first + r * sh->stride);
        for (unsigned i = 0; i < sh->len / 4; i++)
            run[i] = seq;
    }
    wr.diff_len = mem_diff_create(wr.page, wr.twin, PAGE, wr.diff, mem_diff_bound(PAGE));
    if (wr.diff_len <= 0)
        die("mem_diff_create: %ld", wr.diff_len);
    wr.hdr = (struct wire){.seq = seq, .kind = w == W_MSG ? K_DIFF : K_NOTE, .shape = (uint16_t)s};
    ucs_status_ptr_t r = NULL;

    uint64_t t0 = now_ns();
    switch (w) {
    case W_MSG:
        r = send_am(&wr.hdr, wr.diff, (size_t)wr.diff_len);
        wait_ack(seq, "a diff");
        break;
    case W_PUT_FLUSH:
        put_runs();
        flush();
        break;
    case W_PUT_NOTE:
        put_runs();
        flush();
        r = send_am(&wr.hdr, NULL, 0);
        wait_ack(seq, "a note");
        break;
    case W_PUT_FENCE:
        put_runs();
        check(ucp_worker_fence(u.worker), "fencing the puts");
        r = send_am(&wr.hdr, NULL, 0);
        wait_ack(seq, "a note");
        break;
    default:
        break;
    }
    uint64_t t = now_ns() - t0;

    wait_req(r, "sending"); /* acked, so delivered: done or nearly */
    if (w == W_PUT_FENCE)
        flush(); /* the page is written again next: the puts must have read it */
    mem_twin_copy(wr.twin, wr.page, PAGE);
    return t;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The p-th fraction of the sorted samples, in µs. */
static double pct(const uint64_t *v, int n, double p)
{
    int i = (int)(p * (n - 1) + 0.5);
    return (double)v[i] / 1000.0;
}

struct opts {
    int samples, warmup, blocks, gap_us, budget_s;
    int home_mode; /* 0 poll, 1 sleep, 2 both */
    const char *home_ns, *writer_ns;
};

#define CELL "%-26s"

/* One table: every shape, the four ways, the home polling or asleep. */
static int measure(const struct opts *o, bool sleeping, uint64_t *samples[NWAYS])
{
    int bad = 0;
    control(K_MODE, sleeping, NULL, 0);
    printf("\nhome %s; up to %d transfers a cell (%d blocks, after %d to warm up; at most %d s "
           "a cell); µs: median [p10, p90]%s\n",
           sleeping ? "asleep on the worker's event fd between transfers (the writer pauses "
                      "--gap-us, then polls)"
                    : "and writer both polling",
           o->samples, o->blocks, o->warmup, o->budget_s,
           sleeping ? "; home: its CPU time (µs) and wake-ups per transfer" : "");
    printf("%-16s %5s %5s", "diff", "bytes", "msg B");
    for (int w = 0; w < NWAYS; w++)
        printf(" " CELL, way_name[w]);
    printf(" %6s %6s %6s\n", "b1/a", "b2/a", "b3/a");
    struct timespec gap = {.tv_nsec = (long)o->gap_us * 1000};
    for (int s = 0; s < NSHAPES; s++) {
        struct report sum[NWAYS] = {{0}};
        int n[NWAYS] = {0};
        uint64_t spent[NWAYS] = {0}; /* in transfers and gaps, timed blocks */
        for (int b = -1; b < o->blocks; b++) {
            for (int w = 0; w < NWAYS; w++) {
                /* Block -1 warms up (the first transfers of each way set
                 * up UCX's lanes and fault the pages in). A way slower than
                 * the budget allows stops its block early: over tcp a put
                 * of each of 64 runs takes milliseconds. */
                int count = b < 0 ? o->warmup
                                  : o->samples / o->blocks + (b < o->samples % o->blocks);
                uint64_t allowed = (uint64_t)o->budget_s * 1000000000u / (unsigned)o->blocks;
                uint64_t start = now_ns(), used = b < 0 ? 0 : spent[w];
                if (b >= 0)
                    allowed *= (unsigned)b + 1;
                for (int i = 0; i < count && used + (now_ns() - start) < allowed; i++) {
                    if (sleeping && o->gap_us)
                        nanosleep(&gap, NULL);
                    uint64_t t = transfer(s, (enum way)w);
                    if (b >= 0)
                        samples[w][n[w]++] = t;
                }
                if (b >= 0)
                    spent[w] += now_ns() - start;
                control(K_CHECK, 0, wr.page, PAGE);
                if (wr.rep.differ)
                    die("%s, %s: the home's page differs from the writer's in %llu bytes",
                        shapes[s].name, way_name[w], (unsigned long long)wr.rep.differ);
                if (b < 0)
                    continue;
                sum[w].early += wr.rep.early;
                sum[w].wakeups += wr.rep.wakeups;
                sum[w].cpu_ns += wr.rep.cpu_ns;
            }
        }
        const struct shape *sh = &shapes[s];
        double med[NWAYS];
        char cell[NWAYS][48];
        bool short_cell = false;
        for (int w = 0; w < NWAYS; w++) {
            qsort(samples[w], (size_t)n[w], sizeof samples[w][0], cmp_u64);
            med[w] = pct(samples[w], n[w], 0.5);
            snprintf(cell[w], sizeof cell[w], "%.2f [%.2f, %.2f]", med[w],
                     pct(samples[w], n[w], 0.1), pct(samples[w], n[w], 0.9));
            short_cell |= n[w] < o->samples;
        }
        printf("%-16s %5u %5zu", sh->name, sh->runs * sh->len,
               sizeof(struct wire) + sh->runs * (4 + sh->len));
        for (int w = 0; w < NWAYS; w++)
            printf(" " CELL, cell[w]);
        printf(" %6.2f %6.2f %6.2f\n", med[1] / med[0], med[2] / med[0], med[3] / med[0]);
        if (sleeping) {
            /* The home's CPU time (µs) and wake-ups per transfer; its
             * checks (one a block) are in them, a wake-up and an 8 KiB
             * compare per block. */
            printf("%-16s %11s", "", "home:");
            for (int w = 0; w < NWAYS; w++) {
                snprintf(cell[w], sizeof cell[w], "%.2f CPU, %.2f wakes",
                         (double)sum[w].cpu_ns / 1000.0 / n[w], (double)sum[w].wakeups / n[w]);
                printf(" " CELL, cell[w]);
            }
            printf("\n");
        }
        if (short_cell) {
            printf("%-16s %11s", "", "transfers:");
            for (int w = 0; w < NWAYS; w++) {
                snprintf(cell[w], sizeof cell[w], "%d", n[w]);
                printf(" " CELL, cell[w]);
            }
            printf("\n");
        }
        /* A note after a flush that finds its run missing is a bug (here
         * or in UCX); after a fence, it would say the fence does not order
         * an active message after puts on this transport. */
        if (sum[W_PUT_NOTE].early || sum[W_MSG].early) {
            fprintf(stderr, "ucx_diff_put: %s: %llu diffs or notes after a flush found their "
                            "last run missing\n",
                    sh->name, (unsigned long long)(sum[W_PUT_NOTE].early + sum[W_MSG].early));
            bad = 1;
        }
        if (sum[W_PUT_FENCE].early)
            printf("%-16s (b3): %llu of %d notes came before their last put: the fence does not "
                   "order them here\n",
                   "", (unsigned long long)sum[W_PUT_FENCE].early, n[W_PUT_FENCE]);
    }
    return bad;
}

static int run_writer(const struct opts *o)
{
    ucx_open(writer_on_am);
    ucx_connect();
    size_t len;
    uint64_t *base = recv_blob(sizeof *base, &len);
    if (len != sizeof *base)
        die("the home sent a %zu-byte address", len);
    wr.remote = *base;
    free(base);
    void *key = recv_blob(1 << 20, &len);
    check(ucp_ep_rkey_unpack(u.ep, key, &wr.rkey), "cannot unpack the home page's key");
    free(key);

    wr.page = aligned_alloc(4096, PAGE);
    wr.twin = aligned_alloc(4096, PAGE);
    wr.diff = malloc(mem_diff_bound(PAGE));
    if (!wr.page || !wr.twin || !wr.diff)
        die("out of memory");
    uint64_t *samples[NWAYS];
    for (int w = 0; w < NWAYS; w++)
        if (!(samples[w] = malloc(sizeof *samples[w] * (size_t)o->samples)))
            die("out of memory for %d samples", o->samples);
    memset(wr.page, 0, PAGE); /* as the home's page starts */
    memset(wr.twin, 0, PAGE);

    printf("ucx_diff_put: diffs to the home of an %u-byte page, by message or by put; "
           "UCX %s, UCX_TLS=%s%s%s%s%s\n",
           PAGE, ucp_get_version_string(), getenv("UCX_TLS") ? getenv("UCX_TLS") : "(default)",
           o->home_ns ? ", home in netns " : "", o->home_ns ? o->home_ns : "",
           o->writer_ns ? ", writer in netns " : "", o->writer_ns ? o->writer_ns : "");
    int bad = 0;
    if (o->home_mode != 1)
        bad |= measure(o, false, samples);
    if (o->home_mode != 0)
        bad |= measure(o, true, samples);

    control(K_END, 0, NULL, 0);
    ucp_rkey_destroy(wr.rkey);
    ucx_close();
    int status;
    if (waitpid(home_pid, &status, 0) < 0)
        die("waiting for the home: %s", strerror(errno));
    if (WIFSIGNALED(status))
        die("the home ended by signal %d", WTERMSIG(status));
    return WEXITSTATUS(status) ? 1 : bad; /* a home that failed said why */
}

/* ---- options, and the two processes ------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ucx_diff_put [--samples N] [--warmup N] [--blocks K] [--home poll|sleep|both]\n"
            "                    [--gap-us US] [--max-s S] [--home-ns NS] [--writer-ns NS]\n"
            "  --samples N    transfers timed per shape and way (default 20000)\n"
            "  --warmup N     transfers before them, untimed (default 1000)\n"
            "  --blocks K     the ways alternate in K blocks (default 10)\n"
            "  --home MODE    the home polls, sleeps on the worker's event fd, or both tables\n"
            "                 (default both)\n"
            "  --gap-us US    the writer's pause before each transfer while the home sleeps\n"
            "                 (default 200)\n"
            "  --max-s S      at most S seconds a cell (shape and way): a slower way's cell\n"
            "                 has fewer transfers, and says so (default 20)\n"
            "  --home-ns NS   the home runs in network namespace NS (/run/netns/NS)\n"
            "  --writer-ns NS the writer runs in network namespace NS\n"
            "The environment's UCX_* settings apply (UCX_TLS=tcp,self: UCX over tcp).\n");
}

static int take_name(const char *text, void *dest)
{
    if (!*text || strchr(text, '/') || strlen(text) > 200)
        return -1;
    *(const char **)dest = text;
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o = {.samples = 20000, .warmup = 1000, .blocks = 10, .gap_us = 200,
                     .budget_s = 20, .home_mode = 2};
    static const char *const modes[] = {"poll", "sleep", "both", NULL};
    struct arg_option options[] = {
        {"--samples", ARG_INT, &o.samples, "a count 1..10000000", .lo = 1, .hi = 10000000},
        {"--warmup", ARG_INT, &o.warmup, "a count 0..1000000", .lo = 0, .hi = 1000000},
        {"--blocks", ARG_INT, &o.blocks, "a count 1..1000", .lo = 1, .hi = 1000},
        {"--home", ARG_WORD, &o.home_mode, "poll, sleep or both", .words = modes},
        {"--gap-us", ARG_INT, &o.gap_us, "microseconds 0..999999", .lo = 0, .hi = 999999},
        {"--max-s", ARG_INT, &o.budget_s, "seconds 1..3600", .lo = 1, .hi = 3600},
        {"--home-ns", ARG_CUSTOM, &o.home_ns, "a namespace name", .parse = take_name},
        {"--writer-ns", ARG_CUSTOM, &o.writer_ns, "a namespace name", .parse = take_name},
        {0}};
    int st = args_read(argc, argv, options, usage, true);
    if (st != ARGS_RUN)
        return st;
    if (o.blocks > o.samples)
        return args_bad(usage, true, "--blocks %d is more than --samples %d", o.blocks, o.samples);

    /* dsm's choice (ucx_settings.c): a page and its headers in one tcp
     * segment; never over the user's own. */
    setenv("UCX_TCP_TX_SEG_SIZE", "16k", 0);
    setvbuf(stdout, NULL, _IOLBF, 0);

    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        die("socketpair: %s", strerror(errno));
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        /* The home ends with the writer, whatever ends it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(sv[0]);
        u.sock = sv[1];
        side = "home";
        enter_netns(o.home_ns);
        _exit(run_home());
    }
    close(sv[1]);
    home_pid = pid;
    signal(SIGPIPE, SIG_IGN); /* a home gone before the start: write says so */
    u.sock = sv[0];
    enter_netns(o.writer_ns);
    return run_writer(&o);
}
