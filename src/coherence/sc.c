/*
 * sc.c — sequential consistency: a single writer or many readers per page,
 * writes invalidate every other copy (IVY's fixed distributed manager, Li
 * and Hudak 1989; seed 000's SC).
 *
 * Each page has a manager, its home (found as home.c finds homes: a node
 * that does not know the home asks the page's base node, which decides it
 * or forwards the request). The manager knows the page's owner — the node
 * whose copy is current and which sends it — and its copyset, the nodes
 * holding a valid copy (the owner among them). It runs one transaction per
 * page at a time and queues the others:
 *
 *   read   SC_REQ → manager; SC_FWD → owner, which write-protects its copy
 *          and sends it (SC_PAGE) to the requester; the requester installs
 *          it read-only and confirms (SC_DONE); it joins the copyset.
 *   write  SC_REQ → manager; SC_INV → every other copy holder, each answers
 *          SC_INV_ACK; then a requester that already holds a copy (always
 *          current under SC) is granted the right to write (SC_PAGE without
 *          data), any other gets the page from the owner, which drops its
 *          own access; SC_DONE makes the requester owner and sole holder.
 *
 * Reads need not take turns: a read starts at once while only reads run,
 * and reads queued behind a write all start when it ends; the write after
 * them waits for the last one's SC_DONE. A node granted a page for writing
 * keeps it for a time window (Mirage's Δ, DSM_SC_WINDOW_US) before another
 * node's request starts, so that its next stores do not fault again.
 *
 * At first the home owns the page (zeroed, or whatever the allocator left
 * there) though its own view may still be unmapped. A node sends itself no
 * messages (lock.c does the same): where the manager, owner or requester is
 * this node, the step runs directly, under the same lock.
 *
 * Invariants. A page's state and protection change only under sc.lock, and
 * only by a transaction of its manager, so no two changes to one page race
 * (reads under way together change only their requesters' copies, and the
 * owner's the same way, to read-only; a write starts only once every one
 * has confirmed). A node reaches a page only through a transaction, so the
 * manager's copyset is exact: a node outside it has no access. The requester sends
 * SC_DONE from the faulting thread once it runs again, not from the handler
 * that installed the page: until then no other transaction can take the
 * page away, so the faulting access gets its chance even when the thread
 * was asleep (without this a writer could lose the page to spinning
 * readers forever).
 *
 * Releases and acquires carry nothing (sc has no release and no notices in
 * its coherence_ops): a write is performed once its store runs, since
 * nobody else holds a copy; no intervals are created.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/check.h"
#include "base/job.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/state.h"
#include "base/stats.h"
#include "coherence/coherence.h"
#include "coherence/home.h"
#include "ipc/ipc.h"

/* sc's message types (coherence.h: the active protocol's own slots). */
enum sc_type {
    SC_REQ = COH_PROTOCOL_TYPES, /* read or write request, to the page's manager */
    SC_FWD,     /* the manager asks the owner to send the page */
    SC_PAGE,    /* the page (or the right to write it), to the requester */
    SC_INV,     /* drop your copy */
    SC_INV_ACK, /* dropped */
    SC_DONE,    /* the requester installed the page; the manager moves on */
    SC_EVICT,   /* a holder gives up its copy (the page follows), to the manager */
    SC_EVICT_ACK, /* the manager has it: the holder may release the frame */
    SC_TYPE_END
};
_Static_assert((int)SC_TYPE_END <= (int)COHERENCE_TYPE_NEXT, "sc has more message types than slots");

/* An SC_PAGE's status; data follows ST_DATA alone, as for home.c's replies. */
enum sc_status { ST_DATA = HOME_DATA, ST_GRANT = 1, ST_UNALLOCATED = HOME_UNALLOCATED };

struct sc_req  { uint32_t page; int32_t requester; uint32_t write, flags; }; /* flags: HOME_FROM_BASE */
struct sc_fwd  { uint32_t page; int32_t requester; uint32_t write, zero; };
struct sc_page { uint32_t page; int32_t home; uint32_t status, write; }; /* + the page, if ST_DATA */
struct sc_one  { uint32_t page, zero; };                                  /* INV, INV_ACK, DONE */

