/*
 * hlrc_state.h — hlrc's state and the declarations its files share
 * (hlrc.c and its siblings hlrc_*.c: the fault path, read-ahead, the
 * acquire, the release, the home's snapshots, the home's service,
 * atomics). Private to src/coherence/: no other layer includes it, and
 * coherence.h, the layer's interface, does not grow with hlrc's
 * internals; the protocol is reached through hlrc_ops alone.
 *
 * Two objects hold the state, each defined once, in hlrc.c: `hlrc`, the
 * pages' versions, the dirty list, the home's tracked pages, the pulls,
 * read-ahead's streams and the diffs in flight; and `hlrc_wr`, what the
 * copies a home serves hold (hlrc_home.c keeps it). hlrc.lock guards
 * what the program's thread (under the fault lock, coherence_lock) and
 * the delivering thread (the home's side, the replies) both touch.
 */
#ifndef DSM_COHERENCE_HLRC_STATE_H
#define DSM_COHERENCE_HLRC_STATE_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/stats.h"
#include "coherence/coherence.h"
#include "coherence/home.h"
#include "coherence/msgcheck.h"

/* A read-ahead run's bodies (struct run_req, run_rep) are in msgcheck.h. */

struct dirty_page {
    uint32_t page, version;
    uint32_t before_arrival; /* its diff went to the barrier parent, unacknowledged before the arrival */
};

/* hlrc's own state of a page (beside its page_entry). Only the program's
 * thread changes reread, pull and dirty_idx; version, need, pulling,
 * quiet and shared may also be read or changed by the delivering thread,
 * under hlrc.lock. */
struct hlrc_page {
    uint32_t version;   /* version of this node's copy (at the home: the home's) */
    uint32_t need;      /* highest version a write notice applied here named */
    uint32_t dirty_idx; /* its entry in hlrc.dirty, while dirty */
    uint16_t quiet;     /* at the home: releases since the snapshot last changed */
    uint8_t  shared;    /* at the home: some other node has fetched it */
    uint8_t  fetched;   /* at the home: announced changes it stays shared for
                         * (SHARED_AFTER_FETCH at each fetch served and each
                         * other node's diff applied) */
    uint8_t  patience;  /* at the home: retired and written again (see RETIRE_AFTER) */
    uint8_t  reread;    /* invalidated by a notice since its last fetch */
    uint8_t  pull;      /* acquires that may still refresh it in place */
    uint8_t  pulling;   /* a refresh is in flight */
    uint8_t  fetching;  /* with threads: a fault's fetch is in flight, the fault
                         * lock dropped (see fetch_unlocked in hlrc_fetch.c) */
    uint8_t  unsnapped; /* at the home: shared and writable without a snapshot */
    uint8_t  unarmed;   /* at the home: tracked before the write watch started and
                         * not armed yet (compared at its next release, then armed) */
    uint8_t  hidden;    /* no access until this node catches up: at the home,
                         * another node's diff changed it (see hlrc_apply_diff); with
                         * threads, a copy fetched ahead (see make_valid) */
    uint8_t  unseen;    /* a pull brought it holding writes of intervals this node
                         * may not have seen (see unseen_by) */
    uint64_t hidden_at; /* with threads: coherence_pull_mark() when last hidden */
    uint32_t acked_round; /* migrate_rounds() at its home's last acknowledgement here */
};

/* Releases a tracked home page may stay unchanged before it is
 * write-protected and its snapshot dropped: a page read by others but no
 * longer written (a finished result) stops costing compares. A page the
 * home writes again after its retirement doubles its patience, up to
 * RETIRE_AFTER << RETIRE_PATIENCE_MAX releases: a vector written once in
 * every few barriers (NAS CG's, between its loops and reductions) would
 * otherwise pay a write-protect and a write fault each time (14,000 of
 * them per node in CG class A), where staying tracked costs a compare per
 * release. */
#define RETIRE_AFTER 2
#define RETIRE_PATIENCE_MAX 5

