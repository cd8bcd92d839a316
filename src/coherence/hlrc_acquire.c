/*
 * hlrc_acquire.c — hlrc's acquire: the write notices another node's
 * intervals bring (hlrc_apply_notices) invalidate each copy older than
 * the version they name; and pulls, fetches into a page as it stands
 * that no fault waits for, with their replies.
 *
 * A page this node keeps re-reading (fetched again for a read after a
 * notice invalidated it) earns DSM_PULL_CREDIT *pulls*: the next acquires that bring
 * a notice for it fetch the new version at once, all such pages of the
 * acquire together, into the page as it stands (through the system view,
 * while the program waits in the acquire), instead of invalidating it and
 * taking a fault, a round trip and two protection changes at the first
 * read. When the credit is spent the page is invalidated as usual, and
 * earns more only by being read again: a page no longer read costs at
 * most DSM_PULL_CREDIT needless fetches.
 *
 * Read-ahead's pages (hlrc_ahead.c) are pulls too. Requests go on the
 * program's thread, under the fault lock; the replies land on the
 * delivering thread, which counts them down under hlrc.lock, and
 * hlrc_settle_pulls maps the pages once all have come.
 */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "base/job.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/smp.h"
#include "base/stats.h"
#include "coherence/coherence.h"
#include "coherence/hlrc_state.h"
#include "coherence/home.h"
#include "coherence/msgcheck.h"
#include "ipc/ipc.h"

/* ---- pulls: fetches into place ---------------------------------------- */

static void pull_landed(struct hlrc_page *h, uint32_t version, bool unseen);

/* Counts the page as fetched into place (`stat` says why) and waiting for
 * its reply, which hlrc_settle_pulls awaits. Caller holds the fault lock. */
void hlrc_pull_mark(size_t page, enum stats_counter stat)
{
    page_list_add(&hlrc.pulls, &hlrc.npulls, &hlrc.cap_pulls, page);
    pthread_mutex_lock(&hlrc.lock);
    hlrc.pages[page].pulling = 1;
    hlrc.pulls_due++;
    pthread_mutex_unlock(&hlrc.lock);
    stats_add(STAT_PAGES_FETCHED, 1);
    stats_add(stat, 1);
    PROFILE_PAGE(PROF_FETCH, stat == STAT_PAGES_PULLED ? PROF_FETCH_PULL
                             : stat == STAT_PAGES_WRITE_AHEAD ? PROF_FETCH_WRITE_AHEAD
                                                              : PROF_FETCH_AHEAD, page, 0);
}

/* Asks `home` for pages first .. first + count - 1, each at least at the
 * version in need[] (hlrc_on_page_run_req). */
void hlrc_run_request(int home, size_t first, const uint32_t *need, size_t count)
{
    struct run_req q = {.first = (uint32_t)first, .count = (uint32_t)count};
    uint32_t vt[VT_MAX_NODES], aux;
    size_t vt_len = home_vt_out(vt, &aux);
    struct iovec iov[3] = {{.iov_base = &q, .iov_len = sizeof q},
                           {.iov_base = (void *)need, .iov_len = count * sizeof *need},
                           {.iov_base = vt, .iov_len = vt_len}};
    ipc_sendv(home, COH_PAGE_RUN_REQ, aux, iov, 3);
}

void hlrc_pull_run_send(struct pull_run *r)
{
    if (r->count == 1)
        home_request(r->first, r->home, r->need[0]);
    else if (r->count)
        hlrc_run_request(r->home, r->first, r->need, r->count);
    r->count = 0;
}

/* Asks the home of a page marked for a pull (hlrc_pull_mark) for its latest
 * version, received into the page as it stands (hlrc_settle_pulls waits), the
 * request joining `r` or starting the next run. Caller holds the fault
 * lock. */
void hlrc_pull_in_run(struct pull_run *r, size_t page)
{
    pthread_mutex_lock(&hlrc.lock);
    int home = mem_home(page);
    struct hlrc_page *h = &hlrc.pages[page];
    bool here = home == job()->rank; /* it moved here meanwhile (migrate.c): nothing to ask */
    if (here)
        pull_landed(h, h->version, false);
    pthread_mutex_unlock(&hlrc.lock);
    if (here)
        return;
    if (r->count && (home != r->home || page != r->first + r->count || r->count == READ_AHEAD_MAX))
        hlrc_pull_run_send(r);
    if (!r->count) {
        r->first = page;
        r->home = home;
    }
    r->need[r->count++] = h->need;
}

