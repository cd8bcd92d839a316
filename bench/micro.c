/*
 * micro.c — the basic operations of the shared memory (seed 001, Table 2:
 * startup, alloc, barrier, lock/unlock; plus remote read and write faults),
 * each beside the raw-UDP figure it is built from, measured in the same run
 * between the same processes.
 *
 *   dsmrun -n N build/bench/micro [--quick] [--rounds R] [--pin app|node|none]
 *
 * What is measured (µs; every node takes part in every phase, the nodes a
 * phase does not involve wait at a dsm_barrier):
 *   startup        dsm_startup, clock_gettime around the call, every node;
 *                  node 0's and the greatest, gathered through shared memory
 *   alloc          dsm_malloc(8 KiB) of fresh memory, and again of memory
 *                  just freed (which the allocator clears through the
 *                  protocol); dsm_free; means, every node at once
 *   barrier        dsm_barrier with nothing written, mean, every node at once
 *   lock, free     node 1 takes and releases a lock that node 0 manages and
 *                  nobody holds: a fresh lock id each time (id % N == 0), so
 *                  each acquire is a request to the manager and its grant;
 *                  also lock 0 again and again, which after the first time
 *                  is this node's already (no message): both medians, means
 *   lock, contended every node adds 1 to a shared counter under one lock;
 *                  mean time per lock + increment + unlock on each node; the
 *                  counter is checked
 *   read fault     node 0 allocates pages (home: node 0), writes a word of
 *                  each; after a barrier node 1 reads a word of each, timing
 *                  each first touch; values checked; median. Even pages
 *                  first, then odd ones, so that each fault fetches one page
 *                  (hlrc reads ahead after faults on consecutive pages);
 *                  then again in order, where the mean is the cost per page
 *                  with the read-ahead
 *   write fault    node 1 writes a word of pages homed on node 0 that it
 *                  has never touched (fetch + twin), and of pages it has
 *                  just read (twin only); node 0 checks the values after a
 *                  barrier; medians
 * Baselines, same run, same processes:
 *   (a) raw UDP round trip 8 B -> 8 B, node 1 to node 0
 *   (b) raw UDP round trip 8 B -> one coherence page (dsm_page_size(), 8192
 *       unless set), node 1 to node 0, plus one local fault on node 1: a
 *       private page set PROT_NONE, touched, opened again by a SIGSEGV
 *       handler (the touch-to-return time; the PROT_NONE call is shown apart)
 *   (c) raw UDP barrier: every other node sends node 0 8 B, node 0 answers
 *       each with 8 B once all have come (N-1 in, N-1 out)
 * each with blocking recvfrom (pays the cross-CPU wake-up, 24-30 µs here)
 * and with busy polling (recvfrom MSG_DONTWAIT in a loop). The targets:
 *   remote read fault <= 1.5 x ((b) + local fault)
 *   free remote lock  <= 1.5 x (a)
 *   barrier, 8 nodes  <= 2 x (c)
 * are printed against both baselines; the verdict uses busy polling, the
 * stricter one (dsm's own waits poll before they sleep).
 *
 * All phases run in rounds (every phase once per round), so that the drift
 * of this shared machine spreads over all of them alike; the figures are
 * over all samples of all rounds. Node 0 prints. Exit 1 on any failure
 * (every wait is bounded), 2 on a bad option.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "dsm.h"
#include "raw_udp.h"

#define MAX_NODES 256
#define WAIT_S    10.0 /* a live peer answers within ms */
#define RESEND_S  0.1  /* raw barrier: resend an arrival unanswered this long */

/* ---- figures -------------------------------------------------------------- */

struct summary {
    double median, mean, p10, p90;
    uint64_t n;
};

/* Sorts v. */
static struct summary summarize(double *v, size_t n)
{
    struct summary s = {.n = n};
    if (!n)
        return s;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    s.mean = sum / (double)n;
    s.median = bench_median(v, n);
    s.p10 = bench_quantile(v, n, 0.1);
    s.p90 = bench_quantile(v, n, 0.9);
    return s;
}

/* A growing list of samples, µs. */
struct samples {
    double *v;
    size_t  n, cap;
};

static void add(struct samples *s, double us)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        if (!s->v)
            bench_fail("out of memory for samples");
    }
    s->v[s->n++] = us;
}

static double us_since(uint64_t t0)
{
    return (double)(bench_now_ns() - t0) / 1e3;
}

/* ---- what goes through shared memory to node 0 ----------------------------- */

/* Node 1's results: the two-node phases. */
struct pair_results {
    struct summary rtt8[2];     /* (a), indexed by enum raw_wait */
    struct summary rttpage[2];  /* (b) */
    struct summary local_read, local_write, downgrade;
    struct summary lock_fresh, lock_cached;
    struct summary read_fault, read_refetch, read_seq, write_fresh, write_ro;
    uint64_t       resends;
};

/* Every node's. */
struct node_results {
    uint32_t       udp_addr, udp_port; /* the raw barrier socket, network order */
    double         startup_us;
    struct summary alloc_fresh, alloc_reused, free_;
    struct summary barrier;
    struct summary rawbar[2];          /* (c), indexed by enum raw_wait */
    struct summary contended;
    uint64_t       rawbar_resends;
};

