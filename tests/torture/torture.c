/*
 * torture.c — generated race-free programs checked against a sequential
 * model (issue 36).
 *
 * One job runs many generated programs in sequence. Every node derives the
 * same program from (seed, program index) with splitmix64, so the plan —
 * objects, phases, who writes what, which locks nest — needs no
 * communication; only the pointers dsm_malloc returns travel (dsm_bcast).
 * A program allocates 2 to 12 objects (from a few words, several to a page,
 * to a few pages; every home policy; each by a random node), runs 2 to 6
 * phases separated by barriers, checks every word of every object on every
 * node, and frees them all (each by a random node, often not its owner).
 * Phases:
 *  - locks: each node runs 0 to 10 (sometimes 40) critical sections, each
 *    under one lock or two or three nested in ascending id order, doing
 *    non-commutative read-modify-writes (x = x*K + c) on words the locks
 *    guard, spread over the objects. Each critical section appends an entry
 *    to its lock's log in shared memory (who, a hash of the guarded words it
 *    read, its vector time), so the actual acquisition order is known; after
 *    the phase's barrier the model replays every log sequentially and checks
 *    each entry's hash and the final words. Before each critical section a
 *    node writes a word of its own once ("published"); under a lock it
 *    merges the vector time of the lock's last entry and reads every
 *    published word that vector time says happened before — the causality a
 *    lock chain through third nodes promises (what lrc's intervals carry);
 *  - barrier writes: rounds of read-modify-writes, each word by one node
 *    (runs of words with random writers, so pages have many writers), every
 *    read checked against the model, and unwritten words read meanwhile;
 *  - condition ring: a token passes along a random ring order through one
 *    lock and condition variables (one per node with signal, or one shared
 *    with broadcast); each holder's read-modify-writes, under the lock or
 *    outside it, are checked against the model as it goes. Half the time
 *    a chain: descending node order, each writer updating words of its own
 *    under its own lock before its turn, then a node A that owns (without
 *    holding) locks another node D takes meanwhile;
 *  - broadcasts: a root writes words then dsm_bcast's a private buffer of
 *    1 B to 64 KiB; every receiver checks the buffer and the root's words
 *    with no barrier between (a bcast carries its root's writes);
 *  - free and malloc: some objects freed (by any node), new ones allocated
 *    after the barrier, their pointers broadcast, and every word read as
 *    zero on every node (a block is zeroed, whoever used it before).
 * Race-free by construction: every conflicting pair of accesses is ordered
 * by a lock, a barrier, a condition hand-off or a bcast.
 *
 * A mismatch ends the job with the seed, program, phase, node, address,
 * expected and found values, the settings in force and a command that
 * replays it.
 *
 * Usage: torture [--fork] [--seed S] [--count N] [--first I]
 *   runs programs I .. I+N-1 of seed S (defaults: 1, 20, 0). --fork runs
 *   them fork style, one participant per thread of every node under
 *   dsmrun --threads T (SMP nodes); without it, one per node (SPMD).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsm.h"

#define MAX_NODES   64
#define MAX_OBJ     16   /* live objects at once */
#define MAX_LOCKS   12
#define MAX_GUARD   12   /* words a lock guards */
#define MAX_OPS     40   /* critical sections per node and phase */
#define MAX_RING    12   /* words a condition ring updates */
#define MAX_BCASTS  3
#define MAX_BWORDS  12   /* words a bcast root writes */
#define BCAST_MAX   65536
#define LOCK_POOL   256  /* lock and condition ids come from a bounded pool */
#define LOCK_BASE   4096
#define COND_BASE   4096

/* ---- Deterministic randomness ------------------------------------------ */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t mix(uint64_t a, uint64_t b)
{
    uint64_t s = a ^ (b * 0xd1b54a32d192ed03ull);
    return splitmix(&s);
}

static uint64_t below(uint64_t *s, uint64_t n) { return n ? splitmix(s) % n : 0; }

/* An odd multiplier other than 1: x*K + c then depends on the order of
 * updates, so a lost, repeated or reordered update changes the result. */
static uint64_t multiplier(uint64_t h) { return (h | 1) == 1 ? 3 : (h | 1); }

static uint64_t fold(uint64_t acc, uint64_t v) { return (acc ^ v) * 0x100000001b3ull + 0x9e37; }

/* ---- The program's state: objects and the model ------------------------- */

struct object {
    uint64_t *p;     /* shared */
    uint64_t *want;  /* the model's value of each word (private, the same on every node) */
    size_t words;
    int owner;       /* the allocating node */
};

/* The arguments, as the master parsed them (fork style copies them to
 * the other nodes at the create). */
static struct {
    uint64_t seed;
    long first, count;
    const char *argv0;
    bool fork;
} args = {.seed = 1, .count = 20};

static __thread struct {
    /* the job */
    int me, n;
    size_t page_words;
    uint64_t seed;
    long first, count;
    const char *argv0;
    /* the program */
    long index;
    int phase;
    const char *phase_name;
    uint64_t prog_seed;
    int nobj;
    struct object obj[MAX_OBJ];
    size_t total;        /* words over every object */
    uint8_t *taken;      /* words a phase has assigned (one flag a word) */
    size_t taken_cap;
    void *pending[MAX_OBJ + 1]; /* blocks freed after the next barrier */
    int pending_freer[MAX_OBJ + 1];
    int npending;
    /* totals, for the summary */
    long sections, handoffs, bcasts, rmw_words, objects, phases;
} T; /* each participant's own: a thread's with --fork under DSM_THREADS */