/* Waits for the pulls in flight and settles their pages: valid
 * (read-only) at the version received; or invalid, should that version be
 * older than a notice has named since the request went out (the homes
 * applied every diff of what this node has acquired before letting it
 * acquire, so this is a safeguard). Caller holds the fault lock. */
void hlrc_settle_pulls(void)
{
    if (!hlrc.npulls)
        return;
    coherence_wait_for(&hlrc.lock, &hlrc.pulls_due, 0);
    for (size_t i = 0; i < hlrc.npulls; i++) {
        size_t page = hlrc.pulls[i];
        struct page_entry *e = &mem.pages[page];
        struct hlrc_page *h = &hlrc.pages[page];
        if (h->version < h->need) {
            if (e->state != PAGE_INVALID)
                hlrc_invalidate(page);
        } else if ((h->version > h->need || h->unseen) && coherence_catching_up()) {
            /* Newer than our notices, or holding writes of intervals we
             * may lack (coherence.h, "catching up"): kept, but hidden, so
             * that its first access faults and catches up — or finds a
             * catch-up begun since it came here already ended (the fault
             * that read it ahead catches up right after, when its own
             * page was as new: BOTS strassen's node 1, whose pages read
             * ahead were all dropped and fetched again); no pull credit,
             * which would only fetch it ahead again. Under hlrc.lock: the
             * page may have moved here meanwhile (hlrc_pull_in_run), and a
             * home's pages are hidden under it (hide). */
            pthread_mutex_lock(&hlrc.lock);
            hlrc_hide(page);
            pthread_mutex_unlock(&hlrc.lock);
            if (e->state == PAGE_INVALID) {
                e->state = PAGE_READ;
                cache_admit(page);
            } else {
                mem_protect(page, PROT_NONE);
            }
            h->reread = 0;
            h->pull = 0;
        } else if (e->state == PAGE_INVALID) {
            e->state = PAGE_READ;
            mem_protect(page, PROT_READ);
            cache_admit(page);
        }
    }
    hlrc.npulls = 0;
    mem_protect_flush();
}

/* ---- their replies (delivery thread) ---------------------------------- */

/* A pull's reply is expected, and lands in place; hlrc_settle_pulls maps it. */
bool hlrc_pull_expected(size_t page)
{
    pthread_mutex_lock(&hlrc.lock);
    bool pulling = hlrc.pages[page].pulling;
    pthread_mutex_unlock(&hlrc.lock);
    return pulling;
}

/* Caller holds hlrc.lock. */
static void pull_landed(struct hlrc_page *h, uint32_t version, bool unseen)
{
    h->unseen = unseen;
    h->version = version;
    h->pulling = 0;
    hlrc.pulls_due--;
}

bool hlrc_page_landed(size_t page, enum home_status status, uint32_t version, bool unseen)
{
    pthread_mutex_lock(&hlrc.lock);
    struct hlrc_page *h = &hlrc.pages[page];
    bool pulled = h->pulling;
    /* "You are home": the page moved here while the pull was on its way,
     * with its version (take). */
    if (pulled && status == HOME_DATA)
        hlrc_check_version(page, h->version, 0, version, "pulled");
    if (pulled)
        pull_landed(h, status == HOME_DATA ? version : h->version, status == HOME_DATA && unseen);
    pthread_mutex_unlock(&hlrc.lock);
    return pulled;
}

void *hlrc_place_page_run_rep(int src, const void *head, size_t head_len, size_t msg_len,
                              size_t *skip)
{
    struct run_rep r;
    size_t rest;
    ipc_body(src, head, head_len, &r, sizeof r, &rest, "read-ahead reply");
    size_t count = hlrc_run_pages(r.first, r.count);
    size_t versions = count * sizeof(uint32_t);
    *skip = head_len - rest + versions;
    bool expected = count && rest >= versions && msg_len == *skip + count * mem.page_size;
    pthread_mutex_lock(&hlrc.lock);
    for (size_t i = 0; expected && i < count; i++)
        expected = hlrc.pages[r.first + i].pulling;
    pthread_mutex_unlock(&hlrc.lock);
    if (!expected)
        log_fatal("node %d sent pages nobody asked for, or a malformed read-ahead reply", src);
    return mem_sys_fill(r.first, count);
}