struct board {
    uint64_t            counter_check; /* node 0 fills it after the run */
    struct pair_results pair;
    struct node_results node[];        /* dsm_nodes() of them */
};

/* ---- settings --------------------------------------------------------------- */

struct plan {
    unsigned rounds;
    unsigned pp, pp_warmup;  /* raw ping-pong round trips per round and wait method */
    unsigned local;          /* local faults per round */
    unsigned rawbar;         /* raw barriers per round and wait method */
    unsigned barrier;        /* dsm barriers per round */
    unsigned alloc;          /* allocations per round (each kind) */
    unsigned lock;           /* free-lock acquisitions per round (each kind) */
    unsigned contended;      /* contended acquisitions per node per round */
    unsigned pages;          /* pages per fault measurement per round (4 KiB pages) */
};

static const struct plan full_plan = {
    .rounds = 20, .pp = 4000, .pp_warmup = 100, .local = 4000, .rawbar = 2000,
    .barrier = 2000, .alloc = 500, .lock = 2000, .contended = 300, .pages = 1000,
};
static const struct plan quick_plan = {
    .rounds = 1, .pp = 200, .pp_warmup = 20, .local = 200, .rawbar = 100,
    .barrier = 100, .alloc = 100, .lock = 100, .contended = 30, .pages = 100,
};

static size_t page_size(void) { return dsm_page_size(); }

/* ---- state ---------------------------------------------------------------- */

struct bench {
    int              me, nodes;
    struct plan      plan;
    enum bench_pin   pin;
    size_t           page;
    struct board    *board;
    uint64_t        *counter;      /* the contended lock's, a page of its own */
    int              counter_lock;
    uint64_t         counter_adds; /* by this node */
    unsigned         fresh_lock;   /* next fresh lock number */

    /* nodes 0 and 1: the ping-pong socket and its control channel */
    struct bench_ctl ctl;
    struct raw_udp   pp;
    uint16_t         phase;
    unsigned char   *req, *rep;
    double          *rtt;

    /* every node: the raw barrier socket and the others' addresses */
    int                 bar_fd;
    struct sockaddr_in *addr;
    uint32_t            bar_round;

    /* samples */
    struct samples rtt8[2], rttpage[2], local_read, local_write, downgrade;
    struct samples lock_fresh, lock_cached, read_fault, read_refetch, read_seq, write_fresh, write_ro;
    struct samples alloc_fresh, alloc_reused, free_, barrier, rawbar[2], contended;
    uint64_t       resends, rawbar_resends;
};

/* ---- (a), (b): raw UDP ping-pong, node 1 asks, node 0 answers -------------------- */

static void phase_pingpong(struct bench *b)
{
    static const enum raw_wait hows[] = {RAW_BUSY, RAW_BLOCKING};
    for (int h = 0; h < 2; h++) {
        enum raw_wait how = hows[h];
        for (int kind = 0; kind < 2; kind++) {
            size_t rep = kind ? b->page : 8;
            uint16_t phase = ++b->phase;
            if (b->me == 0) {
                raw_udp_pingpong_server(&b->pp, &b->ctl, phase, b->req, 8, b->rep, rep, how);
                continue;
            }
            raw_udp_pingpong_client(&b->pp, &b->ctl, phase, b->req, 8, b->rep, rep, how,
                                    b->plan.pp_warmup, b->plan.pp, b->rtt, &b->resends);
            struct samples *s = kind ? &b->rttpage[how] : &b->rtt8[how];
            for (unsigned i = 0; i < b->plan.pp; i++)
                add(s, b->rtt[i]);
        }
    }
}

/* ---- local fault, node 1 ---------------------------------------------------------- */

static char *volatile lf_page;
static size_t lf_len;
static volatile int lf_prot;
static struct sigaction lf_previous;

/* Opens our private page; any other fault is dsm's (or a real crash), and
 * goes to the handler we displaced. */
static void lf_handler(int sig, siginfo_t *si, void *uctx)
{
    char *a = si->si_addr;
    if (lf_page && a >= lf_page && a < lf_page + lf_len) {
        mprotect(lf_page, lf_len, lf_prot);
        return;
    }
    if (lf_previous.sa_flags & SA_SIGINFO) {
        lf_previous.sa_sigaction(sig, si, uctx);
        return;
    }
    signal(SIGSEGV, SIG_DFL); /* the access faults again and kills us */
}

