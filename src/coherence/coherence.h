/*
 * coherence.h — the protocol interface (docs/design.md, layer 4) and the
 * interval machinery shared by the lazy protocols.
 *
 * Release consistency, the lazy way (TreadMarks, HLRC): a node's execution
 * is cut into *intervals* at each release; an interval that wrote pages
 * carries *write notices* (page, version). Each node keeps a vector
 * timestamp — the last interval of every node whose notices it has applied —
 * and the intervals themselves, so it can pass them on: a lock grant carries
 * every interval the acquirer has not seen, a barrier every interval of the
 * epoch. Applying a notice invalidates the page where the local copy is
 * older than the version named. After a barrier every node has seen every
 * interval, and the logs are dropped.
 */
#ifndef DSM_COHERENCE_COHERENCE_H
#define DSM_COHERENCE_COHERENCE_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipc/ipc.h"
#include "mem/mem.h"

/* The coherence layer's message types (numbered on from ipc's; ipc.h). The
 * page fetch and diff types serve the home-based protocols: home.c
 * registers them and home.h gives each its one wire format (the read-ahead
 * runs are hlrc's). The one active protocol numbers its own types from
 * COH_PROTOCOL_TYPES, below COHERENCE_TYPE_NEXT, and registers them in its
 * start. */
enum coherence_type {
    COH_PAGE_REQ = IPC_TYPE_NEXT, /* fetch a page from its home (or its base node) */
    COH_PAGE_REP,                 /* the page, received straight into place */
    COH_PAGE_RUN_REQ,             /* consecutive pages of one home, read ahead */
    COH_PAGE_RUN_REP,             /* those pages, received straight into place */
    COH_DIFF,                     /* a writer's diff, to the page's home */
    COH_DIFF_ACK,                 /* the home applied it; the new version */
    COH_VT,                       /* a node's vector timestamp (interval.c's collection) */
    COH_DIFF_FWD,                 /* a diff a former home passes on to the home (migrate.c) */
    COH_MIGRATE,                  /* a page and its home's state, to its new home (migrate.c) */
    COH_MIGRATE_ACK,              /* the new home has it */
    COH_HOME_MOVED,               /* the page's home is now the sender (to its base, its copies) */
    COH_ATOMIC_REQ,               /* an atomic on a word, to the page's home (home_atomic.c) */
    COH_ATOMIC_REP,               /* the word's old value and the page's new version */
    COH_DIFFS,                    /* a release's diffs of pages of one home, together */
    COH_DIFF_ACKS,                /* the home applied them: their new versions, together */
    COH_PROTOCOL_TYPES,
    COHERENCE_TYPE_NEXT = COH_PROTOCOL_TYPES + 8
};

#define VT_MAX_NODES 256 /* as many nodes as a job may have */

struct notice {
    uint32_t page;
    uint32_t version;
};
/* A notice's version not known yet: the diff went to the home that is
 * the node's parent in the barrier's tree, which fills it in from the
 * diff it applied when the arrival comes (hlrc, coherence_arrival_from).
 * It never reaches a node that applies notices. */
#define NOTICE_PENDING UINT32_MAX

/* An atomic operation on one naturally aligned word of shared memory, as
 * the program asked for it (sync/atomic.c) and as a page's home performs
 * it (home_atomic.c). */
enum coh_atomic_op {
    COH_ATOMIC_LOAD, COH_ATOMIC_STORE, COH_ATOMIC_XCHG, COH_ATOMIC_ADD, COH_ATOMIC_SUB,
    COH_ATOMIC_AND, COH_ATOMIC_OR, COH_ATOMIC_XOR, COH_ATOMIC_NAND, COH_ATOMIC_CAS,
    COH_ATOMIC_OPS
};
struct coh_atomic {
    uint8_t  op, size;  /* enum coh_atomic_op; 1, 2, 4 or 8 bytes */
    uint64_t value;     /* the operand (CAS: the value stored if it matches) */
    uint64_t expected;  /* CAS: the value compared with */
    uint64_t old;       /* out: the word before the operation */
};
/* Performs `a` on the word at p (through the system view) with the
 * hardware's atomic, sets a->old, and returns whether the word changed. */
bool coh_atomic_apply(void *p, struct coh_atomic *a);
/* Whether an operation `op` on `size` bytes at `offset` of `page`, as a
 * message names it, is one a node of this job can have sent: a page of
 * the region, an operation and width there are, aligned, inside the page. */
