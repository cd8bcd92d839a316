/*
 * hlrc_atomic.c — atomics in hlrc (home_atomic.c carries them): when an
 * operation on a shared word is done at the page's home rather than on
 * this node's copy, what it makes of the copy here (a write of ours, as a
 * diff acknowledged), and the operation at the home.
 *
 * The requester's side runs under the fault lock, the home's on the
 * delivering thread; both under hlrc.lock for the page's version.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "base/job.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/stats.h"
#include "coherence/coherence.h"
#include "coherence/hlrc_state.h"
#include "coherence/home.h"
#include "coherence/migrate.h"

/* ---- atomics at the home (home_atomic.c) ------------------------------ */

/* At the requester, holding the word's block lock: an operation that may
 * write, on a page this node has not written since its last release (no
 * twin: invalid, or a clean copy), and a load on a page not valid here,
 * are done at the page's home. A changed word is this node's write in
 * its interval, as a diff acknowledged: the page goes on the dirty list
 * (with no twin, nothing to diff) at the home's new version, and the next
 * release announces it. `need` rises to it: a later fault here must see
 * this node's own write. A page written here runs the atomic on its copy
 * (the caller: the home's copy lacks the node's writes, which may be to
 * the same word), and so does a load on a valid copy (after the lock's
 * acquire the copy holds all the load may return, and costs nothing
 * more), or an operation on a page whose home is this node or whose pull
 * is in flight, or whose home this node would decide (its base node, the
 * home not known yet: the fault decides it). */
/* Whether the page is away for `op` (see hlrc_atomic). Caller holds the
 * fault lock. */
static bool away_locked(size_t page, uint8_t op, uint32_t *need)
{
    struct page_entry *e = &mem.pages[page];
    struct hlrc_page *h = &hlrc.pages[page];
    int home = mem_home(page);
    int to = home >= 0 ? home : mem_base_node(page); /* where the request would go */
    bool unwritten = op == COH_ATOMIC_LOAD ? e->state == PAGE_INVALID
                                           : e->state != PAGE_WRITE && !e->twin;
    pthread_mutex_lock(&hlrc.lock);
    bool away = unwritten && to != job()->rank && !h->pulling && !smp_multi();
    *need = h->need;
    pthread_mutex_unlock(&hlrc.lock);
    return away;
}

bool hlrc_atomic_away(size_t page, uint8_t op, uint32_t *need)
{
    coherence_lock();
    bool away = away_locked(page, op, need);
    coherence_unlock();
    return away;
}

/* This node's atomic `a` at `offset` made the page `v` at its home: a
 * write of ours. A copy here that is one version behind, and held the
 * word the home found, becomes version v by the same operation on it
 * (what a fetch of v would bring: the home's copy at v - 1 is what copies
 * were served, and the operation changed one word): it stays valid, and
 * a node that reads the page it adds to keeps reading it without a fault.
 * Any other copy older than v (further behind, or with another word there;
 * one that came in meanwhile, a read-ahead run landing, may be either)
 * lacks our own write: invalidated. Caller holds the fault lock. */
static void wrote_at_home(size_t page, size_t offset, const struct coh_atomic *a, uint32_t v)
{
    struct page_entry *e = &mem.pages[page];
    struct hlrc_page *h = &hlrc.pages[page];
    pthread_mutex_lock(&hlrc.lock);
    if (!e->dirty)
        hlrc_dirty_add(page);
    struct dirty_page *d = &hlrc.dirty[h->dirty_idx];
    if (v > d->version)
        d->version = v;
    if (v > h->need)
        h->need = v;
    bool stale = e->state != PAGE_INVALID && h->version < v;
    if (stale && !e->twin && h->version + 1 == v && coh_atomic_replay(mem_sys(page) + offset, a)) {
        h->version = v;
        stale = false;
        stats_add(STAT_ATOMICS_COPY_KEPT, 1);
    }
    pthread_mutex_unlock(&hlrc.lock);
    if (stale) {
        hlrc_invalidate(page);
        mem_protect_flush();
    }
}

void hlrc_atomic_wrote(size_t page, size_t offset, const struct coh_atomic *a,
                       uint32_t version)
{
    coherence_lock();
    wrote_at_home(page, offset, a, version);
    coherence_unlock();
}

int hlrc_atomic(size_t page, size_t offset, struct coh_atomic *a)
{
    coherence_lock();
    uint32_t need;
    if (!away_locked(page, a->op, &need)) {
        coherence_unlock();
        return -EAGAIN;
    }
    int64_t v = home_atomic(page, mem_home(page), need, offset, a, interval_next());
    if (v > 0)
        wrote_at_home(page, offset, a, (uint32_t)v);
    coherence_unlock();
    return v < 0 ? (int)v : 0;
}

/* At the home: the atomic on the page and its snapshot (the content the
 * copies elsewhere hold: the requester's notice, not the home's release,
 * announces the change), which advances the version as a diff does. */
uint32_t hlrc_perform_atomic(int src, size_t page, uint32_t need, size_t offset, struct coh_atomic *a,
                             uint32_t interval)
{
    char *sys = mem_sys_fill(page, 1);
    pthread_mutex_lock(&hlrc.lock);
    struct hlrc_page *h = &hlrc.pages[page];
    if (h->version < need)
        log_fatal("internal error: home of page %zu is at version %u, node %d needs %u", page,
                  h->version, src, need);
    uint32_t v = 0;
    if (coh_atomic_apply(sys + offset, a)) {
        char *snap = mem.pages[page].twin;
        if (snap)
            memcpy(snap + offset, sys + offset, a->size);
        v = ++h->version;
        hlrc_note_writer(page, src, interval);
    }
    pthread_mutex_unlock(&hlrc.lock);
    if (v)
        migrate_note_write(page, src, a->size);
    return v;
}