#define SET_WORDS (VT_MAX_NODES / 64)

struct waiter {
    struct waiter *next;
    int            requester;
    bool           write;
    unsigned char *evicted; /* an SC_EVICT's page, waiting its turn (else NULL) */
};

/* At the manager, for each page it has been asked about. */
struct manager {
    uint64_t        copyset[SET_WORDS];
    uint64_t        awaiting[SET_WORDS]; /* invalidations not yet acknowledged */
    uint64_t        readers[SET_WORDS];  /* reads under way, not yet confirmed */
    int             owner;
    int             pending;             /* bits set in awaiting */
    int             nreaders;            /* bits set in readers */
    bool            busy;                /* a transaction is under way: a write, or reads */
    bool            write;               /* its kind and (a write's) requester */
    bool            listed;              /* on sc.held */
    int             requester;
    uint32_t        page;                /* this record's (for sc.held) */
    uint64_t        window_end;          /* clock_ns(): the owner's window ends (0: none) */
    struct manager *next_held;           /* sc.held's next */
    struct waiter  *head, *tail;         /* requests behind it */
};

static DSM_STATE struct {
    pthread_mutex_t  lock;  /* every page state, protection and manager record */
    struct manager **mgr;   /* per page, created on first request */
    struct manager  *slab;  /* where the next records come from */
    size_t           slab_left;
    struct manager  *held;  /* pages whose queue waits for their owner's window to end */
    uint64_t         window_ns; /* DSM_SC_WINDOW_US */
    struct {                /* the request the program waits for */
        bool     waiting, done;
        uint32_t page, status;
    } fetch;
    struct {                /* the eviction the program waits for */
        bool     waiting, done;
        uint32_t page;
    } evict;
} sc = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool set_has(const uint64_t *s, int n) { return s[n / 64] >> (n % 64) & 1; }
static void set_add(uint64_t *s, int n) { s[n / 64] |= 1ull << (n % 64); }
static void set_del(uint64_t *s, int n) { s[n / 64] &= ~(1ull << (n % 64)); }

/* Records live as long as the job, so they come from slabs that are never
 * freed (and that a leak checker, which does not scan the mmap'd table
 * pointing into them, does not mistake for leaks). */
#define SLAB_BYTES (64u << 10)