bool coh_atomic_fits(uint32_t page, uint8_t op, uint8_t size, uint32_t offset);
/* Performs on the word at p an operation the page's home performed (a->old
 * is what it found there), if p holds a->old too: then p's result is the
 * home's. Returns whether it did (false: p held something else). */
bool coh_atomic_replay(void *p, const struct coh_atomic *a);
/* At a node granting a lock (sync/lock.c): performs `requester`'s atomic
 * `a` on the word at `offset` of the page if this node is its home and
 * the protocol does atomics there, as COH_ATOMIC_REQ would (`need`: the
 * version the requester needs; `interval`: the requester's interval that
 * will announce it, or an earlier one). Returns 0 (a->old set; *version the
 * page's new version, 0 when the word did not change) or -EAGAIN. */
int coherence_atomic_here(int requester, size_t page, uint32_t need, size_t offset,
                          struct coh_atomic *a, uint32_t interval, uint32_t *version);
/* Where a granter that is not the page's home would send such an atomic
 * on with the grant (sync/lock.c): the home this node knows, or the
 * page's base node; -1 where the protocol does no atomics at the home, or
 * the page has no home yet. */
int coherence_atomic_home(size_t page);

struct coherence_ops {
    /* The statistics report seed 000's estimate of AURC from this
     * protocol's accounting (its twin and diff times): hlrc's. */
    bool aurc_estimate;
    void (*start)(void);                /* register message handlers */
    /* A fault on the page, on the faulting thread: the trampoline
     * (coherence.c) holds the fault lock around them, counts and times
     * them. read_fault makes an invalid page readable (called only while
     * the page is invalid); write_fault makes the page writable, from any
     * state (it may have become writable since the fault). */
    void (*read_fault)(size_t page);
    void (*write_fault)(size_t page);
    /* Optional: a read fault on a page whose state allows reading: the
     * protocol may have hidden it (hlrc hides a home page that another
     * node's diff changed while this node catches up: coherence.h,
     * "catching up"). Makes it readable again; under the fault lock. */
    void (*reveal)(size_t page);
    /* Optional: makes this node's writes so far visible to the next
     * acquirer: coherence_release runs it before every release (unlock,
     * barrier, create, ...). Not needed where a write is performed once
     * its store runs (sc). */
    void (*release)(void);
    /* Optional: what a release may leave until its message is out (a
     * barrier arrival, a lock grant), so that the nodes waiting for the
     * message need not wait for it: coherence_release_sent runs it after
     * every release, before the program runs on and before any acquire. */
    void (*release_sent)(void);
    /* Optional: the barrier's release at a node whose parent in the
     * barrier's tree is `parent`: the diffs whose home is the parent need
     * not be acknowledged before the arrival goes — it follows them to
     * the parent, which fills their versions into it
     * (coherence_arrival_from). COH_NO_PARENT: a flush's release, none of
     * whose diffs is waited for and whose homes fill in nothing
     * (coherence_release_unawaited). Returns true when it did so: the fault
     * lock stays held, and the interval unacked, until release_sent has
     * the acknowledgements; false when it was an ordinary release. */
    bool (*release_arriving)(int parent);
#define COH_NO_PARENT (-2) /* release_arriving's parent for a flush: every diff unawaited */
    /* Optional: the same release, run by a thread other than the
     * program's while the program runs on (it holds the fault lock, so the
     * program's faults wait): every write before it must be made final
     * first (write-protected, then diffed), and nothing may be left for
     * release_sent. With it, an unlock whose lock stays on the node leaves
     * its release pending (coherence_release_keep; lock.c), and that
     * thread runs it when another node asks for the lock. */
    void (*release_aside)(void);
    /* Optional: performs the atomic `a` on the word at `offset` of a page
     * this node has not written since its last release (a load: of a page
     * not valid here), at the page's home, in one round trip, on the
     * program's thread while it holds the word's block lock (acquired:
     * sync/atomic.c); the change goes into this node's next interval as a
     * write notice, as a diff's would. Returns 0 (a->old set), or -EAGAIN
     * when it did not: the page is written here or homed here, its home is
     * not known, ... (the caller then runs it on the local copy). NULL:
     * the protocol always runs atomics on the local copy. */
    int (*atomic)(size_t page, size_t offset, struct coh_atomic *a);
    /* With `atomic`: whether an atomic `op` (enum coh_atomic_op) on the
     * page would be done at its home now (this node has not written the
     * page since its last release, or for a load has no valid copy; its
     * home is another node), and the version of it this node needs
     * (*need). */
    bool (*atomic_away)(size_t page, uint8_t op, uint32_t *need);
    /* With `atomic`: this node's atomic `a` (a->old: the word before it)
     * on the word at `offset` of the page, done at the home another way
     * (with a lock's grant: sync/lock.c), changed it to `version`: this
     * node's write, as `atomic` records it. */
    void (*atomic_wrote)(size_t page, size_t offset, const struct coh_atomic *a, uint32_t version);
    /* Applies another node's write notices (on acquire): those of `node`'s
     * interval whose creator had seen `vt` (nodes entries, vt[node] its id;
     * given under DSM_CHECK only, else NULL). NULL: the protocol makes no
     * notices, and receiving any is a protocol error (mixed protocols). */
    void (*apply_notices)(int node, const uint32_t *vt, const struct notice *n, uint32_t count);
    /* Optional: called when an acquire has applied all its notices. */
    void (*notices_applied)(void);
    /* Optional: called on every node just before it arrives at a barrier
     * round (its release done). True: this node asks for one more round
     * after this one. The arrivals carry the votes up the barrier's tree
     * and its release carries their count down, so asking costs no
     * message of its own. */
    bool (*barrier_vote)(void);
    /* Optional: called on every node at the end of every barrier round,
     * when all nodes have seen the same intervals; `votes` is how many
     * nodes' barrier_vote asked for one more round in this one (the same
     * on every node). Returns true when the protocol needs one more round
     * before the barrier ends (every node decides alike); the barrier then
     * runs it and calls this again. */
    bool (*barrier_done)(uint32_t votes);
    /* Optional: called on every node at each join of a parallel region
     * over all nodes (every node passes the same joins between the same
     * barriers): true when this join should be a barrier (sync_join), as
     * the protocol would need one here had the region been one loop of a
     * larger region. */
    bool (*join_wants_barrier)(void);
    /* Gives up this node's copy of a page homed elsewhere, for the page
     * cache (DSM_LOCAL_MEM, cache.c): the page becomes invalid here, and
     * whatever of it only this node holds is made safe first — sent home,
     * or kept where the protocol's peers can still fetch it — so that the
     * cache may then release the frame. Runs on the program's thread under
     * the fault lock, never for the page being faulted on. Returns enum
     * cache_evict. NULL: the protocol cannot bound its copies (refused at
     * start). */
    int (*evict)(size_t page);
    /* The lock under which the protocol's handlers change page states and
     * protections on the delivering thread (NULL: they never do): the
     * cache's clock takes it to take a page's access away and give it
     * back. */
    pthread_mutex_t *state_lock;
    /* Optional: frees the protocol's state at dsm_finish, when no message
     * can arrive any more; shared memory stays as the program left it.
     * Runs under the fault lock. */
    void (*finish)(void);
};