static const char *const matrix_vars[] = {
    "DSM_PROTOCOL", "DSM_THREADS", "DSM_NET_LOSS", "DSM_NET_DUP", "DSM_NET_REORDER", "DSM_NET_SEED",
    "DSM_MIGRATE_PAGES", "DSM_MIGRATE_HOMES", "DSM_MIGRATE_PERIOD", "DSM_LOCAL_MEM",
    "DSM_REPLACEMENT", "DSM_PAGE_SIZE", "DSM_HOME", "DSM_BARRIER_FANOUT",
    "DSM_LRC_GC_NOTICES", "DSM_CHECK",
};

/* Ends the job: the failure, the settings, and the command that replays it. */
__attribute__((noreturn, format(printf, 1, 2)))
static void fail(const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    char env[1024] = "";
    size_t len = 0;
    for (size_t i = 0; i < sizeof matrix_vars / sizeof *matrix_vars; i++) {
        const char *v = getenv(matrix_vars[i]);
        if (v && *v && strcmp(matrix_vars[i], "DSM_PROTOCOL") != 0 && len < sizeof env)
            len += (size_t)snprintf(env + len, sizeof env - len, "%s=%s ", matrix_vars[i], v);
    }
    const char *protocol = getenv("DSM_PROTOCOL") ? getenv("DSM_PROTOCOL") : "hlrc";
    /* The launcher that started this node, when it is dsmrun on this host. */
    char dsmrun[512], parent[64];
    snprintf(parent, sizeof parent, "/proc/%d/exe", (int)getppid());
    ssize_t got = readlink(parent, dsmrun, sizeof dsmrun - 1);
    dsmrun[got > 0 ? got : 0] = 0;
    size_t dl = strlen(dsmrun);
    if (dl < 6 || strcmp(dsmrun + dl - 6, "dsmrun") != 0)
        strcpy(dsmrun, "dsmrun");
    fprintf(stderr,
            "torture: FAILED: seed %" PRIu64 " program %ld phase %d (%s), node %d: %s\n"
            "torture: matrix: protocol %s, %d nodes, %s\n"
            "torture: replay: %s%s -n %d --protocol %s %s%s --seed %" PRIu64
            " --first %ld --count %ld   (this program alone: --first %ld --count 1)\n",
            T.seed, T.index, T.phase, T.phase_name, T.me, what, protocol, T.n,
            len ? env : "no other settings", env, dsmrun, dsm_nodes(), protocol, T.argv0,
            args.fork ? " --fork" : "", T.seed, T.first, T.count, T.index);
    fflush(stderr);
    exit(1);
}

static uint64_t *word_at(size_t g, int *objp, size_t *idxp)
{
    for (int k = 0; k < T.nobj; k++) {
        if (g < T.obj[k].words) {
            if (objp)
                *objp = k;
            if (idxp)
                *idxp = g;
            return &T.obj[k].p[g];
        }
        g -= T.obj[k].words;
    }
    fail("word %zu beyond the program's %zu words (torture's own bug)", g, T.total);
}

static uint64_t *want_at(size_t g)
{
    int k;
    size_t i;
    word_at(g, &k, &i);
    return &T.obj[k].want[i];
}

/* Reads word g and compares it with `expected`. */
static uint64_t check_word(size_t g, uint64_t expected, const char *context)
{
    int k;
    size_t i;
    volatile uint64_t *a = word_at(g, &k, &i);
    uint64_t got = *a;
    if (got != expected)
        fail("%s: address %p (object %d of %zu words, allocated by node %d, word %zu): "
             "expected 0x%016" PRIx64 ", got 0x%016" PRIx64,
             context, (void *)a, k, T.obj[k].words, T.obj[k].owner, i, expected, got);
    return got;
}

static uint64_t check_model(size_t g, const char *context) { return check_word(g, *want_at(g), context); }

/* ---- Picking words ------------------------------------------------------- */

static void taken_reset(void)
{
    if (T.taken_cap < T.total) {
        free(T.taken);
        T.taken = malloc(T.total);
        if (!T.taken) {
            fprintf(stderr, "torture: out of memory\n");
            exit(1);
        }
        T.taken_cap = T.total;
    }
    memset(T.taken, 0, T.total);
}

/* A word no one has taken in this phase: random probes, then a scan. */
static bool take_word(uint64_t *s, size_t *out)
{
    for (int t = 0; t < 16; t++) {
        size_t g = (size_t)below(s, T.total);
        if (!T.taken[g]) {
            T.taken[g] = 1;
            *out = g;
            return true;
        }
    }
    size_t start = (size_t)below(s, T.total);
    for (size_t j = 0; j < T.total; j++) {
        size_t g = (start + j) % T.total;
        if (!T.taken[g]) {
            T.taken[g] = 1;
            *out = g;
            return true;
        }
    }
    return false;
}

/* ---- Objects -------------------------------------------------------------- */

static void free_later(void *p, int freer)
{
    T.pending[T.npending] = p;
    T.pending_freer[T.npending++] = freer;
}

/* After a barrier: every use of the blocks is over; each is freed by its
 * chosen node (another node's block goes back to its owner at the next
 * barrier). */