static void phase_local_fault(struct bench *b)
{
    if (b->me != 1)
        return;
    lf_len = b->page;
    char *p = mmap(NULL, lf_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        bench_fail("mmap: %s", strerror(errno));
    memset(p, 1, lf_len);
    lf_page = p;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = lf_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &lf_previous) < 0)
        bench_fail("sigaction: %s", strerror(errno));
    volatile char *vp = p;
    for (unsigned i = 0; i < b->plan.local; i++) {
        /* read fault: NONE -> READ, as a fault on an invalid page */
        uint64_t t0 = bench_now_ns();
        if (mprotect(p, lf_len, PROT_NONE) < 0)
            bench_fail("mprotect: %s", strerror(errno));
        add(&b->downgrade, us_since(t0));
        lf_prot = PROT_READ;
        t0 = bench_now_ns();
        char c = vp[i % lf_len];
        add(&b->local_read, us_since(t0));
        if (c != 1)
            bench_fail("local fault: read %d, expected 1", c);
        /* write fault: READ -> READ|WRITE, as the first write to a valid page */
        lf_prot = PROT_READ | PROT_WRITE;
        t0 = bench_now_ns();
        vp[i % lf_len] = 1;
        add(&b->local_write, us_since(t0));
    }
    if (sigaction(SIGSEGV, &lf_previous, NULL) < 0)
        bench_fail("sigaction: %s", strerror(errno));
    lf_page = NULL;
    munmap(p, lf_len);
}

/* ---- (c): raw UDP barrier, every node --------------------------------------------- */

enum { BAR_ARRIVE = 1, BAR_RELEASE = 2 };

struct bar_msg { /* 8 bytes */
    uint32_t round;
    uint8_t  kind;
    uint8_t  from;
    uint16_t magic;
};
#define BAR_MAGIC 0xb4a7

static void bar_send(struct bench *b, int to, uint32_t round, int kind)
{
    struct bar_msg m = {.round = round, .kind = (uint8_t)kind, .from = (uint8_t)b->me,
                        .magic = BAR_MAGIC};
    raw_udp_sendto(b->bar_fd, &m, sizeof m, &b->addr[to]); /* if lost, the resend covers it */
}

/* Receives one well-formed barrier message from a node of the job within
 * `timeout` s: 0, or -ETIMEDOUT. */
static int bar_recv(struct bench *b, enum raw_wait how, double timeout, struct bar_msg *m)
{
    uint64_t deadline = bench_now_ns() + (uint64_t)(timeout * 1e9);
    for (;;) {
        struct sockaddr_in from;
        socklen_t fl = sizeof from;
        ssize_t n = recvfrom(b->bar_fd, m, sizeof *m, how == RAW_BUSY ? MSG_DONTWAIT : 0,
                             (struct sockaddr *)&from, &fl);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                bench_fail("recvfrom: %s", strerror(errno));
            if (bench_now_ns() >= deadline)
                return -ETIMEDOUT;
            if (how == RAW_BUSY)
                sched_yield(); /* lets a node sharing this CPU answer */
            continue;
        }
        if (n != (ssize_t)sizeof *m || m->magic != BAR_MAGIC || m->from >= b->nodes ||
            from.sin_addr.s_addr != b->addr[m->from].sin_addr.s_addr ||
            from.sin_port != b->addr[m->from].sin_port)
            continue;
        return 0;
    }
}

static void set_rcvtimeo(int fd, double s)
{
    struct timeval tv = {.tv_sec = (time_t)s, .tv_usec = (suseconds_t)((s - (double)(time_t)s) * 1e6)};
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0)
        bench_fail("SO_RCVTIMEO: %s", strerror(errno));
}

static void raw_barrier(struct bench *b, enum raw_wait how, uint32_t round)
{
    struct bar_msg m;
    uint64_t start = bench_now_ns();
    if (b->me != 0) {
        bar_send(b, 0, round, BAR_ARRIVE);
        for (;;) {
            if (bar_recv(b, how, RESEND_S, &m) < 0) {
                if (bench_now_ns() - start > (uint64_t)(WAIT_S * 1e9))
                    bench_fail("raw UDP barrier %u: no release from node 0 within %.0f s", round,
                               WAIT_S);
                b->rawbar_resends++;
                bar_send(b, 0, round, BAR_ARRIVE);
                continue;
            }
            if (m.kind == BAR_RELEASE && m.round == round)
                return;
        }
    }
    static bool arrived[MAX_NODES];
    int count = 0;
    memset(arrived, 0, sizeof arrived);
    while (count < b->nodes - 1) {
        if (bar_recv(b, how, RESEND_S, &m) < 0) {
            if (bench_now_ns() - start > (uint64_t)(WAIT_S * 1e9))
                bench_fail("raw UDP barrier %u: %d of %d nodes arrived within %.0f s", round,
                           count, b->nodes - 1, WAIT_S);
            continue;
        }
        if (m.kind != BAR_ARRIVE || m.from == 0)
            continue;
        if (m.round == round && !arrived[m.from]) {
            arrived[m.from] = true;
            count++;
        } else if (m.round + 1 == round) {
            bar_send(b, m.from, m.round, BAR_RELEASE); /* its release was lost */
        }
    }
    for (int i = 1; i < b->nodes; i++)
        bar_send(b, i, round, BAR_RELEASE);
}

static void phase_raw_barrier(struct bench *b)
{
    static const enum raw_wait hows[] = {RAW_BUSY, RAW_BLOCKING};
    for (int h = 0; h < 2; h++) {
        enum raw_wait how = hows[h];
        /* The last round's stragglers (a resent arrival, a duplicate
         * release) are told apart by their round number. */
        dsm_barrier();
        for (unsigned i = 0; i < b->plan.rawbar + b->plan.rawbar / 10; i++) {
            uint64_t t0 = bench_now_ns();
            raw_barrier(b, how, ++b->bar_round);
            if (i >= b->plan.rawbar / 10) /* the first tenth warms up */
                add(&b->rawbar[how], us_since(t0));
        }
    }
}