/* Announced changes a home page stays shared (tracked, its snapshot
 * published for one-sided reads) after a fetch served or another node's
 * diff applied: a page other nodes fetch, or write, at every interval
 * stays so — its home's writes compared, and counted for home migration
 * (migrate.c), which would otherwise see only the other writers' (NAS BT
 * class W on 2 nodes made 25-40 % more twins and diffs when a written
 * page was unshared however it was shared). One fetched by one-sided
 * reads alone, which the home does not see, is unshared after this many
 * changes and its next reader asks the home (1 read in 5 where every
 * read was one-sided). See hlrc_announce_home_writes. */
#define SHARED_AFTER_FETCH 4

/* Acquires that refresh a re-read page in place before it must fault
 * again to show it is still read: DSM_PULL_CREDIT, 8 by default
 * (hlrc.pull_credit). */

/* Pages fetched ahead of a read fault at most (see hlrc_read_ahead): a run
 * request's size; DSM_READ_AHEAD chooses up to it (hlrc.read_ahead). A
 * run's reply says which of its pages are unseen_by in one 32-bit word. */
#define READ_AHEAD_MAX HLRC_READ_AHEAD_MAX
_Static_assert(READ_AHEAD_MAX <= 32, "a run's unseen pages are bits of the reply's aux");

/* Read-ahead's streams (see hlrc_read_ahead): how many the node follows at
 * once, the read faults it remembers to find a new one's stride in, and
 * the largest stride, in pages, it takes for a stream (a row of a
 * 4096-wide matrix of doubles is 4 pages; a stride of 64 reads 1 page in
 * 64 of a 512 KiB row). */
#define AHEAD_STREAMS    8
#define AHEAD_RECENT     8
#define AHEAD_STRIDE_MAX 64

/* A read fault no stream reads ahead for reads the pages of its aligned
 * block this node knows no write of (see hlrc_read_ahead): AHEAD_BLOCK_RUNS
 * runs of DSM_READ_AHEAD pages, at most AHEAD_BLOCK_BYTES (64 pages of
 * 8 KiB by default; 8 of 64 KiB). */
#define AHEAD_BLOCK_RUNS  4
#define AHEAD_BLOCK_BYTES ((size_t)512 << 10)

struct hlrc_state {
    pthread_mutex_t    lock;        /* versions, the dirty list, the pulls */
    struct hlrc_page  *pages;       /* per page, mapped at start (zero pages until used) */
    struct dirty_page *dirty;         /* pages written here, homed elsewhere */
    size_t             ndirty, cap;
    uint32_t          *tracked;       /* home pages with a snapshot (under lock) */
    size_t             ntracked, cap_tracked;
    uint8_t           *written;       /* per tracked page: written, by the watch (under lock) */
    size_t             cap_written;
    uint64_t           compares;      /* tracked pages compared at releases, for WATCH_AFTER_COMPARES */
    uint32_t          *unsnapped;     /* shared home pages writable without one */
    size_t             nunsnapped, cap_unsnapped;
    uint32_t          *unprotected;   /* read-only from the release, but for the */
    size_t             nunprotected,  /* write-protect, done at release_sent */
                       cap_unprotected;
    uint32_t          *pulls;         /* pages refreshed by the current acquire */
    size_t             npulls, cap_pulls;
    uint32_t          *to_pull;       /* of them, those whose requests are to go */
    size_t             nto_pull, cap_to_pull;
    int                pulls_due;     /* of them, replies still to come (under lock) */
    struct ahead_stream {         /* read-ahead's streams of faults (see hlrc_read_ahead) */
        size_t   next;                /* the page its next fault is expected at */
        long     stride;              /* pages from one of its faults to the next */
        unsigned run;                 /* its faults so far */
        uint64_t used;                /* hlrc.ahead_clock when it last faulted */
    } streams[AHEAD_STREAMS];
    size_t             recent[AHEAD_RECENT]; /* the last fetching read faults' pages, + 1 (0: none) */
    uint64_t           ahead_clock;   /* read faults that fetched so far */
    int                ahead_stream;  /* the stream of the fault being fetched, or -1 */
    size_t             ahead_block;   /* the pages of its block it reads ahead (see hlrc_read_ahead) */
    size_t             ahead_room;    /* pages the page cache has room for ahead */
    size_t             write_ahead_end; /* the page after a write fault's run fetched ahead */
    int                outstanding;  /* diffs sent, not yet acknowledged */
    int                outstanding_arrival; /* of them, those the barrier's arrival follows */
    int                outstanding_other;   /* and the others */
    struct notice     *arrival_n;    /* the unacked interval's notices (release_arriving) */
    uint32_t           arrival_count, arrival_dirty_at; /* its length, where the dirty pages' begin */
    size_t             read_ahead;   /* DSM_READ_AHEAD: at most READ_AHEAD_MAX */
    size_t             write_ahead;  /* DSM_WRITE_AHEAD: at most READ_AHEAD_MAX */
    uint8_t            pull_credit;  /* DSM_PULL_CREDIT */
    unsigned char     *diffbuf;
};
extern struct hlrc_state hlrc; /* hlrc.c */