/* Every protocol's ops (protocols.def lists them). */
#define PROTOCOL(name, ops, can, description) extern const struct coherence_ops ops;
#include "coherence/protocols.def"
#undef PROTOCOL

/* A protocol, as protocols.def lists it. */
/* What a protocol can do beyond the interface (protocols.def's third
 * column), asked of it rather than of its name: coherence_can, which
 * holds the column apart from the ops (protocol_can.c). */
enum coherence_can {
    /* Several program threads of a node at once (docs/design.md, SMP
     * nodes): its paths act per node under concurrent faults. */
    COHERENCE_NODE_THREADS = 1u << 0,
};
struct coherence_protocol {
    const char                 *name;
    const char                 *description;
    const struct coherence_ops *ops;
};
/* What the protocols need from the settings (runtime.c fills it from the
 * table: docs/design.md, Settings); coherence_params() reads it from
 * coherence_start on. */
struct coherence_params {
    uint64_t lrc_gc_notices; /* DSM_LRC_GC_NOTICES: lrc collects its diffs at the first
                                barrier after this many notices */
    uint64_t sc_window_ns;   /* DSM_SC_WINDOW_US: how long sc leaves a page with its writer */
    bool     one_sided;      /* fetch pages by one-sided reads (DSM_NET=ucx with
                                DSM_NET_ONE_SIDED other than off: oneside.c) */
    bool     migrate_pages;  /* DSM_MIGRATE_PAGES (migrate.c) */
    bool     migrate_homes;  /* DSM_MIGRATE_HOMES, or the program's default */
    uint64_t migrate_period; /* DSM_MIGRATE_PERIOD */
    uint64_t migrate_max;    /* DSM_MIGRATE_MAX, 0 = no limit */
    size_t   read_ahead;     /* DSM_READ_AHEAD (hlrc.c) */
    size_t   write_ahead;    /* DSM_WRITE_AHEAD */
    uint8_t  pull_credit;    /* DSM_PULL_CREDIT */
};
const struct coherence_params *coherence_params(void);
/* The protocol called `name` (one of protocols.def), or NULL. */
const struct coherence_protocol *coherence_find(const char *name);
/* Whether the protocol called `name` can do all of `what` (enum
 * coherence_can); false for a name that is none. */