static void free_pending(void)
{
    for (int i = 0; i < T.npending; i++)
        if (T.pending_freer[i] == T.me)
            dsm_free(T.pending[i]);
    T.npending = 0;
}

static void drop_object(int k)
{
    free(T.obj[k].want);
    T.total -= T.obj[k].words;
    T.obj[k] = T.obj[--T.nobj];
}

/* Allocates objects planned from *s until `add` are made or the size cap is
 * reached; pointers travel from each owner by dsm_bcast (which also carries
 * the owner's zeroing of a reused block), then every node checks every new
 * word reads zero. */
static void allocate_objects(uint64_t *s, int add)
{
    size_t cap_words = T.page_words * (4 + (size_t)below(s, 9));
    int first_new = T.nobj;
    static const enum dsm_home homes[] = {DSM_HOME_DEFAULT, DSM_HOME_LOCAL, DSM_HOME_CYCLIC,
                                          DSM_HOME_BLOCK, DSM_HOME_FIRST_TOUCH};
    for (int a = 0; a < add && T.nobj < MAX_OBJ; a++) {
        size_t words;
        uint64_t r = below(s, 10);
        if (r < 5)
            words = 1 + (size_t)below(s, 16);                      /* several to a page */
        else if (r < 8)
            words = 17 + (size_t)below(s, T.page_words / 2 - 16);  /* a size class up to half a page */
        else
            words = T.page_words * (1 + (size_t)below(s, 3)) + (size_t)below(s, T.page_words);
        if (T.nobj > 0 && T.total + words > cap_words)
            break;
        struct object *o = &T.obj[T.nobj++];
        o->words = words;
        o->owner = (int)below(s, (uint64_t)T.n);
        enum dsm_home home = homes[below(s, 5)];
        o->want = calloc(words, sizeof *o->want);
        if (!o->want) {
            fprintf(stderr, "torture: out of memory\n");
            exit(1);
        }
        o->p = NULL;
        if (o->owner == T.me) {
            o->p = dsm_malloc_home(words * sizeof *o->p, home);
            if (!o->p)
                fail("dsm_malloc_home(%zu) returned NULL", words * sizeof *o->p);
        }
        T.total += words;
        T.objects++;
    }
    for (int k = first_new; k < T.nobj; k++)
        dsm_bcast(&T.obj[k].p, sizeof T.obj[k].p, T.obj[k].owner);
    for (int k = first_new; k < T.nobj; k++)
        for (size_t i = 0; i < T.obj[k].words; i++) {
            volatile uint64_t *a = &T.obj[k].p[i];
            if (*a != 0)
                fail("a new block is not zero: address %p (object %d of %zu words, allocated by "
                     "node %d, word %zu): expected 0, got 0x%016" PRIx64,
                     (void *)a, k, T.obj[k].words, T.obj[k].owner, i, (uint64_t)*a);
        }
}

/* ---- Phase: locks ----------------------------------------------------------- */

struct lock_phase {
    int nlocks;
    int id[MAX_LOCKS];
    uint64_t K[MAX_LOCKS];
    int nguard[MAX_LOCKS];
    size_t guard[MAX_LOCKS][MAX_GUARD];
    int ops[MAX_NODES];
    size_t published[MAX_NODES][MAX_OPS]; /* the word each op publishes */
    size_t cap[MAX_LOCKS];                /* entries each log will hold */
    size_t log_at[MAX_LOCKS];             /* each log's first word in the log block */
    size_t readonly[16];                  /* words no one writes in this phase */
    int nreadonly;
    uint64_t seed;
};

/* Critical section `o` of `node`: its locks (indices, ascending), what it
 * adds, and which guarded words of each lock it updates. */
struct section {
    int nset;
    int set[3];
    uint64_t c;
    uint32_t mask[MAX_LOCKS];
};

static struct section section_of(const struct lock_phase *P, int node, int o)
{
    struct section x = {0};
    uint64_t h = mix(P->seed, (uint64_t)node << 16 | (uint64_t)o);
    int a = (int)(h % (uint64_t)P->nlocks);
    x.set[x.nset++] = a;
    for (int b = a + 1; b < P->nlocks && x.nset < 3; b++)
        if (mix(h, (uint64_t)b) % 4 == 0)
            x.set[x.nset++] = b; /* nested: a higher id, so never a deadlock */
    x.c = mix(h, 99);
    for (int l = 0; l < P->nlocks; l++) {
        uint32_t all = (1u << P->nguard[l]) - 1;
        x.mask[l] = (uint32_t)mix(h, 200 + (uint64_t)l) & all;
        if (!x.mask[l])
            x.mask[l] = all & 1;
    }
    return x;
}

static bool section_holds(const struct section *x, int l)
{
    for (int i = 0; i < x->nset; i++)
        if (x->set[i] == l)
            return true;
    return false;
}

static uint64_t published_value(const struct lock_phase *P, int node, int o)
{
    return mix(P->seed ^ 0x5eed, (uint64_t)node << 16 | (uint64_t)o) | 1; /* never 0 */
}

/* What a section does to lock l's guarded words, given their values. */
static void section_apply(const struct lock_phase *P, const struct section *x, int l, uint64_t *v)
{
    for (int j = 0; j < P->nguard[l]; j++)
        if (x->mask[l] >> j & 1)
            v[j] = v[j] * P->K[l] + x->c + (uint64_t)j;
}