/* What the copies a home serves hold (coherence.h, "catching up"): per
 * page, per writer, the newest interval whose writes to the page are in
 * the content this home serves (a diff's, an atomic's, its own announced
 * at a release). A copy holding a write of an interval its requester may
 * not have seen makes it catch up. Only from this node's first flush
 * (made or asked of it), when `on` is set; before, `seen` alone is kept
 * (one maximum per diff applied), and a page with no vector of its own
 * is taken to hold everything `seen` named then (`start`). Under
 * hlrc.lock. */
struct hlrc_writers {
    bool       on;
    uint32_t  *seen;     /* per writer, over every page of this home */
    uint32_t  *start;    /* `seen` when `on` was set */
    uint32_t **page;     /* per page (mapped at start): its vector, or NULL */
    uint32_t  *listed;   /* the pages that have one, to free */
    size_t     nlisted, cap_listed;
};
extern struct hlrc_writers hlrc_wr; /* hlrc.c */

/* ---- hlrc_fetch.c: the fault path ------------------------------------------- */
void hlrc_read_fault(size_t page);
void hlrc_write_fault(size_t page);
void hlrc_reveal(size_t page);
/* A notice made this node's copy stale. Caller holds the fault lock. */
void hlrc_invalidate(size_t page);
/* DSM_CHECK: a copy installed here is never older than one installed
 * before (`had`), nor than `need`. */
void hlrc_check_version(size_t page, uint32_t had, uint32_t need, uint32_t got, const char *how);
/* Hides a copy that may hold writes of intervals this node has not seen. */
void hlrc_hide(size_t page);
/* After the program's own protection changes of these pages: a page
 * hidden meanwhile stays hidden. */
void hlrc_rehide(const uint32_t *pages, size_t n);
/* Puts a page on the dirty list. Caller holds hlrc.lock. */
void hlrc_dirty_add(size_t page);

/* ---- hlrc_ahead.c: read-ahead and write-ahead ------------------------------- */
/* Sets hlrc.ahead_stream: the stream a read fault on `page` belongs to. */
void hlrc_stream_for(size_t page);
/* Pages the read fault being fetched reads ahead. */
size_t hlrc_ahead_depth(void);
/* Pages a write fault on `page` of `home` fetches ahead. */
size_t hlrc_write_ahead_depth(size_t page, int home);
/* Sent with the faulting page's request (home_fetch's `also`). */
void hlrc_read_ahead(size_t page, int home);
void hlrc_write_ahead(size_t page, int home);

/* ---- hlrc_acquire.c: notices applied, and pulls (fetches into place) -------- */
void hlrc_apply_notices(int node, const uint32_t *vt, const struct notice *n, uint32_t count);
void hlrc_notices_applied(void);
/* Counts the page as fetched into place and waiting for its reply. */
void hlrc_pull_mark(size_t page, enum stats_counter stat);

/* An acquire's pulls of consecutive pages of one home, gathered into one
 * request (hlrc_on_page_run_req) as read-ahead's are: a transform's transpose
 * refreshes whole rows of pages at each barrier (FFT 2^26 on 2 nodes:
 * 65k pulls a node, each a request and a reply of its own). */