bool coherence_can(const char *name, unsigned what);
/* The active protocol's ops, and its name. */
extern const struct coherence_ops *coh;
const char *coherence_name(void);

void coherence_start(const struct coherence_protocol *p, const struct coherence_params *params);
/* The calling thread's time in page faults so far (ns). */
uint64_t coherence_thread_fault_ns(void);
/* The fault lock: the program's protocol actions (faults, releases,
 * applying notices, ...) one at a time. Faults hold it already; the
 * protocol takes it in its other entry points that need it. */
void coherence_lock(void);
void coherence_unlock(void);
void coherence_finish(void);
void coherence_release(void);
void coherence_release_sent(void);
/* The barrier's release (coherence_ops.release_arriving), or
 * coherence_release where the protocol has none. Until
 * coherence_release_sent the release is running (a flush's answer waits)
 * and a kept release counts as pending (its grant waits). */
void coherence_release_arriving(int parent);
/* A flush's release (sync/flush.c): the same, with no parent — no diff
 * is waited for before coherence_release_sent, whatever its home, so the
 * flush's asks go while its diffs are on their way (NPB LU's pipeline:
 * a flush that wrote its rows was two round trips, the diffs' and then
 * the asks'). Nothing rides on the asks for the homes to fill in: the
 * release's interval exists, unacknowledged, and no answer or grant
 * gives it out until release_sent has the acknowledgements. Where the
 * protocol has no such release (or the node runs threads), a
 * coherence_release. */
void coherence_release_unawaited(void);
/* At a barrier parent, a child's arrival (its intervals, `len` bytes):
 * the versions its diffs got here are filled in (home_fill_arrival). */
void coherence_arrival_from(int child, void *intervals, size_t len);

/* A release that stays on the node (issue 27; docs/protocols.md). An
 * unlock whose lock nobody waits for may leave its release pending:
 * coherence_release_keep returns its *ticket* (> 0) when the protocol
 * allows it (it has release_aside), and counts the release as pending; 0
 * when it does not. Every coherence_release (barrier, bcast, create, an
 * unlock whose lock leaves) runs the pending ones with its own, so
 * transitivity holds. coherence_release_pending(ticket): the kept release
 * of that ticket, or one kept before it, has not run yet (ticket 0: none
 * is asked about; false). A lock whose own last release has run may leave
 * while later ones are still pending: its holder's writes after that
 * unlock need not go with it.
 * coherence_release_aside runs them on a thread other than the program's,
 * which may block (it takes the fault lock and waits for acks); a release
 * kept after it began may still be pending when it returns. */
uint64_t coherence_release_keep(void);
bool coherence_release_pending(uint64_t ticket);
/* The ticket of the last release kept so far (0: none): with
 * coherence_release_pending, whether any kept release has yet to run. */
uint64_t coherence_release_kept(void);
void coherence_release_aside(void);
/* A release the protocol runs by itself, outside coherence_release (hlrc,
 * with threads on the node: an acquire's notice for a page another thread
 * is writing): between the two, answers to flushes wait for it, as for
 * any release. */
void coherence_release_begins(void);
void coherence_release_ends(void);
/* Whether a release is running on this node, or kept and not yet run:
 * the interval it makes is the one interval_next names, and a flush's
 * answer waits for it (hlrc_home.c, unseen_by). */