static uint64_t guard_hash(const struct lock_phase *P, int l, const uint64_t *v)
{
    uint64_t h = 0;
    for (int j = 0; j < P->nguard[l]; j++)
        h = fold(h, v[j]);
    return h;
}

static void phase_locks(uint64_t *s)
{
    static __thread struct lock_phase P; /* a participant's own (a thread's with --fork) */
    memset(&P, 0, sizeof P);
    P.seed = splitmix(s);
    taken_reset();
    P.nlocks = 1 + (int)below(s, MAX_LOCKS);
    /* distinct ids from the pool, ascending: the global order of nesting */
    for (int l = 0; l < P.nlocks; l++) {
        int id;
        bool dup;
        do {
            id = LOCK_BASE + (int)below(s, LOCK_POOL);
            dup = false;
            for (int m = 0; m < l; m++)
                dup |= P.id[m] == id;
        } while (dup);
        int at = l;
        while (at > 0 && P.id[at - 1] > id) {
            P.id[at] = P.id[at - 1];
            at--;
        }
        P.id[at] = id;
    }
    size_t budget = T.total / 2; /* words this phase may claim */
    for (int l = 0; l < P.nlocks; l++) {
        P.K[l] = multiplier(splitmix(s));
        int want = 1 + (int)below(s, MAX_GUARD);
        for (int j = 0; j < want && budget > 0; j++, budget--)
            if (take_word(s, &P.guard[l][P.nguard[l]]))
                P.nguard[l]++;
    }
    /* Mostly a few sections per node; sometimes a storm of short ones, where
     * nodes keep asking for locks that others own but no longer hold. */
    int most_ops = below(s, 4) ? MAX_OPS / 4 : MAX_OPS;
    for (int i = 0; i < T.n; i++) {
        P.ops[i] = (int)below(s, (uint64_t)most_ops + 1);
        for (int o = 0; o < P.ops[i]; o++) {
            if (budget == 0 || !take_word(s, &P.published[i][o])) {
                P.ops[i] = o;
                break;
            }
            budget--;
        }
    }
    for (int r = 0; r < 16 && budget > 0; r++, budget--)
        if (take_word(s, &P.readonly[P.nreadonly]))
            P.nreadonly++;
    /* the logs: [count, then entries of (who, hash, vector time)] per lock,
     * at random gaps in one block, so several locks' logs share pages */
    size_t entry_words = 2 + (size_t)T.n, log_words = 0;
    for (int i = 0; i < T.n; i++)
        for (int o = 0; o < P.ops[i]; o++) {
            struct section x = section_of(&P, i, o);
            for (int k = 0; k < x.nset; k++)
                P.cap[x.set[k]]++;
        }
    for (int l = 0; l < P.nlocks; l++) {
        log_words += (size_t)below(s, 24);
        P.log_at[l] = log_words;
        log_words += 1 + P.cap[l] * entry_words;
    }
    int log_owner = (int)below(s, (uint64_t)T.n);
    int log_freer = (int)below(s, (uint64_t)T.n);
    uint64_t *log = NULL;
    if (log_owner == T.me)
        log = dsm_malloc(log_words * sizeof *log);
    dsm_bcast(&log, sizeof log, log_owner); /* with it the owner's zeroing */

    uint64_t vc[MAX_NODES] = {0};
    uint64_t checked[MAX_NODES] = {0};
    uint64_t v[MAX_GUARD];
    char context[160];
    for (int o = 0; o < P.ops[T.me]; o++) {
        struct section x = section_of(&P, T.me, o);
        *word_at(P.published[T.me][o], NULL, NULL) = published_value(&P, T.me, o);
        if (P.nreadonly) {
            size_t g = P.readonly[mix(x.c, 5) % (uint64_t)P.nreadonly];
            check_model(g, "a word no one writes in this phase, read between critical sections");
        }
        for (int k = 0; k < x.nset; k++)
            dsm_lock(P.id[x.set[k]]);
        uint64_t hash[3];
        for (int k = 0; k < x.nset; k++) {
            int l = x.set[k];
            volatile uint64_t *lg = log + P.log_at[l];
            uint64_t cnt = lg[0];
            if (cnt >= P.cap[l])
                fail("lock %d's log holds %" PRIu64 " entries before this node's section %d; "
                     "%zu are planned in all (a lost or repeated log update)",
                     P.id[l], cnt, o, P.cap[l]);
            if (cnt > 0) {
                volatile uint64_t *last = lg + 1 + (cnt - 1) * entry_words;
                for (int i = 0; i < T.n; i++)
                    if (last[2 + i] > vc[i])
                        vc[i] = last[2 + i];
            }
            for (int j = 0; j < P.nguard[l]; j++)
                v[j] = *word_at(P.guard[l][j], NULL, NULL);
            hash[k] = guard_hash(&P, l, v);
        }
        vc[T.me] = (uint64_t)o + 1;
        /* Everything the merged vector time covers happened before this
         * acquire: each node's published words up to it are visible. */
        for (int i = 0; i < T.n; i++) {
            if (vc[i] > (uint64_t)P.ops[i])
                fail("a log entry's vector time says node %d ran %" PRIu64
                     " sections; it has %d planned", i, vc[i], P.ops[i]);
            for (; checked[i] < vc[i]; checked[i]++) {
                snprintf(context, sizeof context,
                         "the word node %d published before its section %" PRIu64
                         ", read under lock %d after a chain of locks from it (causality)",
                         i, checked[i], P.id[x.set[0]]);
                check_word(P.published[i][checked[i]], published_value(&P, i, (int)checked[i]),
                           context);
            }
        }
        for (int k = 0; k < x.nset; k++) {
            int l = x.set[k];
            for (int j = 0; j < P.nguard[l]; j++)
                v[j] = *word_at(P.guard[l][j], NULL, NULL);
            section_apply(&P, &x, l, v);
            for (int j = 0; j < P.nguard[l]; j++)
                *word_at(P.guard[l][j], NULL, NULL) = v[j];
            volatile uint64_t *lg = log + P.log_at[l];
            uint64_t cnt = lg[0];
            volatile uint64_t *e = lg + 1 + cnt * entry_words;
            e[0] = ((uint64_t)T.me << 16 | (uint64_t)o) + 1;
            e[1] = hash[k];
            for (int i = 0; i < T.n; i++)
                e[2 + i] = vc[i];
            lg[0] = cnt + 1;
            T.rmw_words += __builtin_popcount(x.mask[l]);
        }
        for (int k = x.nset - 1; k >= 0; k--)
            dsm_unlock(P.id[x.set[k]]);
    }
    dsm_barrier();

    /* The model: each lock's log replayed in the order the lock was taken. */
    for (int l = 0; l < P.nlocks; l++) {
        volatile uint64_t *lg = log + P.log_at[l];
        uint64_t cnt = lg[0];
        if (cnt != P.cap[l])
            fail("lock %d's log holds %" PRIu64 " entries after the barrier; %zu sections took it",
                 P.id[l], cnt, P.cap[l]);
        for (int j = 0; j < P.nguard[l]; j++)
            v[j] = *want_at(P.guard[l][j]);
        int last_op[MAX_NODES];
        for (int i = 0; i < T.n; i++)
            last_op[i] = -1;
        for (uint64_t e = 0; e < cnt; e++) {
            volatile uint64_t *en = lg + 1 + e * entry_words;
            uint64_t who = en[0] - 1;
            int node = (int)(who >> 16), o = (int)(who & 0xffff);
            if (en[0] == 0 || node >= T.n || o >= P.ops[node] || o <= last_op[node])
                fail("lock %d's log entry %" PRIu64 " names node %d's section %d, which is not "
                     "the next of that node's under this lock (log word 0x%016" PRIx64 ")",
                     P.id[l], e, node, o, (uint64_t)en[0]);
            struct section x = section_of(&P, node, o);
            if (!section_holds(&x, l))
                fail("lock %d's log entry %" PRIu64 " names node %d's section %d, which does "
                     "not take that lock", P.id[l], e, node, o);
            last_op[node] = o;
            uint64_t expect = guard_hash(&P, l, v);
            if (en[1] != expect)
                fail("node %d's section %d, the %" PRIu64 "th to take lock %d, read its words "
                     "stale: their hash 0x%016" PRIx64 ", the model's 0x%016" PRIx64
                     " (a write under this lock was lost or applied out of order)",
                     node, o, e + 1, P.id[l], (uint64_t)en[1], expect);
            if (en[2 + node] != (uint64_t)o + 1)
                fail("lock %d's log entry %" PRIu64 ": node %d's own time %" PRIu64 ", not %d",
                     P.id[l], e, node, (uint64_t)en[2 + node], o + 1);
            section_apply(&P, &x, l, v);
        }
        for (int j = 0; j < P.nguard[l]; j++) {
            *want_at(P.guard[l][j]) = v[j];
            snprintf(context, sizeof context,
                     "word %d guarded by lock %d after the phase's barrier (the model replays the "
                     "lock's log of %" PRIu64 " sections)", j, P.id[l], cnt);
            check_model(P.guard[l][j], context);
        }
    }
    for (int i = 0; i < T.n; i++)
        for (int o = 0; o < P.ops[i]; o++) {
            *want_at(P.published[i][o]) = published_value(&P, i, o);
            check_model(P.published[i][o], "a published word after the phase's barrier");
            T.sections++;
        }
    free_later(log, log_freer);
}