void hlrc_on_page_run_rep(int src, const void *msg, size_t len)
{
    struct run_rep r;
    uint32_t version[READ_AHEAD_MAX];
    size_t rest;
    const void *tail = ipc_body(src, msg, len, &r, sizeof r, &rest, "read-ahead reply");
    memcpy(version, tail, r.count * sizeof *version);
    pthread_mutex_lock(&hlrc.lock);
    for (size_t i = 0; i < r.count; i++) {
        hlrc_check_version(r.first + i, hlrc.pages[r.first + i].version, 0, version[i], "pulled");
        pull_landed(&hlrc.pages[r.first + i], version[i], ipc_msg_aux(msg) >> i & 1);
    }
    pthread_mutex_unlock(&hlrc.lock);
    ipc_notify();
}

/* ---- the acquire's notices -------------------------------------------- */

/* The acquire's pulls (see hlrc_apply_notices). */
void hlrc_notices_applied(void)
{
    coherence_lock();
    hlrc_settle_pulls();
    coherence_unlock();
}

/* Whether a notice makes a copy stale that this node has written since
 * its last release. Caller holds the fault lock. */
static bool stales_dirty(const struct notice *n, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) {
        size_t page = n[i].page;
        struct page_entry *e = &mem.pages[page];
        if (e->dirty && e->state != PAGE_INVALID && mem_home(page) != job()->rank &&
            hlrc.pages[page].version < n[i].version)
            return true;
    }
    return false;
}

void hlrc_apply_notices(int node, const uint32_t *vt, const struct notice *n, uint32_t count)
{
    (void)vt; /* versions order hlrc's copies, not vector times */
    (void)node;
    coherence_lock();
    if ((smp_multi() || coherence_catching_up()) && stales_dirty(n, count)) {
        /* A page written here goes home before it is invalidated, so that
         * no local write is lost. Its diff alone would be wrong where the
         * program may have written data on other pages and then a flag on
         * this one (NPB LU's pipeline): the flag's diff would reach the
         * home ahead of the data's, announced by no interval, and a node
         * that polls the flag would read the data as it was. With threads
         * another thread may have (issue 40); with one, a catch-up runs at
         * a fault between the program's stores and its next flush (NPB-CPP
         * LU class S on 4 nodes ended in NaN). So all the node's writes go
         * home together, as a release (write-protected first), and make
         * an interval: a node that sees the flag catches up with it. A
         * program that never flushes keeps the page's diff alone. */
        coherence_release_begins();
        hlrc_release_locked(true, -1);
        coherence_release_ends();
    }
    for (uint32_t i = 0; i < count; i++) {
        size_t page = n[i].page;
        struct page_entry *e = &mem.pages[page];
        struct hlrc_page *h = &hlrc.pages[page];
        if (mem_home(page) == job()->rank)
            continue; /* the home's copy already holds it */
        pthread_mutex_lock(&hlrc.lock);
        if (n[i].version > h->need)
            h->need = n[i].version;
        pthread_mutex_unlock(&hlrc.lock);
        if (e->state == PAGE_INVALID || h->version >= n[i].version || h->pulling)
            continue; /* a pull in flight brings the home's latest */
        if (e->dirty)
            hlrc_flush_page(page, -1); /* keep our own writes: they go home first */
        else if (h->pull) {
            h->pull--;
            hlrc_pull_mark(page, STAT_PAGES_PULLED);
            page_list_add(&hlrc.to_pull, &hlrc.nto_pull, &hlrc.cap_to_pull, page);
            continue;
        }
        hlrc_invalidate(page);
    }
    /* In page order, so that consecutive pages go in runs. */
    page_list_sort(hlrc.to_pull, hlrc.nto_pull);
    struct pull_run run = {.count = 0};
    for (size_t i = 0; i < hlrc.nto_pull; i++)
        hlrc_pull_in_run(&run, hlrc.to_pull[i]);
    hlrc_pull_run_send(&run);
    hlrc.nto_pull = 0;
    mem_protect_flush();
    coherence_unlock();
}