struct pull_run {
    size_t   first, count;
    int      home;
    uint32_t need[READ_AHEAD_MAX];
};

/* Asks `home` for pages first .. first + count - 1 (hlrc_on_page_run_req). */
void hlrc_run_request(int home, size_t first, const uint32_t *need, size_t count);
/* A page marked for a pull joins `r`'s request, or starts the next run. */
void hlrc_pull_in_run(struct pull_run *r, size_t page);
void hlrc_pull_run_send(struct pull_run *r);
/* Waits for the pulls in flight and settles their pages. */
void hlrc_settle_pulls(void);
/* home_ops.expects and .landed: a pull's reply. */
bool hlrc_pull_expected(size_t page);
bool hlrc_page_landed(size_t page, enum home_status status, uint32_t version, bool unseen);
/* COH_PAGE_RUN_REP: a run's pages, received in place. */
void *hlrc_place_page_run_rep(int src, const void *head, size_t head_len, size_t msg_len,
                              size_t *skip);
void hlrc_on_page_run_rep(int src, const void *msg, size_t len);

/* ---- hlrc_release.c: diffs home, and the interval recorded ------------------ */
void hlrc_release(void);
void hlrc_release_aside(void);
bool hlrc_release_arriving(int parent);
void hlrc_release_sent(void);
/* Sends the page's diff home, if it has a twin and changed. */
void hlrc_flush_page(size_t page, int parent);
/* The release, the fault lock held; whether its interval stays unacked. */
bool hlrc_release_locked(bool aside, int parent);
/* home_ops.diff_acked: a diff of ours applied at its home. */
void hlrc_diff_acked(int src, const struct diff_ack *a);

/* ---- hlrc_snapshot.c: the home's own writes --------------------------------- */
/* Gives a home page a snapshot, or puts it on the unsnapped list. Caller
 * holds hlrc.lock. */
void hlrc_track(size_t page);
void hlrc_snapshot_drop(size_t page);
/* Publishes what a request for a home page would get now (oneside.h). */
void hlrc_publish(size_t page);
/* The release's notices of the home's own writes, from n[count]; each
 * returns the new count. Caller holds the fault lock. */
uint32_t hlrc_announce_home_writes(struct notice *n, uint32_t count, size_t limit,
                                   uint32_t interval);
uint32_t hlrc_announce_unsnapped(struct notice *n, uint32_t count, size_t limit, bool aside,
                                 uint32_t interval);

/* ---- hlrc_home.c: the home's service ---------------------------------------- */
/* `node`'s writes of `interval` are in the page as served. Caller holds
 * hlrc.lock. */
void hlrc_note_writer(size_t page, int node, uint32_t interval);
/* home_ops.serve, .diff, .give and .take. */
void hlrc_serve(int requester, size_t page, uint32_t need, size_t run);
void hlrc_apply_diff(int src, size_t page, uint32_t idx, const void *diff, size_t len,
                     uint32_t interval);
bool hlrc_give(size_t page, int to);
void hlrc_take(int from, size_t page, uint32_t version, const uint64_t *set, size_t words,
               const void *data);
/* Checks a run's bounds; returns its size in pages, or 0 if malformed. */
size_t hlrc_run_pages(uint32_t first, uint32_t count);
/* COH_PAGE_RUN_REQ: a run of pages asked of this home. */
void hlrc_on_page_run_req(int src, const void *msg, size_t len);

/* ---- hlrc_atomic.c: atomics at the home ------------------------------------- */
int hlrc_atomic(size_t page, size_t offset, struct coh_atomic *a);
bool hlrc_atomic_away(size_t page, uint8_t op, uint32_t *need);
void hlrc_atomic_wrote(size_t page, size_t offset, const struct coh_atomic *a, uint32_t version);
/* home_ops.atomic: the operation at the home; the page's new version, or 0. */
uint32_t hlrc_perform_atomic(int src, size_t page, uint32_t need, size_t offset,
                             struct coh_atomic *a, uint32_t interval);

#endif