/* ---- Phase: barrier writes --------------------------------------------------- */

static void phase_barrier_writes(uint64_t *s)
{
    int rounds = 1 + (int)below(s, 3);
    size_t *words = malloc(T.total * sizeof *words);
    int *writer = malloc(T.total * sizeof *writer);
    if (!words || !writer) {
        fprintf(stderr, "torture: out of memory\n");
        exit(1);
    }
    for (int r = 0; r < rounds; r++) {
        uint64_t rs = splitmix(s), K = multiplier(splitmix(s));
        taken_reset();
        size_t nw = 0;
        int runs = 1 + (int)below(s, 16);
        for (int run = 0; run < runs; run++) {
            size_t start = (size_t)below(s, T.total), len = 1 + (size_t)below(s, 96);
            int w = (int)below(s, (uint64_t)T.n);
            for (size_t g = start; g < start + len && g < T.total; g++)
                if (!T.taken[g]) {
                    T.taken[g] = 1;
                    words[nw] = g;
                    writer[nw++] = w;
                }
        }
        char context[128];
        snprintf(context, sizeof context, "round %d: a word this node updates, before its update", r);
        for (size_t i = 0; i < nw; i++)
            if (writer[i] == T.me) {
                volatile uint64_t *a = word_at(words[i], NULL, NULL);
                uint64_t x = check_model(words[i], context);
                *a = x * K + mix(rs, words[i]);
                T.rmw_words++;
            }
        for (int t = 0; t < 8; t++) {
            size_t g = (size_t)below(s, T.total);
            if (!T.taken[g])
                check_model(g, "a word no one writes in this round, read during it");
        }
        dsm_barrier();
        for (size_t i = 0; i < nw; i++) {
            uint64_t *w = want_at(words[i]);
            *w = *w * K + mix(rs, words[i]);
        }
        snprintf(context, sizeof context, "round %d: a word updated in the round, after its barrier", r);
        for (int t = 0; t < 32 && nw; t++)
            check_model(words[below(s, nw)], context);
        if (r + 1 < rounds)
            dsm_barrier(); /* the checks above read what the next round writes */
    }
    free(words);
    free(writer);
}