/* ---- dsm barrier, alloc, locks ------------------------------------------------------ */

static void phase_barrier(struct bench *b)
{
    for (unsigned i = 0; i < b->plan.barrier; i++) {
        uint64_t t0 = bench_now_ns();
        dsm_barrier();
        add(&b->barrier, us_since(t0));
    }
}

#define ALLOC_CHUNK 100

static void phase_alloc(struct bench *b)
{
    unsigned n = b->plan.alloc;
    void **p = calloc(n, sizeof *p);
    if (!p)
        bench_fail("out of memory");
    for (unsigned i = 0; i < n; i++) {
        uint64_t t0 = bench_now_ns();
        p[i] = dsm_malloc(8192);
        add(&b->alloc_fresh, us_since(t0));
        if (!p[i])
            bench_fail("dsm_malloc(8192) returned NULL");
    }
    for (unsigned i = 0; i < n; i++) {
        uint64_t t0 = bench_now_ns();
        dsm_free(p[i]);
        add(&b->free_, us_since(t0));
    }
    /* Kept: the next round's allocations then start from fresh memory again.
     * Clearing them makes write notices; a barrier every ALLOC_CHUNK keeps
     * the intervals a barrier gathers few. */
    for (unsigned i = 0; i < n; i++) {
        if (i && i % ALLOC_CHUNK == 0)
            dsm_barrier();
        uint64_t t0 = bench_now_ns();
        p[i] = dsm_malloc(8192);
        add(&b->alloc_reused, us_since(t0));
        if (!p[i])
            bench_fail("dsm_malloc(8192) returned NULL");
        if (((uint64_t *)p[i])[0] != 0 || ((uint64_t *)p[i])[1023] != 0)
            bench_fail("dsm_malloc returned memory that is not zero");
    }
    free(p);
}

static void phase_lock_free(struct bench *b)
{
    if (b->me != 1)
        return;
    for (unsigned i = 0; i < b->plan.lock; i++) {
        /* id % nodes == 0: node 0 manages it; nobody ever asked for it */
        int id = b->nodes * (int)(1000 + b->fresh_lock++);
        uint64_t t0 = bench_now_ns();
        dsm_lock(id);
        dsm_unlock(id);
        add(&b->lock_fresh, us_since(t0));
    }
    for (unsigned i = 0; i < b->plan.lock; i++) {
        uint64_t t0 = bench_now_ns();
        dsm_lock(0);
        dsm_unlock(0);
        add(&b->lock_cached, us_since(t0));
    }
}

/* In chunks between barriers, so that every node contends through every
 * chunk (a node that started first would otherwise run ahead alone), and
 * so that the intervals a barrier gathers stay few. */
#define CONTENDED_CHUNK 50

static void phase_lock_contended(struct bench *b)
{
    for (unsigned i = 0; i < b->plan.contended; i++) {
        if (i && i % CONTENDED_CHUNK == 0)
            dsm_barrier();
        uint64_t t0 = bench_now_ns();
        dsm_lock(b->counter_lock);
        (*b->counter)++;
        dsm_unlock(b->counter_lock);
        add(&b->contended, us_since(t0));
        b->counter_adds++;
    }
}

/* ---- remote faults ------------------------------------------------------------------ */

/* The word node 1 expects in page i of round r, kind k. */
static uint64_t fault_word(unsigned r, unsigned k, size_t i)
{
    return ((uint64_t)(r + 1) << 40) | ((uint64_t)(k + 1) << 32) | (uint64_t)(i + 1);
}

/* Node 0 allocates `pages` pages homed at itself; every node gets the
 * pointer. */
static char *alloc_pages_at_0(struct bench *b)
{
    char *p = NULL;
    if (b->me == 0) {
        p = dsm_malloc_home(b->plan.pages * b->page, DSM_HOME_LOCAL);
        if (!p)
            bench_fail("dsm_malloc_home returned NULL");
    }
    dsm_bcast(&p, sizeof p, 0);
    return p;
}

/* Node 1 reads the first word of each page, timing each, and checks it
 * holds what node 0 wrote. `isolated`: the even pages first, then the odd
 * ones, so that no fault follows one on the page before it and each is one
 * fetch of one page; otherwise in order, which lets the protocol read ahead
 * (hlrc fetches a run of pages with one request): then most reads find
 * their page already here, and the mean is the cost per page. */
static void time_reads(struct bench *b, char *p, unsigned round, unsigned kind, bool isolated,
                       struct samples *out)
{
    size_t n = b->plan.pages;
    for (size_t k = 0; k < n; k++) {
        size_t i = !isolated ? k : k < (n + 1) / 2 ? 2 * k : 2 * (k - (n + 1) / 2) + 1;
        volatile uint64_t *w = (volatile uint64_t *)(p + i * b->page);
        uint64_t t0 = bench_now_ns();
        uint64_t v = *w;
        add(out, us_since(t0));
        if (v != fault_word(round, kind, i))
            bench_fail("read fault: page %zu holds %#llx, node 0 wrote %#llx", i,
                       (unsigned long long)v, (unsigned long long)fault_word(round, kind, i));
    }
}

