/*
 * hlrc_home.c — the home's service in hlrc, the hooks home.c calls
 * (home_ops) and the read-ahead runs it is asked for: a page served at
 * the version a fetch needs (from its snapshot, hlrc_snapshot.c, where it
 * has one), a diff applied to the page and its snapshot, the page given
 * to its next home and taken from its former one (migrate.c), and the
 * record of which writers' intervals the served content holds, which
 * tells a requester to catch up (coherence.h, "catching up").
 *
 * On the delivering thread, but for give (in a migration window, under
 * the fault lock), under hlrc.lock. The requester's side of the same
 * messages is hlrc_fetch.c's and hlrc_acquire.c's; the home's own writes
 * are hlrc_snapshot.c's.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/job.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/stats.h"
#include "coherence/coherence.h"
#include "coherence/hlrc_state.h"
#include "coherence/home.h"
#include "coherence/msgcheck.h"
#include "coherence/migrate.h"
#include "coherence/oneside.h"
#include "ipc/ipc.h"

/* ---- what the copies a home serves hold ------------------------------- */

/* Whether this home records each page's writers: from its first flush
 * on. The home's own writes not yet announced belong to its next
 * interval at the latest. Caller holds hlrc.lock. */
static bool writers_on(void)
{
    if (hlrc_wr.on)
        return true;
    if (!coherence_catching_up())
        return false;
    int me = job()->rank;
    memcpy(hlrc_wr.start, hlrc_wr.seen, (size_t)job()->nodes * sizeof *hlrc_wr.start);
    uint32_t next = interval_next();
    if (next > hlrc_wr.start[me])
        hlrc_wr.start[me] = next;
    hlrc_wr.on = true;
    return true;
}

/* `node`'s writes to a page of this home, announced in its interval
 * `interval` (or a later one), are in the content served from now on.
 * Caller holds hlrc.lock. */
void hlrc_note_writer(size_t page, int node, uint32_t interval)
{
    if (interval > hlrc_wr.seen[node])
        hlrc_wr.seen[node] = interval;
    if (!writers_on())
        return;
    uint32_t *w = hlrc_wr.page[page];
    if (!w) {
        w = malloc((size_t)job()->nodes * sizeof *w);
        if (!w)
            log_fatal("out of memory for a page's writers");
        memcpy(w, hlrc_wr.start, (size_t)job()->nodes * sizeof *w);
        hlrc_wr.page[page] = w;
        page_list_add(&hlrc_wr.listed, &hlrc_wr.nlisted, &hlrc_wr.cap_listed, page);
    }
    if (interval > w[node])
        w[node] = interval;
}

/* Whether the page as served now may hold writes of intervals that
 * `requester` has not seen: it must then catch up before it reads on
 * (its notices would not tell it that its other copies are stale). What
 * it has seen is known from its flushes' asks (interval_heard) and the
 * barriers (a lower bound: at worst it catches up for nothing). Caller
 * holds hlrc.lock. */
static bool unseen_by(size_t page, int requester)
{
    if (!writers_on())
        return false;
    const uint32_t *w = hlrc_wr.page[page] ? hlrc_wr.page[page] : hlrc_wr.start;
    int me = job()->rank, nodes = job()->nodes;
    uint32_t next = interval_next();
    if (w[me] < next || coherence_release_unfinished())
        return interval_may_lack(requester, w);
    /* The home's own writes of its open interval (a page written here
     * that nobody else held, never announced), with no release of it
     * running or kept here, which no catch-up can bring: nothing orders
     * them before the requester's read but what came before them here.
     * So the requester must have seen what this home has — its vector
     * time, its own intervals up to the last — and the page's other
     * writers; not the open interval itself, which a catch-up would ask
     * for in vain (BOTS strassen's node 1 caught up at each first read of
     * a matrix node 0 had just summed into fresh memory: 20,000 catch-ups
     * a run). While a release runs (or is kept), `next` is the interval
     * it is making, which a flush's answer waits for: the catch-up
     * brings it, as the flag pattern needs (docs/protocols.md). */
    uint32_t ids[VT_MAX_NODES];
    interval_vt(ids);
    for (int x = 0; x < nodes; x++)
        if (w[x] > ids[x])
            ids[x] = w[x];
    ids[me] = next - 1;
    return interval_may_lack(requester, ids);
}

/* ---- serving fetches and runs (delivery thread) ----------------------- */

/* The home's copy of a page for `requester`, which needs at least version
 * `need`: the snapshot, if the page has one or is writable here (then it
 * gets one), else the page, which the home cannot write without the fault
 * that tracks it. Caller holds hlrc.lock until the copy is sent. */