bool coherence_release_unfinished(void);

/* Catching up with a copy newer than the notices (docs/protocols.md,
 * "Flush"). Under hlrc a fetch brings the home's copy as it is, which may
 * hold writes whose write notices this node has not applied: a flag
 * another node wrote and flushed, seen before the notices of the data it
 * wrote before the flag (NPB LU polls such a flag, then reads the data).
 * OpenMP's flush promises those data once the flag is seen, so a program
 * that flushes must catch up: coherence_set_catch_up names the catch-up
 * (a flush's acquire, sync/flush.c), set at the node's first flush;
 * from then on coherence_catching_up() is true, a protocol calls
 * coherence_fetched_ahead() when a copy it made readable is newer than
 * its notices or may hold writes of intervals this node has not seen
 * (hlrc's homes record each page's writers: unseen_by, interval_heard),
 * and the fault trampoline runs the catch-up before the
 * faulting access is retried. A program that never flushes pays nothing.
 * coherence_after_releases(fn, arg): fn(arg) once no release is running
 * on this node (at once if none is), so that an answer to a flush names
 * the interval of a release whose diffs the homes may already show. */
void coherence_set_catch_up(void (*fn)(void));
bool coherence_catching_up(void);
void coherence_fetched_ahead(void);
void coherence_after_releases(void (*fn)(void *), void *arg);
/* With threads on the node, a copy that may be ahead of the notices is
 * readable by every thread at once, while only the faulting one catches
 * up: the protocol keeps it hidden (no access) until a catch-up (or any
 * flush's pull) *begun after it arrived* has ended. The pull calls
 * coherence_pull_begins before it asks (its number) and
 * coherence_pull_ends after it applied the answers; a protocol takes
 * coherence_pull_mark() when it hides a copy, and may show it once
 * coherence_pulled_since(mark). */
uint64_t coherence_pull_begins(void);
void coherence_pull_ends(uint64_t pull);
uint64_t coherence_pull_mark(void);
bool coherence_pulled_since(uint64_t mark);

/* A placer's first step (ipc_placer): the reply's fixed body into `body`
 * (`size` bytes), and *skip past it; ends the job on a short one. */
void coherence_place_head(int src, const void *head, size_t head_len, void *body, size_t size,
                          size_t *skip, const char *what);

/* The job's and the region's sizes, that message bodies are checked
 * against (msgcheck.h). */
struct coh_limits;
void coherence_limits(struct coh_limits *l);

/* Waits (ipc_wait: handlers run meanwhile, on this thread too) until a
 * value that handlers change under `lock` is reached: *value == target,
 * or *flag true. */
void coherence_wait_for(pthread_mutex_t *lock, const int *value, int target);
void coherence_wait_flag(pthread_mutex_t *lock, const bool *flag);

/* ---- the bounded page cache (cache.c; seed 002) ------------------------ */

/* What coherence_ops.evict did. */
enum cache_evict {
    CACHE_NOT_NOW = 0,     /* the page is busy (a fetch in flight): pick another */
    CACHE_CLEAN = 1,       /* dropped: the home (or the swap file) has it all */
    CACHE_WRITTEN_BACK = 2 /* dropped after sending this node's writes home */
};

/* Limits this node's copies of other nodes' pages to `limit` bytes (0: no
 * limit), choosing victims by `policy` (enum replace_policy). swap_dir:
 * where lrc keeps evicted pages (DSM_HOME_DIR; NULL: $TMPDIR or /tmp).
 * After coherence_start. */
void cache_start(size_t limit, int policy, const char *swap_dir);
/* The limit in pages; 0 when there is none. */
size_t cache_frames(void);
/* On a fault, before the protocol (fault lock held): a page whose access
 * the clock took away gets it back. Returns true when that is all the
 * access needs. */
bool cache_touch(size_t page, bool write);
/* After the protocol handled a fault on the page (fault lock held): the
 * page counts as referenced, or comes in; copies beyond the limit go. */
void cache_faulted(size_t page);
/* A copy made valid outside a fault (read ahead, refreshed at an
 * acquire): it comes in; the limit is restored at the next fault. */