static void phase_faults(struct bench *b, unsigned round)
{
    size_t ps = b->page, n = b->plan.pages;

    /* remote read fault: fresh copies of pages node 0 has written */
    char *p = alloc_pages_at_0(b);
    if (b->me == 0)
        for (size_t i = 0; i < n; i++)
            *(uint64_t *)(p + i * ps) = fault_word(round, 0, i);
    dsm_barrier();
    if (b->me == 1)
        time_reads(b, p, round, 0, true, &b->read_fault);
    dsm_barrier();

    /* remote read fault again, after node 0 rewrote the pages and the
     * barrier invalidated node 1's copies: the page frames are backed here
     * now, as in a running program. The first touch above also pays the
     * kernel's allocation of fresh memory, which the raw baseline's reused
     * buffer never does. */
    if (b->me == 0)
        for (size_t i = 0; i < n; i++)
            *(uint64_t *)(p + i * ps) = fault_word(round, 3, i);
    dsm_barrier();
    if (b->me == 1)
        time_reads(b, p, round, 3, true, &b->read_refetch);
    dsm_barrier();

    /* remote reads of consecutive fresh pages, read ahead */
    p = alloc_pages_at_0(b);
    if (b->me == 0)
        for (size_t i = 0; i < n; i++)
            *(uint64_t *)(p + i * ps) = fault_word(round, 4, i);
    dsm_barrier();
    if (b->me == 1)
        time_reads(b, p, round, 4, false, &b->read_seq);
    dsm_barrier();

    /* remote write fault, pages never touched here: fetch + twin */
    p = alloc_pages_at_0(b);
    if (b->me == 1)
        for (size_t i = 0; i < n; i++) {
            volatile uint64_t *w = (volatile uint64_t *)(p + i * ps + 8);
            uint64_t t0 = bench_now_ns();
            *w = fault_word(round, 1, i);
            add(&b->write_fresh, us_since(t0));
        }
    dsm_barrier();
    if (b->me == 0)
        for (size_t i = 0; i < n; i++) {
            uint64_t v = *(volatile uint64_t *)(p + i * ps + 8);
            if (v != fault_word(round, 1, i))
                bench_fail("write fault: page %zu holds %#llx after the barrier, node 1 wrote %#llx",
                           i, (unsigned long long)v, (unsigned long long)fault_word(round, 1, i));
        }

    /* remote write fault, pages node 1 holds read-only: twin only */
    p = alloc_pages_at_0(b);
    if (b->me == 1) {
        uint64_t sum = 0;
        for (size_t i = 0; i < n; i++)
            sum += *(volatile uint64_t *)(p + i * ps + 16);
        if (sum)
            bench_fail("fresh shared memory is not zero");
        for (size_t i = 0; i < n; i++) {
            volatile uint64_t *w = (volatile uint64_t *)(p + i * ps + 16);
            uint64_t t0 = bench_now_ns();
            *w = fault_word(round, 2, i);
            add(&b->write_ro, us_since(t0));
        }
    }
    dsm_barrier();
    if (b->me == 0)
        for (size_t i = 0; i < n; i++) {
            uint64_t v = *(volatile uint64_t *)(p + i * ps + 16);
            if (v != fault_word(round, 2, i))
                bench_fail("write fault: page %zu holds %#llx after the barrier, node 1 wrote %#llx",
                           i, (unsigned long long)v, (unsigned long long)fault_word(round, 2, i));
        }
    dsm_barrier();
}

/* ---- report ----------------------------------------------------------------------- */

static const char *verdict(double ratio, double target)
{
    return ratio <= target ? "meets" : "MISSES";
}

static void line(const char *what, struct summary s, const char *note)
{
    printf("  %-44s %9.2f %9.2f %9.2f %9.2f %8llu  %s\n", what, s.median, s.mean, s.p10, s.p90,
           (unsigned long long)s.n, note);
}