static struct manager *manager_of(size_t page)
{
    struct manager *m = sc.mgr[page];
    if (!m) {
        if (!sc.slab_left) {
            sc.slab = mmap(NULL, SLAB_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (sc.slab == MAP_FAILED)
                log_fatal("out of memory for sc's manager records");
            sc.slab_left = SLAB_BYTES / sizeof *sc.slab;
        }
        m = &sc.slab[--sc.slab_left]; /* zeroed by mmap */
        m->owner = job()->rank;
        m->page = (uint32_t)page;
        set_add(m->copyset, job()->rank);
        sc.mgr[page] = m;
    }
    return m;
}

/* ---- this node's copy (caller holds sc.lock) --------------------------- */

/* Changes this node's access at once, not batched: a page that loses its
 * write right is copied right after, and must not change meanwhile. */
static void set_access(size_t page, enum page_state state)
{
    struct page_entry *e = &mem.pages[page];
    if (e->state == state)
        return;
    if (state == PAGE_INVALID) {
        stats_add(STAT_INVALIDATIONS, 1);
        PROFILE_PAGE(PROF_INVAL, 0, page, 0);
    }
    e->state = (uint8_t)state;
    mem_protect(page, state == PAGE_WRITE ? PROT_READ | PROT_WRITE
                      : state == PAGE_READ ? PROT_READ : PROT_NONE);
    mem_protect_flush();
}

/* The answer to this node's request: the data, if any, is in place. */
static void complete_fetch(size_t page, int home, enum sc_status status, bool write)
{
    if (status != ST_UNALLOCATED) {
        mem_set_home(page, home);
        set_access(page, write ? PAGE_WRITE : PAGE_READ);
    }
    sc.fetch.status = status;
    sc.fetch.done = true;
    ipc_notify();
}

static void send_page(int to, size_t page, int home, enum sc_status status, bool write)
{
    if (to == job()->rank) {
        if (status == ST_DATA)
            log_fatal("internal error: node %d would send page %zu to itself", job()->rank, page);
        complete_fetch(page, home, status, write);
        return;
    }
    struct sc_page p = {.page = (uint32_t)page, .home = home, .status = status, .write = write};
    struct iovec iov[2] = {{.iov_base = &p, .iov_len = sizeof p},
                           {.iov_base = mem_sys(page), .iov_len = status == ST_DATA ? mem.page_size : 0}};
    ipc_sendv(to, SC_PAGE, 0, iov, 2);
}

/* As the owner: hands the page to `requester`, keeping a read-only copy
 * or none. */
static void serve(size_t page, int requester, bool write, int home)
{
    set_access(page, write ? PAGE_INVALID
                     : mem.pages[page].state == PAGE_WRITE ? PAGE_READ : mem.pages[page].state);
    send_page(requester, page, home, ST_DATA, write);
    stats_add(STAT_PAGES_SERVED, 1);
}

/* ---- the manager (caller holds sc.lock) -------------------------------- */

/* Requester r gets its access: for a write, once every invalidation is
 * acknowledged; for a read, at once. */
static void give(size_t page, struct manager *m, int r, bool write)
{
    if (set_has(m->copyset, r))
        send_page(r, page, job()->rank, ST_GRANT, write);
    else if (m->owner == job()->rank)
        serve(page, r, write, job()->rank);
    else {
        struct sc_fwd f = {.page = (uint32_t)page, .requester = r, .write = write};
        ipc_send(m->owner, SC_FWD, 0, &f, sizeof f);
    }
}

static void transfer(size_t page, struct manager *m)
{
    give(page, m, m->requester, true);
}

/* A read joins the reads under way, if any: the owner's copy is read-only
 * for all of them alike, and each requester joins the copyset as it
 * confirms, so they need not take turns. */
static void start(size_t page, struct manager *m, int requester, bool write)
{
    if (!write) {
        if (m->busy)
            stats_add(STAT_SC_READS_TOGETHER, 1);
        m->busy = true;
        m->write = false;
        set_add(m->readers, requester);
        m->nreaders++;
        give(page, m, requester, false);
        return;
    }
    m->busy = true;
    m->requester = requester;
    m->write = true;
    /* A requester without a copy gets the owner's, which the owner
     * drops as it sends it; every other holder is invalidated. */
    bool has = set_has(m->copyset, requester);
    for (int w = 0; w < SET_WORDS; w++) {
        for (uint64_t bits = m->copyset[w]; bits; bits &= bits - 1) {
            int n = w * 64 + __builtin_ctzll(bits);
            if (n == requester || (!has && n == m->owner))
                continue;
            if (n == job()->rank) {
                set_access(page, PAGE_INVALID);
                set_del(m->copyset, n);
                continue;
            }
            set_add(m->awaiting, n);
            m->pending++;
            struct sc_one inv = {.page = (uint32_t)page};
            ipc_send(n, SC_INV, 0, &inv, sizeof inv);
        }
    }
    if (m->pending)
        return;
    transfer(page, m);
}

/* A holder's eviction, in its turn (DSM_LOCAL_MEM; sc_evict): if it owns
 * the page, its copy (`data`) becomes the manager's, which owns the page
 * from now on and keeps it read-only (another holder may read it too);
 * either way it leaves the copyset, and may release its frame. */
static void evict_now(size_t page, struct manager *m, int holder, const void *data)
{
    if (m->owner == holder) {
        memcpy(mem_sys(page), data, mem.page_size);
        m->owner = job()->rank;
        set_add(m->copyset, job()->rank);
        set_access(page, PAGE_READ);
    }
    set_del(m->copyset, holder);
    struct sc_one a = {.page = (uint32_t)page};
    ipc_send(holder, SC_EVICT_ACK, 0, &a, sizeof a);
}

/* Mirage's time window (Fleisch and Popek 1989): a node granted a page for
 * writing keeps it for sc.window_ns after its confirmation — its program
 * runs then, so its next stores find the page still writable — before a
 * request from another node may take it away. Without it a writer whose
 * readers spin on the page loses it after each store, and every next
 * store is a write fault that invalidates them all again. */
static bool held_back(const struct manager *m, int requester)
{
    return m->window_end && requester != m->owner && clock_ns() < m->window_end;
}

/* The queue waits for the window to end: sc_timer starts it then. */
static void hold(struct manager *m)
{
    if (m->listed)
        return;
    m->listed = true;
    m->next_held = sc.held;
    sc.held = m;
    stats_add(STAT_SC_WINDOW_HOLDS, 1);
    ipc_timer_at(m->window_end);
}

/* Whether a request may start now, ahead of nothing: an eviction while no
 * transaction runs, a write while none runs either, a read while none or
 * only reads run; none while the owner's window holds it back. */
static bool may_start(const struct manager *m, int requester, bool write, bool evict)
{
    if (!evict && held_back(m, requester))
        return false;
    return !m->busy || (!m->write && !write && !evict);
}

/* Starts what the queue holds, in order, as far as it may: an eviction or
 * a write alone, reads together. */
static void next(size_t page, struct manager *m)
{
    struct waiter *w;
    while ((w = m->head) && may_start(m, w->requester, w->write, w->evicted)) {
        m->head = w->next;
        if (!m->head)
            m->tail = NULL;
        if (w->evicted)
            evict_now(page, m, w->requester, w->evicted);
        else
            start(page, m, w->requester, w->write);
        free(w->evicted);
        free(w);
    }
    if (w && !m->busy) /* only the window stops an idle manager */
        hold(m);
}

static void request_or_evict(size_t page, int requester, bool write, const void *evicted)
{
    struct manager *m = manager_of(page);
    if (!m->head && may_start(m, requester, write, evicted)) {
        if (evicted)
            evict_now(page, m, requester, evicted);
        else
            start(page, m, requester, write);
        return;
    }
    struct waiter *w = malloc(sizeof *w);
    unsigned char *copy = evicted ? malloc(mem.page_size) : NULL;
    if (!w || (evicted && !copy))
        log_fatal("out of memory queueing a request for page %zu", page);
    if (copy)
        memcpy(copy, evicted, mem.page_size);
    *w = (struct waiter){.requester = requester, .write = write, .evicted = copy};
    if (m->tail)
        m->tail->next = w;
    else
        m->head = w;
    m->tail = w;
    next(page, m);
}

static void request(size_t page, int requester, bool write)
{
    request_or_evict(page, requester, write, NULL);
}

static void done(size_t page, int src)
{
    struct manager *m = sc.mgr[page];
    if (!m || !m->busy || m->pending || (m->write ? m->requester != src : !set_has(m->readers, src)))
        log_fatal("node %d confirmed a transfer of page %u that node %d did not start; protocol error",
                  src, (unsigned)page, job()->rank);
    if (m->write) {
        memset(m->copyset, 0, sizeof m->copyset);
        m->owner = src;
        m->busy = false;
        m->window_end = sc.window_ns ? clock_ns() + sc.window_ns : 0;
    } else {
        set_del(m->readers, src);
        if (--m->nreaders == 0)
            m->busy = false;
    }
    set_add(m->copyset, src);
    next(page, m);
}

/* The service thread's timer (ipc_register_timer): starts the queues whose
 * window has ended; returns when the next one ends. */
static uint64_t sc_timer(uint64_t now)
{
    uint64_t due = 0;
    pthread_mutex_lock(&sc.lock);
    for (struct manager **p = &sc.held; *p;) {
        struct manager *m = *p;
        if (m->window_end > now) {
            if (!due || m->window_end < due)
                due = m->window_end;
            p = &m->next_held;
            continue;
        }
        *p = m->next_held;
        m->listed = false;
        m->window_end = 0;
        next(m->page, m);
    }
    pthread_mutex_unlock(&sc.lock);
    return due;
}

/* A request, at the node it was sent to: the manager, or the base node
 * when the requester did not know the home. */
static void route(const struct sc_req *r, int src)
{
    size_t page = r->page;
    int home = home_route(page, src, r->requester, r->flags & HOME_FROM_BASE, NULL);
    if (home < 0)
        send_page(r->requester, page, -1, ST_UNALLOCATED, false);
    else if (home == job()->rank)
        request(page, r->requester, r->write);
    else if (mem_base_node(page) == job()->rank) {
        struct sc_req f = *r;
        f.flags = HOME_FROM_BASE;
        ipc_send(home, SC_REQ, 0, &f, sizeof f);
    } else
        log_fatal("node %d asked node %d for page %zu, which neither manages it nor is its base",
                  src, job()->rank, page);
}

/* ---- faults (the program's thread) ------------------------------------ */

/* Gets read or write access to the page. Caller holds sc.lock, which is
 * dropped while waiting (handlers run meanwhile, on this thread too). */
static void acquire(size_t page, bool write)
{
    int home = home_lookup(page), base = mem_base_node(page);
    sc.fetch.waiting = true;
    sc.fetch.done = false;
    sc.fetch.page = (uint32_t)page;
    if (home == job()->rank)
        request(page, job()->rank, write);
    else {
        struct sc_req r = {.page = (uint32_t)page, .requester = job()->rank, .write = write,
                           .flags = home >= 0 && base == job()->rank ? HOME_FROM_BASE : 0};
        ipc_send(home >= 0 ? home : base, SC_REQ, 0, &r, sizeof r);
    }
    pthread_mutex_unlock(&sc.lock);
    coherence_wait_flag(&sc.lock, &sc.fetch.done);
    pthread_mutex_lock(&sc.lock);
    sc.fetch.waiting = false;
    if (sc.fetch.status == ST_UNALLOCATED) {
        pthread_mutex_unlock(&sc.lock);
        mem_crash_unallocated(mem_app(page));
    }
    if (sc.fetch.status == ST_DATA) {
        stats_add(STAT_PAGES_FETCHED, 1);
        PROFILE_PAGE(PROF_FETCH, PROF_FETCH_FAULT, page, 0);
    }
    home = mem_home(page);
    if (home == job()->rank)
        done(page, job()->rank);
    else {
        struct sc_one d = {.page = (uint32_t)page};
        ipc_send(home, SC_DONE, 0, &d, sizeof d);
    }
}

/* Under sc.lock: the page's state changes only under it (and the fault
 * lock, which the trampoline holds, does not order the handlers). */
static void fault(size_t page, bool write)
{
    pthread_mutex_lock(&sc.lock);
    if (mem.pages[page].state < (write ? PAGE_WRITE : PAGE_READ))
        acquire(page, write);
    pthread_mutex_unlock(&sc.lock);
}

static void sc_read_fault(size_t page) { fault(page, false); }
static void sc_write_fault(size_t page) { fault(page, true); }

/* The page cache gives up a copy (coherence_ops.evict): access goes at
 * once, and the copy travels to the manager, which takes it over if this
 * node owns the page (single writer: it may be the only current copy).
 * The frame is kept until the manager answers: a transaction it ran
 * before the eviction may still ask this node, as owner, for the page.
 * Caller holds the fault lock. */
static int sc_evict(size_t page)
{
    struct page_entry *e = &mem.pages[page];
    pthread_mutex_lock(&sc.lock);
    if (e->state == PAGE_INVALID) { /* outside the copyset: nothing to tell */
        pthread_mutex_unlock(&sc.lock);
        return CACHE_CLEAN;
    }
    bool wrote = e->state == PAGE_WRITE;
    e->state = PAGE_INVALID;
    mem_protect(page, PROT_NONE);
    mem_protect_flush();
    sc.evict.waiting = true;
    sc.evict.done = false;
    sc.evict.page = (uint32_t)page;
    struct sc_one m = {.page = (uint32_t)page};
    struct iovec iov[2] = {{.iov_base = &m, .iov_len = sizeof m},
                           {.iov_base = mem_sys(page), .iov_len = mem.page_size}};
    ipc_sendv(mem_home(page), SC_EVICT, 0, iov, 2);
    pthread_mutex_unlock(&sc.lock);
    coherence_wait_flag(&sc.lock, &sc.evict.done);
    pthread_mutex_lock(&sc.lock);
    sc.evict.waiting = false;
    pthread_mutex_unlock(&sc.lock);
    return wrote ? CACHE_WRITTEN_BACK : CACHE_CLEAN;
}

/* ---- handlers (delivery thread) --------------------------------------- */

/* DSM_CHECK: the manager's copyset is exact. A node it names as a holder
 * (it invalidates the copy, asks it as owner for the page, or grants it
 * access to the copy it holds) holds a valid copy — unless it is giving
 * the copy up (sc_evict: access goes at once, the manager learns it in
 * its turn). The manager's own copy is handled in place, unchecked: at
 * first it owns the page while its view may still be unmapped. Caller
 * holds sc.lock. */
static void check_holder(size_t page, int manager, const char *as)
{
    if (check_on() && mem.pages[page].state == PAGE_INVALID &&
        !(sc.evict.waiting && sc.evict.page == page))
        check_violated("sc: the copyset is exact",
                       "page %zu: manager node %d %s node %d, which holds no copy", page, manager, as,
                       job()->rank);
}

static void parse(int src, const void *msg, size_t len, void *body, size_t size, const char *what)
{
    ipc_body(src, msg, len, body, size, NULL, what);
    uint32_t page;
    memcpy(&page, body, sizeof page); /* every body starts with the page */
    if (page >= mem.npages)
        log_fatal("node %d sent a malformed %s (page %u)", src, what, page);
}

static void on_req(int src, const void *msg, size_t len)
{
    uint64_t t0 = clock_ns();
    struct sc_req r;
    parse(src, msg, len, &r, sizeof r, "sc request");
    if (r.requester < 0 || r.requester >= job()->nodes || r.write > 1 || r.flags > HOME_FROM_BASE ||
        (r.requester != src && !(r.flags & HOME_FROM_BASE)))
        log_fatal("node %d sent a malformed sc request", src);
    pthread_mutex_lock(&sc.lock);
    route(&r, src);
    pthread_mutex_unlock(&sc.lock);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

static void on_fwd(int src, const void *msg, size_t len)
{
    uint64_t t0 = clock_ns();
    struct sc_fwd f;
    parse(src, msg, len, &f, sizeof f, "sc forward");
    if (f.requester < 0 || f.requester >= job()->nodes || f.requester == job()->rank || f.write > 1)
        log_fatal("node %d sent a malformed sc forward", src);
    pthread_mutex_lock(&sc.lock);
    if (mem_home(f.page) != src)
        log_fatal("node %d forwarded a request for page %u, which it does not manage", src, f.page);
    check_holder(f.page, src, "asks for the page as its owner");
    serve(f.page, f.requester, f.write, src);
    pthread_mutex_unlock(&sc.lock);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

static void on_inv(int src, const void *msg, size_t len)
{
    uint64_t t0 = clock_ns();
    struct sc_one m;
    parse(src, msg, len, &m, sizeof m, "sc invalidation");
    pthread_mutex_lock(&sc.lock);
    if (mem_home(m.page) != src)
        log_fatal("node %d invalidated page %u, which it does not manage", src, m.page);
    check_holder(m.page, src, "invalidates the copy of");
    set_access(m.page, PAGE_INVALID);
    pthread_mutex_unlock(&sc.lock);
    ipc_send(src, SC_INV_ACK, 0, &m, sizeof m);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

static void on_inv_ack(int src, const void *msg, size_t len)
{
    uint64_t t0 = clock_ns();
    struct sc_one m;
    parse(src, msg, len, &m, sizeof m, "sc invalidation acknowledgement");
    pthread_mutex_lock(&sc.lock);
    struct manager *mg = sc.mgr[m.page];
    if (!mg || !mg->busy || !set_has(mg->awaiting, src))
        log_fatal("node %d acknowledged an invalidation of page %u that was not sent", src, m.page);
    set_del(mg->awaiting, src);
    set_del(mg->copyset, src);
    if (--mg->pending == 0)
        transfer(m.page, mg);
    pthread_mutex_unlock(&sc.lock);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

static void on_done(int src, const void *msg, size_t len)
{
    uint64_t t0 = clock_ns();
    struct sc_one m;
    parse(src, msg, len, &m, sizeof m, "sc confirmation");
    pthread_mutex_lock(&sc.lock);
    done(m.page, src);
    pthread_mutex_unlock(&sc.lock);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

static void on_evict(int src, const void *msg, size_t len)
{
    uint64_t t0 = clock_ns();
    struct sc_one m;
    size_t rest;
    const void *data = ipc_body(src, msg, len, &m, sizeof m, &rest, "sc eviction");
    if (m.page >= mem.npages || m.zero || rest != mem.page_size || mem_home(m.page) != job()->rank)
        log_fatal("node %d sent a malformed sc eviction (page %u)", src, m.page);
    pthread_mutex_lock(&sc.lock);
    request_or_evict(m.page, src, false, data);
    pthread_mutex_unlock(&sc.lock);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

static void on_evict_ack(int src, const void *msg, size_t len)
{
    struct sc_one m;
    parse(src, msg, len, &m, sizeof m, "sc eviction acknowledgement");
    pthread_mutex_lock(&sc.lock);
    if (!sc.evict.waiting || sc.evict.done || m.page != sc.evict.page || mem_home(m.page) != src)
        log_fatal("node %d acknowledged an eviction of page %u that was not sent", src, m.page);
    sc.evict.done = true;
    pthread_mutex_unlock(&sc.lock);
    ipc_notify();
}

/* The page goes straight into its frame, which is unmapped for the program
 * while it waits (a node that receives data holds no valid copy). */
static void *place_page(int src, const void *head, size_t head_len, size_t msg_len, size_t *skip)
{
    struct sc_page p;
    coherence_place_head(src, head, head_len, &p, sizeof p, skip, "sc page");
    pthread_mutex_lock(&sc.lock);
    bool expected = sc.fetch.waiting && !sc.fetch.done && p.page == sc.fetch.page &&
                    (p.status != ST_DATA || mem.pages[p.page].state == PAGE_INVALID);
    pthread_mutex_unlock(&sc.lock);
    return home_place(src, p.page, p.status, p.home, msg_len - *skip, expected && p.write <= 1, "sc page");
}

static void on_page(int src, const void *msg, size_t len)
{
    struct sc_page p;
    size_t data;
    ipc_body(src, msg, len, &p, sizeof p, &data, "sc page");
    /* Installed here, under the lock, not by the waiting program: the
     * page is ours from this moment. */
    pthread_mutex_lock(&sc.lock);
    if (p.status == ST_GRANT)
        check_holder(p.page, src, "grants access without data to");
    complete_fetch(p.page, p.home, p.status, p.write);
    pthread_mutex_unlock(&sc.lock);
}

static void sc_start(void)
{
    if (job()->nodes > VT_MAX_NODES)
        log_fatal("sc supports at most %d nodes", VT_MAX_NODES);
    sc.mgr = mmap(NULL, mem.npages * sizeof *sc.mgr, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (sc.mgr == MAP_FAILED)
        log_fatal("cannot map sc's manager table");
    ipc_register(SC_REQ, "SC_REQ", on_req, NULL);
    ipc_register(SC_FWD, "SC_FWD", on_fwd, NULL);
    ipc_register(SC_PAGE, "SC_PAGE", on_page, place_page);
    ipc_register(SC_INV, "SC_INV", on_inv, NULL);
    ipc_register(SC_INV_ACK, "SC_INV_ACK", on_inv_ack, NULL);
    ipc_register(SC_DONE, "SC_DONE", on_done, NULL);
    ipc_register(SC_EVICT, "SC_EVICT", on_evict, NULL);
    ipc_register(SC_EVICT_ACK, "SC_EVICT_ACK", on_evict_ack, NULL);
    sc.window_ns = coherence_params()->sc_window_ns;
    ipc_register_timer(sc_timer);
}

/* No release, no notices: every write is performed as its store runs. */
const struct coherence_ops sc_ops = {
    .start = sc_start,
    .read_fault = sc_read_fault, .write_fault = sc_write_fault,
    .evict = sc_evict, .state_lock = &sc.lock,
};