void cache_admit(size_t page);
/* Makes room for `pages` copies about to come in (a fetch, a read-ahead
 * run), evicting first (fault lock held, no fetch in flight). Returns how
 * many may come in within the limit (`pages` when there is none). */
size_t cache_reserve(size_t pages);
/* lrc, which has no homes: an evicted page's content goes to a swap file
 * (its own writes having been made diffs), and comes back before its
 * pending diffs are applied. swap_in returns false if it was not out. */
void cache_swap_out(size_t page);
bool cache_swap_in(size_t page);

/* ---- intervals and vector timestamps (interval.c) ---------------------- */

/* A growable byte buffer for encoding. */
struct buf {
    unsigned char *p;
    size_t         len, cap;
};
void buf_put(struct buf *b, const void *data, size_t len);
void buf_free(struct buf *b);

/* Appends a page number to a growable list (*v, *n entries, room for *cap). */
void page_list_add(uint32_t **v, size_t *n, size_t *cap, size_t page);
/* Sorts a list of pages into address order, so that mem_protect merges
 * neighbours into one mprotect: on this machine each call that removes
 * rights pays a TLB shootdown of its own. */
void page_list_sort(uint32_t *v, size_t n);

void interval_init(void);
/* Records this node's new interval with its notices. */
void interval_create(const struct notice *n, uint32_t count);
/* This node's vector timestamp (nodes entries); copy it out. */
void interval_vt(uint32_t *out);
/* Of it, the intervals whose notices are applied here too. What this node
 * tells others it has seen (a flush's ask, a page request's vector time,
 * COH_VT): with threads on the node, another thread may be applying an
 * interval already logged, whose pages are not yet invalidated. */
void interval_vt_applied(uint32_t *out);
/* The id the next interval this node creates will have: the one whose
 * notices announce the writes it sends home now. */
uint32_t interval_next(void);
/* Node `node` said it has seen vt (a flush's ask): what it has is known
 * to be at least that from now on (`known`, as COH_VT reports it). */
void interval_heard(int node, const uint32_t *vt);
/* Whether `node` may lack an interval that ids[] names (one id per
 * creator, 0 for none; its own entry aside): it has not said it has seen
 * it, and it was not dropped as seen by all. Conservative: never false
 * where the node does lack one. */
bool interval_may_lack(int node, const uint32_t *ids);
/* Appends every interval with id > their_vt[node] for some node (all, when
 * their_vt is NULL; only `only_node`'s when >= 0), for node `to` (-1: many;
 * named by DSM_CHECK's violations). An interval created unacked is left
 * out until interval_acked. */
void interval_encode(struct buf *b, const uint32_t *their_vt, int only_node, int to);
/* This node's intervals after their_vt[rank], the unacked one included:
 * the barrier's arrival. */
void interval_encode_arrival(struct buf *b, const uint32_t *their_vt);
/* Records this node's new interval, some of whose versions are
 * NOTICE_PENDING: only the barrier's arrival carries it until
 * interval_acked gives the versions (the same notices, in the same order,
 * none pending), all under the fault lock. */
void interval_create_unacked(const struct notice *n, uint32_t count);
void interval_acked(const struct notice *n, uint32_t count);
/* fn() runs each time one of this node's intervals may be given out
 * (interval_create, interval_acked), on the thread that made it, after
 * it is in the log: an encoding begun after fn() was called includes it.
 * Set once (sync/flush.c: the nodes whose flushes rely on hearing of it). */
void interval_on_own(void (*fn)(void));
/* In a checked interval encoding (coh_notices_check), fills in each
 * NOTICE_PENDING version of node `node`'s intervals with version_of's.
 * Returns how many; -(page + 1) for a pending one it cannot fill (another
 * node's, or one version_of does not know). */
long interval_fill_pending(void *data, size_t len, int node,
                           bool (*version_of)(void *ctx, uint32_t page, uint32_t *version), void *ctx);
/* Applies the encoded intervals this node has not seen (storing them to
 * pass on) through coh->apply_notices. Ends the job on a malformed one. */
void interval_apply(int from, const void *data, size_t len);
/* Every node has seen every interval: drops the logs. */
void interval_gc(void);
/* Without a barrier (lock-only programs), interval.c collects by itself:
 * once its logs hold more than a threshold, a node sends its vector
 * timestamp to every other and asks for theirs (COH_VT); an interval that
 * every node's timestamp has passed is dropped. */
#endif