/* ---- Phase: condition ring ----------------------------------------------------- */

/* Reads word g, checks it against the model, and writes x*K + c. */
static void update_checked(size_t g, uint64_t K, uint64_t c, const char *context)
{
    uint64_t x = check_model(g, context);
    *word_at(g, NULL, NULL) = x * K + c;
    T.rmw_words++;
}

static void model_update(size_t g, uint64_t K, uint64_t c)
{
    uint64_t *w = want_at(g);
    *w = *w * K + c;
}

#define MAX_CHAIN_LOCKS 16
#define MAX_OWN 4

static void phase_ring(uint64_t *s)
{
    taken_reset();
    /* lock ids: the ring's, then the chain's M_j, then each writer's own */
    int id0 = (int)below(s, LOCK_POOL);
    int lock = LOCK_BASE + id0;
    bool per_node = below(s, 2);   /* one condition per node and signal, or one shared and broadcast */
    bool under_lock = below(s, 2); /* the holder's updates under the lock or between its two holds */
    int cond_base = COND_BASE + (int)below(s, LOCK_POOL);
    int perm[MAX_NODES];
    for (int i = 0; i < T.n; i++)
        perm[i] = i;
    for (int i = T.n - 1; i > 0; i--) {
        int j = (int)below(s, (uint64_t)i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    /* Half the time a chain, the pattern of issue 36's lrc defect: the ring
     * runs in descending node order with an owner A and a taker D last; A
     * first takes every lock M_j once, so it owns them without holding
     * them, and D takes them all while A takes in the ring's grants, whose
     * intervals (each writer makes some of its own under its own lock
     * before its turn) depend on each other across nodes. */
    size_t turn;
    take_word(s, &turn); /* (the ring's phase has words: T.total > 0) */
    bool chain = T.n >= 3 && below(s, 2);
    int A = -1, D = -1, nm = 0, nown = 0, sections = 0;
    size_t cw[MAX_CHAIN_LOCKS], own[MAX_NODES][MAX_OWN];
    if (chain) {
        A = (int)below(s, (uint64_t)T.n);
        D = (A + 1 + (int)below(s, (uint64_t)T.n - 1)) % T.n;
        int k = 0;
        for (int v = T.n - 1; v >= 0; v--)
            if (v != A && v != D)
                perm[k++] = v;
        perm[k++] = A;
        perm[k++] = D;
        int want_m = 4 + (int)below(s, MAX_CHAIN_LOCKS - 3);
        while (nm < want_m && take_word(s, &cw[nm]))
            nm++;
        nown = 1 + (int)below(s, MAX_OWN);
        for (int w = 0; w < T.n; w++)
            for (int i = 0; i < nown; i++)
                if (!take_word(s, &own[w][i]))
                    nown = i; /* a small program: fewer words of their own */
        sections = 1 + (int)below(s, 3);
    }
    int steps = T.n * (1 + (int)below(s, 2));
    size_t ring[MAX_RING];
    int nring = 0;
    int want = 1 + (int)below(s, MAX_RING);
    for (int j = 0; j < want && T.total > 0; j++)
        if (take_word(s, &ring[nring]))
            nring++;
    uint64_t K = multiplier(splitmix(s)), rs = splitmix(s);
    char context[128];
    if (chain) {
        if (T.me == A)
            for (int j = 0; j < nm; j++) {
                dsm_lock(LOCK_BASE + (id0 + 1 + j) % LOCK_POOL);
                update_checked(cw[j], K, mix(rs, 1000 + (uint64_t)j), "chain: a counter A updates");
                dsm_unlock(LOCK_BASE + (id0 + 1 + j) % LOCK_POOL);
            }
        for (int j = 0; j < nm; j++)
            model_update(cw[j], K, mix(rs, 1000 + (uint64_t)j));
        dsm_barrier(); /* A owns the M_j now; the ring starts from here */
    }
    uint64_t base = *want_at(turn);
    volatile uint64_t *tw = word_at(turn, NULL, NULL);
    for (int st = 0; st < steps; st++) {
        uint32_t mask = (uint32_t)mix(rs, (uint64_t)st) & ((1u << nring) - 1);
        int holder = perm[st % T.n];
        bool writer = chain && holder != A && holder != D;
        if (holder == T.me) {
            if (writer)
                for (int q = 0; q < sections; q++) {
                    int own_lock = LOCK_BASE + (id0 + 1 + MAX_CHAIN_LOCKS + T.me) % LOCK_POOL;
                    dsm_lock(own_lock);
                    for (int i = 0; i < nown; i++) {
                        uint64_t c = mix(rs, (uint64_t)(st * 8 + q) * 8 + (uint64_t)i + 5000);
                        update_checked(own[T.me][i], K, c,
                                       "chain: a word of the writer's own, under its own lock");
                        model_update(own[T.me][i], K, c);
                    }
                    dsm_unlock(own_lock);
                }
            if (chain && T.me == D && st < T.n)
                for (int j = 0; j < nm; j++) {
                    dsm_lock(LOCK_BASE + (id0 + 1 + j) % LOCK_POOL);
                    update_checked(cw[j], K, mix(rs, 2000 + (uint64_t)j),
                                   "chain: a counter A updated under its lock, D's update");
                    dsm_unlock(LOCK_BASE + (id0 + 1 + j) % LOCK_POOL);
                }
            int mycond = per_node ? cond_base + T.me : cond_base;
            dsm_lock(lock);
            while (*tw != base + (uint64_t)st) {
                uint64_t t = *tw;
                if (t - base > (uint64_t)st) /* (modulo 2^64, as the token counts) */
                    fail("condition ring, step %d: the token word at %p reads 0x%016" PRIx64
                         ", not one of the steps 0..%d after its start 0x%016" PRIx64,
                         st, (void *)tw, t, st, base);
                dsm_cond_wait(mycond, lock);
            }
            if (!under_lock)
                dsm_unlock(lock);
            snprintf(context, sizeof context,
                     "condition ring, step %d: a word the previous holders updated", st);
            for (int j = 0; j < nring; j++) {
                uint64_t x = check_model(ring[j], context);
                if (mask >> j & 1) {
                    *word_at(ring[j], NULL, NULL) = x * K + mix(rs, (uint64_t)st * 64 + (uint64_t)j);
                    T.rmw_words++;
                }
            }
            if (!under_lock)
                dsm_lock(lock);
            *tw = base + (uint64_t)st + 1;
            if (per_node)
                dsm_cond_signal(cond_base + perm[(st + 1) % T.n]);
            else
                dsm_cond_broadcast(cond_base);
            dsm_unlock(lock);
        }
        if (writer && holder != T.me) /* (the holder kept its model as it went) */
            for (int q = 0; q < sections; q++)
                for (int i = 0; i < nown; i++)
                    model_update(own[holder][i], K, mix(rs, (uint64_t)(st * 8 + q) * 8 + (uint64_t)i + 5000));
        if (chain && holder == D && st < T.n)
            for (int j = 0; j < nm; j++)
                model_update(cw[j], K, mix(rs, 2000 + (uint64_t)j));
        for (int j = 0; j < nring; j++)
            if (mask >> j & 1)
                model_update(ring[j], K, mix(rs, (uint64_t)st * 64 + (uint64_t)j));
    }
    *want_at(turn) = base + (uint64_t)steps;
    T.handoffs += steps;
}

/* ---- Phase: broadcasts ------------------------------------------------------------ */

static void phase_bcasts(uint64_t *s)
{
    taken_reset();
    static __thread unsigned char buf[BCAST_MAX];
    int count = 1 + (int)below(s, MAX_BCASTS);
    for (int b = 0; b < count; b++) {
        int root = (int)below(s, (uint64_t)T.n);
        size_t len = below(s, 4) == 0 ? 1 + (size_t)below(s, BCAST_MAX) : 1 + (size_t)below(s, 256);
        uint64_t bs = splitmix(s), K = multiplier(splitmix(s));
        size_t words[MAX_BWORDS];
        int nw = 0, want = (int)below(s, MAX_BWORDS + 1);
        for (int j = 0; j < want; j++)
            if (take_word(s, &words[nw])) /* disjoint from earlier bcasts': they are read meanwhile */
                nw++;
        if (root == T.me) {
            for (int j = 0; j < nw; j++) {
                uint64_t x = check_model(words[j], "a word a bcast's root updates, before its update");
                *word_at(words[j], NULL, NULL) = x * K + mix(bs, (uint64_t)j);
                T.rmw_words++;
            }
            uint64_t fs = bs;
            for (size_t i = 0; i < len; i++)
                buf[i] = (unsigned char)splitmix(&fs);
        } else {
            memset(buf, 0, len);
        }
        dsm_bcast(buf, len, root);
        uint64_t fs = bs;
        for (size_t i = 0; i < len; i++) {
            unsigned char expect = (unsigned char)splitmix(&fs);
            if (buf[i] != expect)
                fail("bcast %d of %zu bytes from node %d: byte %zu is 0x%02x, expected 0x%02x",
                     b, len, root, i, buf[i], expect);
        }
        for (int j = 0; j < nw; j++) {
            uint64_t *w = want_at(words[j]);
            *w = *w * K + mix(bs, (uint64_t)j);
            check_model(words[j], "a word the bcast's root updated before it, read just after it");
        }
        T.bcasts++;
    }
}

/* ---- Phase: free and malloc ----------------------------------------------------- */

static void phase_realloc(uint64_t *s)
{
    int drop = (int)below(s, (uint64_t)T.nobj + 1);
    for (int d = 0; d < drop && T.nobj > 0; d++) {
        int k = (int)below(s, (uint64_t)T.nobj);
        free_later(T.obj[k].p, (int)below(s, (uint64_t)T.n));
        drop_object(k);
    }
    dsm_barrier();
    free_pending();
    dsm_barrier(); /* a block another node frees goes back to its owner here */
    allocate_objects(s, 1 + (int)below(s, 4));
}

/* ---- One program ---------------------------------------------------------------- */

static void run_program(long index)
{
    T.index = index;
    T.phase = 0;
    T.phase_name = "allocation";
    T.prog_seed = mix(T.seed, (uint64_t)index);
    uint64_t s = T.prog_seed;
    allocate_objects(&s, 2 + (int)below(&s, 11));
    dsm_barrier();
    int phases = 2 + (int)below(&s, 5);
    static const char *const names[] = {"locks", "barrier writes", "condition ring", "broadcasts",
                                        "free and malloc"};
    for (int p = 1; p <= phases; p++) {
        int kind = (int)below(&s, 10);
        kind = kind < 4 ? 0 : kind < 6 ? 1 : kind < 8 ? 2 : kind < 9 ? 3 : 4;
        T.phase = p;
        T.phase_name = names[kind];
        if (T.total == 0)
            kind = 4;
        switch (kind) {
        case 0: phase_locks(&s); break;
        case 1: phase_barrier_writes(&s); break;
        case 2: phase_ring(&s); break;
        case 3: phase_bcasts(&s); break;
        default: phase_realloc(&s); break;
        }
        dsm_barrier();
        free_pending();
        T.phases++;
    }
    T.phase = phases + 1;
    T.phase_name = "the final check of every word";
    for (int k = 0; k < T.nobj; k++)
        for (size_t i = 0; i < T.obj[k].words; i++) {
            volatile uint64_t *a = &T.obj[k].p[i];
            if (*a != T.obj[k].want[i])
                fail("address %p (object %d of %zu words, allocated by node %d, word %zu): "
                     "expected 0x%016" PRIx64 ", got 0x%016" PRIx64,
                     (void *)a, k, T.obj[k].words, T.obj[k].owner, i, T.obj[k].want[i],
                     (uint64_t)*a);
        }
    dsm_barrier();
    while (T.nobj > 0) {
        free_later(T.obj[0].p, (int)below(&s, (uint64_t)T.n));
        drop_object(0);
    }
    free_pending();
}

static bool parse_number(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !*s || *s == '-')
        return false;
    unsigned long long v = strtoull(s, &end, 0);
    if (*end)
        return false;
    *out = v;
    return true;
}

/* One participant's run: every node's program, or with --fork every
 * thread's (dsmrun --threads: the participants are the job's threads). */
static void run_all(void *unused)
{
    (void)unused;
    T.me = dsm_thread_id();
    T.n = dsm_thread_count();
    T.argv0 = args.argv0;
    T.seed = args.seed;
    T.first = args.first;
    T.count = args.count;
    if (T.n > MAX_NODES) {
        if (T.me == 0)
            fprintf(stderr, "torture: %d participants; it runs on at most %d\n", T.n, MAX_NODES);
        exit(2);
    }
    T.page_words = dsm_page_size() / sizeof(uint64_t);
    for (long i = T.first; i < T.first + T.count; i++)
        run_program(i);
    dsm_barrier();
    if (T.me == 0) {
        const char *protocol = getenv("DSM_PROTOCOL") ? getenv("DSM_PROTOCOL") : "hlrc";
        char threads[32] = "";
        if (dsm_node_threads() > 1)
            snprintf(threads, sizeof threads, " (%d threads each)", dsm_node_threads());
        printf("torture: %ld programs ok (seed %" PRIu64 ", programs %ld..%ld, %d nodes%s, %s): "
               "%ld phases, %ld objects, %ld critical sections, %ld ring hand-offs, %ld bcasts; "
               "node 0 updated %ld words\n",
               T.count, T.seed, T.first, T.first + T.count - 1, dsm_nodes(), threads, protocol,
               T.phases, T.objects, T.sections, T.handoffs, T.bcasts, T.rmw_words);
    }
    free(T.taken);
    T.taken = NULL;
}

int main(int argc, char **argv)
{
    /* --fork: fork style, so that every thread of every node takes part
     * under dsmrun --threads T (an SPMD program runs one thread a node). */
    for (int i = 1; i < argc; i++)
        args.fork |= !strcmp(argv[i], "--fork");
    if (args.fork)
        dsm_startup_fork(&argc, &argv);
    else
        dsm_startup(&argc, &argv);
    args.argv0 = argv[0];
    for (int i = 1; i < argc; i++) {
        uint64_t v;
        if (!strcmp(argv[i], "--fork"))
            continue;
        if (i + 1 < argc && parse_number(argv[i + 1], &v) &&
            (!strcmp(argv[i], "--seed") || !strcmp(argv[i], "--count") || !strcmp(argv[i], "--first"))) {
            if (!strcmp(argv[i], "--seed"))
                args.seed = v;
            else if (!strcmp(argv[i], "--count"))
                args.count = (long)v;
            else
                args.first = (long)v;
            i++;
            continue;
        }
        if (dsm_rank() == 0)
            fprintf(stderr, "torture: bad argument '%s' (usage: torture [--fork] [--seed S] "
                            "[--count N] [--first I], numbers decimal or 0x hex)\n", argv[i]);
        exit(2);
    }
    if (args.fork) {
        dsm_create(run_all, NULL);
        run_all(NULL);
        dsm_wait_for_end();
    } else
        run_all(NULL);
    dsm_finish();
    return 0;
}