static void report(struct bench *b, double wall_s)
{
    const struct board *bd = b->board;
    const struct pair_results *pr = &bd->pair;
    const struct node_results *n0 = &bd->node[0];
    int N = b->nodes;
    double startup_max = 0, barrier_max = 0, alloc_max = 0, cont_max = 0, rawbar_max[2] = {0, 0};
    uint64_t rawbar_resends = 0;
    for (int i = 0; i < N; i++) {
        const struct node_results *r = &bd->node[i];
        if (r->startup_us > startup_max)
            startup_max = r->startup_us;
        if (r->barrier.mean > barrier_max)
            barrier_max = r->barrier.mean;
        if (r->alloc_fresh.mean > alloc_max)
            alloc_max = r->alloc_fresh.mean;
        if (r->contended.mean > cont_max)
            cont_max = r->contended.mean;
        for (int h = 0; h < 2; h++)
            if (r->rawbar[h].mean > rawbar_max[h])
                rawbar_max[h] = r->rawbar[h].mean;
        rawbar_resends += r->rawbar_resends;
    }

    printf("micro: dsm's basic operations on %d nodes against raw UDP, same run (seed 001, Table 2)\n",
           N);
    printf("  coherence page %zu B; %u round(s), every phase once per round; %.1f s in all\n",
           b->page, b->plan.rounds, wall_s);
    printf("  %s\n", bench_pin_describe(b->pin));
    printf("  raw UDP: a socket of each node's own, beside dsm's; blk = blocking recvfrom, "
           "busy = recvfrom(MSG_DONTWAIT) loop\n\n");

    printf("  %-44s %9s %9s %9s %9s %8s\n", "µs", "median", "mean", "p10", "p90", "samples");
    printf("Table 2 of seed 001 (SMS 0.4.1 over UDP, 8 nodes: startup 0.143 s, alloc 0.812 ms,\n"
           "barrier 1.794 ms, lock/unlock 8.733 ms)\n");
    printf("  %-44s %9.0f us on node 0, %.0f us the greatest over nodes\n", "startup (dsm_startup)",
           n0->startup_us, startup_max);
    line("alloc: dsm_malloc(8 KiB), fresh memory", n0->alloc_fresh, "node 0");
    printf("  %-44s %9s %9.2f  greatest mean over nodes\n", "", "", alloc_max);
    line("alloc: dsm_malloc(8 KiB), just freed memory", n0->alloc_reused, "node 0 (clears it)");
    line("dsm_free(8 KiB)", n0->free_, "node 0");
    line("barrier: dsm_barrier", n0->barrier, "node 0");
    printf("  %-44s %9s %9.2f  greatest mean over nodes\n", "", "", barrier_max);
    line("lock/unlock, free, manager node 0, fresh id", pr->lock_fresh, "node 1: request + grant");
    line("lock/unlock 0 again and again (node 1)", pr->lock_cached,
         "after the 1st: token kept, no message");
    line("lock/unlock + increment, contended, all nodes", n0->contended, "node 0");
    printf("  %-44s %9s %9.2f  greatest mean over nodes; counter %llu, expected %llu\n", "", "",
           cont_max, (unsigned long long)bd->counter_check,
           (unsigned long long)N * b->plan.rounds * b->plan.contended);

    printf("Page faults, node 1 on pages homed at node 0 (one first touch each)\n");
    line("remote read fault, first touch", pr->read_fault, "fetch into fresh memory");
    line("remote read fault, page frame here", pr->read_refetch, "re-fetch after invalidation");
    line("remote reads, consecutive pages, first touch", pr->read_seq,
         "read ahead: the mean is per page");
    line("remote write fault, page not here", pr->write_fresh, "fetch + twin");
    line("remote write fault, page here read-only", pr->write_ro, "twin");

    printf("Baselines, same run\n");
    line("(a) raw UDP 8 B -> 8 B round trip, blk", pr->rtt8[RAW_BLOCKING], "node 1 -> node 0");
    line("(a) raw UDP 8 B -> 8 B round trip, busy", pr->rtt8[RAW_BUSY], "");
    char lbl[64];
    snprintf(lbl, sizeof lbl, "(b) raw UDP 8 B -> %zu B round trip, blk", b->page);
    line(lbl, pr->rttpage[RAW_BLOCKING], "node 1 -> node 0");
    snprintf(lbl, sizeof lbl, "(b) raw UDP 8 B -> %zu B round trip, busy", b->page);
    line(lbl, pr->rttpage[RAW_BUSY], "");
    line("local read fault (NONE -> READ in handler)", pr->local_read, "node 1, private page");
    line("local write fault (READ -> RW in handler)", pr->local_write, "node 1, private page");
    line("mprotect(PROT_NONE) before each (apart)", pr->downgrade, "node 1");
    snprintf(lbl, sizeof lbl, "(c) raw UDP barrier, %d in + %d out, blk", N - 1, N - 1);
    line(lbl, n0->rawbar[RAW_BLOCKING], "node 0");
    printf("  %-44s %9s %9.2f  greatest mean over nodes\n", "", "", rawbar_max[RAW_BLOCKING]);
    snprintf(lbl, sizeof lbl, "(c) raw UDP barrier, %d in + %d out, busy", N - 1, N - 1);
    line(lbl, n0->rawbar[RAW_BUSY], "node 0");
    printf("  %-44s %9s %9.2f  greatest mean over nodes\n", "", "", rawbar_max[RAW_BUSY]);
    printf("  raw UDP resends: ping-pong %llu, barrier %llu\n",
           (unsigned long long)pr->resends, (unsigned long long)rawbar_resends);

    printf("Against the targets (medians; barrier: means, node 0), blk | busy baseline\n");
    double fb[2], rf[2], rr[2], wf[2], wr[2], lk[2], br[2];
    for (int h = 0; h < 2; h++) {
        fb[h] = pr->rttpage[h].median + pr->local_read.median;
        rf[h] = pr->read_fault.median / fb[h];
        rr[h] = pr->read_refetch.median / fb[h];
        wf[h] = pr->write_fresh.median / (pr->rttpage[h].median + pr->local_write.median);
        wr[h] = pr->write_ro.median / pr->local_write.median;
        lk[h] = pr->lock_fresh.median / pr->rtt8[h].median;
        br[h] = n0->barrier.mean / n0->rawbar[h].mean;
    }
    /* An update protocol (erc-upd) keeps the copy valid: the re-read then
     * takes no fault at all, faster than any local fault, and there is
     * nothing to judge. */
    if (pr->read_refetch.median < pr->local_read.median / 2)
        printf("  remote read fault / ((b) + local fault)    (no fault: the protocol updated the copy"
               " in place; no verdict)\n");
    else
        printf("  remote read fault / ((b) + local fault)    %6.2f | %6.2f   target <= 1.5: %s\n",
               rr[RAW_BLOCKING], rr[RAW_BUSY], verdict(rr[RAW_BUSY], 1.5));
    printf("  ... first touch (+ kernel page allocation) %6.2f | %6.2f\n",
           rf[RAW_BLOCKING], rf[RAW_BUSY]);
    printf("  free remote lock / (a)                     %6.2f | %6.2f   target <= 1.5: %s\n",
           lk[RAW_BLOCKING], lk[RAW_BUSY], verdict(lk[RAW_BUSY], 1.5));
    printf("  barrier / (c), %d nodes                     %6.2f | %6.2f   target <= 2 at 8 nodes: %s\n",
           N, br[RAW_BLOCKING], br[RAW_BUSY],
           N == 8 ? verdict(br[RAW_BUSY], 2.0) : "(not 8 nodes)");
    printf("  barrier / (c), %d nodes, medians            %6.2f | %6.2f   (the target is on means)\n",
           N, n0->barrier.median / n0->rawbar[RAW_BLOCKING].median,
           n0->barrier.median / n0->rawbar[RAW_BUSY].median);
    printf("  remote write fault, not here / ((b) + local write fault)  %6.2f | %6.2f   (no target)\n",
           wf[RAW_BLOCKING], wf[RAW_BUSY]);
    printf("  remote write fault, read-only / local write fault          %6.2f          (no target)\n",
           wr[0]);
    printf("  the verdicts use the busy-polling baseline, the stricter one: dsm's own waits\n"
           "  poll before they sleep (DSM_NET_SPIN_US), so the cross-CPU wake-up is not theirs to pay\n");
}