static void *serve_locked(size_t page, uint32_t need, int requester, uint32_t *version, bool *unseen)
{
    struct page_entry *e = &mem.pages[page];
    struct hlrc_page *h = &hlrc.pages[page];
    if (h->version < need)
        log_fatal("internal error: home of page %zu is at version %u, node %d needs %u", page,
                  h->version, requester, need);
    h->shared = 1;
    h->fetched = SHARED_AFTER_FETCH;
    /* Writable here without a snapshot: the home's writes in it were
     * never announced (a page nobody else held), or will be at its next
     * release (unsnapped). */
    if (!e->twin && e->state == PAGE_WRITE)
        hlrc_note_writer(page, job()->rank, interval_next());
    if (!e->twin && !h->unsnapped && e->state == PAGE_WRITE)
        hlrc_track(page);
    *version = h->version;
    *unseen = unseen_by(page, requester);
    hlrc_publish(page); /* shared now: later fetches may read it one-sided */
    stats_add(STAT_PAGES_SERVED, 1);
    return e->twin ? e->twin : mem_sys(page);
}

/* At the home: the page to the requester (home.c's serve hook). */
void hlrc_serve(int requester, size_t page, uint32_t need, size_t run)
{
    mem_sys_fill(page, 1); /* written through the application view */
    pthread_mutex_lock(&hlrc.lock);
    uint32_t v;
    bool unseen;
    const void *data = serve_locked(page, need, requester, &v, &unseen);
    home_send_page(requester, page, v, run, data, unseen);
    pthread_mutex_unlock(&hlrc.lock);
}

/* Checks a run's bounds; returns its size in pages, or 0 if malformed. */
size_t hlrc_run_pages(uint32_t first, uint32_t count)
{
    struct coh_limits lim;
    coherence_limits(&lim);
    return coh_run_pages(first, count, &lim);
}