/* ---- main ----------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: dsmrun -n N micro [--quick] [--rounds R] [--pin app|node|none]\n"
               "  --quick     few iterations, one round (a smoke test of a few seconds)\n"
               "  --rounds R  rounds of every phase (default 20)\n"
               "  --pin app   each node's application thread on a CPU (node i: the i-th\n"
               "              allowed CPU, modulo their number), dsm's threads free (default)\n"
               "  --pin node  all of each node's threads on one CPU\n"
               "  --pin none  leave every thread to the scheduler\n");
}

int main(int argc, char **argv)
{
    /* Each result as it is measured: under dsmrun stdout is a pipe, and a
     * long run on a loaded machine would otherwise show nothing until it ends. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    uint64_t t_start = bench_now_ns();
    dsm_startup(&argc, &argv);
    double startup_us = us_since(t_start);

    static struct bench b;
    b.me = dsm_rank();
    b.nodes = dsm_nodes();
    b.plan = full_plan;
    b.pin = PIN_APP;
    int quick = 0, rounds = 0;
    struct arg_option options[] = {
        {"--quick", ARG_SET, &quick, .value = 1},
        {"--rounds", ARG_INT, &rounds, "a round count 1..1000", .lo = 1, .hi = 1000},
        BENCH_PIN_OPTION(&b.pin),
        {0}};
    int status = args_read(argc, argv, options, usage, b.me == 0);
    if (status != ARGS_RUN) {
        dsm_finish();
        return status;
    }
    if (quick)
        b.plan = quick_plan;
    if (rounds) /* over --quick's, wherever it stands */
        b.plan.rounds = (unsigned)rounds;
    if (b.nodes < 2 || b.nodes > MAX_NODES)
        bench_fail("needs 2 to %d nodes (dsmrun -n N), not %d", MAX_NODES, b.nodes);
    b.page = page_size();
    /* As many bytes of pages as with 4 KiB pages, but never too few samples. */
    unsigned pages = (unsigned)(b.plan.pages * 4096 / b.page);
    b.plan.pages = pages > b.plan.pages / 10 ? pages : b.plan.pages / 10;
    int rc = bench_pin_apply(b.pin, b.me);
    if (rc)
        bench_fail("cannot pin to a CPU: %s", strerror(-rc));

    /* The board and the contended counter, in shared memory. */
    if (b.me == 0) {
        b.board = dsm_malloc(sizeof *b.board + (size_t)b.nodes * sizeof b.board->node[0]);
        b.counter = dsm_malloc(b.page); /* a page of its own */
        if (!b.board || !b.counter)
            bench_fail("dsm_malloc returned NULL");
    }
    dsm_bcast(&b.board, sizeof b.board, 0);
    dsm_bcast(&b.counter, sizeof b.counter, 0);
    b.counter_lock = 1; /* managed by node 1 */

    /* Sockets: the barrier's on every node, the ping-pong's on nodes 0, 1. */
    struct raw_udp bar;
    raw_udp_open(&bar);
    b.bar_fd = bar.fd;
    set_rcvtimeo(b.bar_fd, RESEND_S);
    b.board->node[b.me].udp_addr = bar.self.sin_addr.s_addr;
    b.board->node[b.me].udp_port = bar.self.sin_port;
    b.board->node[b.me].startup_us = startup_us;
    dsm_barrier();
    b.addr = calloc((size_t)b.nodes, sizeof *b.addr);
    if (!b.addr)
        bench_fail("out of memory");
    for (int i = 0; i < b.nodes; i++) {
        b.addr[i].sin_family = AF_INET;
        b.addr[i].sin_addr.s_addr = b.board->node[i].udp_addr;
        b.addr[i].sin_port = (in_port_t)b.board->node[i].udp_port;
        if (!b.addr[i].sin_port)
            bench_fail("node %d's barrier socket address did not come through shared memory", i);
    }
    if (b.me < 2) {
        bench_ctl_open(&b.ctl);
        raw_udp_open(&b.pp);
        raw_udp_exchange(&b.pp, &b.ctl);
        b.req = aligned_alloc(4096, raw_udp_span(65536));
        b.rep = aligned_alloc(4096, raw_udp_span(65536));
        b.rtt = calloc(b.plan.pp, sizeof *b.rtt);
        if (!b.req || !b.rep || !b.rtt)
            bench_fail("out of memory");
        memset(b.req, 0, raw_udp_span(65536));
        memset(b.rep, 0, raw_udp_span(65536));
    }
    dsm_barrier();

    uint64_t t_run = bench_now_ns();
    for (unsigned r = 0; r < b.plan.rounds; r++) {
        if (b.me < 2)
            phase_pingpong(&b);
        dsm_barrier();
        phase_local_fault(&b);
        dsm_barrier();
        phase_raw_barrier(&b);
        dsm_barrier();
        phase_barrier(&b);
        dsm_barrier();
        phase_alloc(&b);
        dsm_barrier();
        phase_lock_free(&b);
        dsm_barrier();
        phase_lock_contended(&b);
        dsm_barrier();
        phase_faults(&b, r);
    }
    double wall_s = (double)(bench_now_ns() - t_run) / 1e9;

    /* Results to node 0 through shared memory. */
    struct node_results *mine = &b.board->node[b.me];
    mine->alloc_fresh = summarize(b.alloc_fresh.v, b.alloc_fresh.n);
    mine->alloc_reused = summarize(b.alloc_reused.v, b.alloc_reused.n);
    mine->free_ = summarize(b.free_.v, b.free_.n);
    mine->barrier = summarize(b.barrier.v, b.barrier.n);
    for (int h = 0; h < 2; h++)
        mine->rawbar[h] = summarize(b.rawbar[h].v, b.rawbar[h].n);
    mine->contended = summarize(b.contended.v, b.contended.n);
    mine->rawbar_resends = b.rawbar_resends;
    if (b.me == 1) {
        struct pair_results *p = &b.board->pair;
        for (int h = 0; h < 2; h++) {
            p->rtt8[h] = summarize(b.rtt8[h].v, b.rtt8[h].n);
            p->rttpage[h] = summarize(b.rttpage[h].v, b.rttpage[h].n);
        }
        p->local_read = summarize(b.local_read.v, b.local_read.n);
        p->local_write = summarize(b.local_write.v, b.local_write.n);
        p->downgrade = summarize(b.downgrade.v, b.downgrade.n);
        p->lock_fresh = summarize(b.lock_fresh.v, b.lock_fresh.n);
        p->lock_cached = summarize(b.lock_cached.v, b.lock_cached.n);
        p->read_fault = summarize(b.read_fault.v, b.read_fault.n);
        p->read_refetch = summarize(b.read_refetch.v, b.read_refetch.n);
        p->read_seq = summarize(b.read_seq.v, b.read_seq.n);
        p->write_fresh = summarize(b.write_fresh.v, b.write_fresh.n);
        p->write_ro = summarize(b.write_ro.v, b.write_ro.n);
        p->resends = b.resends;
    }
    dsm_barrier();

    int ok = 1;
    if (b.me == 0) {
        uint64_t expect = (uint64_t)b.nodes * b.plan.rounds * b.plan.contended;
        uint64_t got = *b.counter;
        b.board->counter_check = got;
        if (got != expect) {
            fprintf(stderr, "micro: node 0: the counter incremented under lock %d holds %llu, "
                            "expected %llu\n",
                    b.counter_lock, (unsigned long long)got, (unsigned long long)expect);
            ok = 0;
        } else {
            report(&b, wall_s);
            fflush(stdout);
        }
    }
    dsm_bcast(&ok, sizeof ok, 0);
    dsm_finish();
    return ok ? 0 : 1;
}