void hlrc_on_page_run_req(int src, const void *msg, size_t len)
{
    uint64_t t0 = clock_ns();
    struct run_req r;
    size_t rest;
    const void *tail = ipc_body(src, msg, len, &r, sizeof r, &rest, "read-ahead request");
    size_t count = hlrc_run_pages(r.first, r.count);
    if (!count || rest < count * sizeof(uint32_t) ||
        !home_vt_in(src, ipc_msg_aux(msg), (const char *)tail + count * sizeof(uint32_t),
                    rest - count * sizeof(uint32_t)))
        log_fatal("node %d sent a malformed read-ahead request", src);
    uint32_t need[READ_AHEAD_MAX], version[READ_AHEAD_MAX];
    memcpy(need, tail, count * sizeof *need);
    bool all_here = true;
    for (size_t i = 0; i < count; i++) {
        /* The base node records the home it decides before its reply
         * naming us reaches us, and its own threads may ask us for the
         * page in between (a run built on that record, overtaking the
         * reply): the base's word is the decision, as in home_route. */
        if (mem_home(r.first + i) < 0 && mem_base_node(r.first + i) == src)
            mem_set_home(r.first + i, job()->rank);
        if (mem_home(r.first + i) != job()->rank) {
            if (migrate_successor(r.first + i) < 0)
                home_unreachable(src, r.first + i, "a read-ahead request");
            all_here = false;
        }
    }
    if (!all_here) {
        /* Some moved away (migrate.c): each page on its own, served here or
         * by its new home; the requester expects each as a pull. */
        for (size_t i = 0; i < count; i++) {
            if (mem_home(r.first + i) == job()->rank) {
                migrate_note_fault(r.first + i, src);
                hlrc_serve(src, r.first + i, need[i], 0);
            } else
                home_forward(r.first + i, src, need[i]);
        }
        stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
        return;
    }
    for (size_t i = 0; i < count; i++)
        migrate_note_fault(r.first + i, src);
    struct run_rep rep = {.first = r.first, .count = r.count};
    struct iovec iov[2 + READ_AHEAD_MAX] = {{.iov_base = &rep, .iov_len = sizeof rep},
                                            {.iov_base = version, .iov_len = count * sizeof *version}};
    int n = 2;
    /* Runs of pages without a snapshot go as one piece of the system view. */
    mem_sys_fill(r.first, count); /* written through the application view */
    uint32_t unseen = 0; /* bit i: page first + i (unseen_by) */
    pthread_mutex_lock(&hlrc.lock);
    for (size_t i = 0; i < count; i++) {
        bool u;
        char *data = serve_locked(r.first + i, need[i], src, &version[i], &u);
        unseen |= (uint32_t)u << i;
        struct iovec *last = &iov[n - 1];
        if (n > 2 && (char *)last->iov_base + last->iov_len == data)
            last->iov_len += mem.page_size;
        else
            iov[n++] = (struct iovec){.iov_base = data, .iov_len = mem.page_size};
    }
    ipc_sendv(src, COH_PAGE_RUN_REP, unseen, iov, n);
    pthread_mutex_unlock(&hlrc.lock);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

/* ---- diffs applied (delivery thread) ---------------------------------- */

/* At the home: applied to the page and its snapshot; the new version
 * goes back. */
/* The home's program could read another node's write here before it
 * has that writer's notices, and then read the writer's earlier writes
 * to other pages as they were (a flag polled with flush: coherence.h,
 * "catching up"). So while this node catches up, a page a diff changed
 * is hidden (no access) until the program's next access to it faults,
 * reveals it and catches up. The program's own protection changes of
 * home pages hide again what is hidden (hlrc_rehide). Caller holds
 * hlrc.lock; on the delivering thread. */
static void hide_if_catching_up(size_t page)
{
    if (!coherence_catching_up())
        return;
    hlrc_hide(page); /* an invalid one is hidden already */
    if (mem.pages[page].state != PAGE_INVALID)
        mem_protect_now(page, PROT_NONE);
    stats_add(STAT_PAGES_HIDDEN, 1);
}

void hlrc_apply_diff(int src, size_t page, uint32_t idx, const void *diff, size_t len,
                     uint32_t interval)
{
    pthread_mutex_lock(&hlrc.lock);
    hide_if_catching_up(page); /* before the diff: the program must not see it first */
    void *snap = mem.pages[page].twin;
    if (mem_diff_apply(mem_sys(page), mem.page_size, diff, len) ||
        (snap && mem_diff_apply(snap, mem.page_size, diff, len)))
        log_fatal("node %d sent a malformed diff for page %zu", src, page);
    uint32_t v = ++hlrc.pages[page].version;
    hlrc.pages[page].fetched = SHARED_AFTER_FETCH; /* another writer: stays shared */
    hlrc_note_writer(page, src, interval);
    hlrc_publish(page);
    pthread_mutex_unlock(&hlrc.lock);
    home_ack_diff(src, (uint32_t)page, idx, v);
}

/* ---- homes that move (migrate.c) -------------------------------------- */

/* At the home, in a migration window (under the fault lock): the page and
 * its version go to `to`; this node keeps a read-only copy at that
 * version, without a snapshot. */
bool hlrc_give(size_t page, int to)
{
    struct page_entry *e = &mem.pages[page];
    struct hlrc_page *h = &hlrc.pages[page];
    const void *data = mem_sys_fill(page, 1);
    pthread_mutex_lock(&hlrc.lock);
    oneside_publish(page, h->version, NULL); /* no longer served here */
    if (e->twin) {
        hlrc_snapshot_drop(page);
        size_t kept = 0;
        for (size_t i = 0; i < hlrc.ntracked; i++)
            if (hlrc.tracked[i] != page)
                hlrc.tracked[kept++] = hlrc.tracked[i];
        hlrc.ntracked = kept;
    }
    if (h->unsnapped) {
        h->unsnapped = 0;
        size_t kept = 0;
        for (size_t i = 0; i < hlrc.nunsnapped; i++)
            if (hlrc.unsnapped[i] != page)
                hlrc.unsnapped[kept++] = hlrc.unsnapped[i];
        hlrc.nunsnapped = kept;
    }
    if (e->state == PAGE_WRITE) {
        e->state = PAGE_READ;
        mem_protect(page, PROT_READ);
    }
    h->shared = 0;
    h->quiet = 0;
    migrate_send(to, page, h->version, NULL, 0, data);
    pthread_mutex_unlock(&hlrc.lock);
    return true;
}

/* At the new home (delivering thread): the page's content and version.
 * Its copy elsewhere may be shared, so the home's first write here tracks
 * it (hlrc_write_fault). The page keeps its protection: no program runs
 * while it moves. */
void hlrc_take(int from, size_t page, uint32_t version, const uint64_t *set, size_t words,
               const void *data)
{
    (void)set;
    struct page_entry *e = &mem.pages[page];
    struct hlrc_page *h = &hlrc.pages[page];
    char *frame = mem_sys_fill(page, 1);
    pthread_mutex_lock(&hlrc.lock);
    if (words || e->twin || e->dirty || version < h->need)
        log_fatal("node %d migrated page %zu here in a state it cannot be in (version %u, need %u)",
                  from, page, version, h->need);
    hlrc_check_version(page, h->version, 0, version, "took the page as its home at");
    memcpy(frame, data, mem.page_size);
    h->version = version;
    h->shared = 1;
    h->fetched = 0; /* a copy at its former home, to be invalidated by the first notice */
    h->quiet = 0;
    h->pull = 0;
    h->reread = 0;
    mem_set_home(page, job()->rank);
    hlrc_publish(page);
    pthread_mutex_unlock(&hlrc.lock);
}
