/*
 * barnes.c — SPLASH-2 Barnes: the Barnes-Hut hierarchical N-body method
 * (Barnes and Hut, Nature 324, 1986) parallelised as Singh, Holt, Hennessy
 * and Gupta did for SPLASH ("A parallel adaptive fast multipole method",
 * SC'93; "Load balancing and data locality in adaptive hierarchical N-body
 * methods", JPDC 27, 1995), written from those descriptions.
 *
 *   barnes [--size test|quick|full] [-n BODIES] [-s STEPS] [-t THETA]
 *
 * n bodies of a Plummer sphere (SPLASH's testdata: Aarseth, Henon and
 * Wielen 1974, scaled by 3 pi / 16) under softened gravity (G = 1,
 * eps = 0.05), leapfrog time steps of 0.025 (SPLASH's input deck: dtime
 * 0.025, tstop 0.075, tol 1.0, 16384 bodies). Every force computation is
 * one phase of four, each ended by a barrier:
 *
 *   tree    the octree of the bodies, built in parallel: every process
 *           inserts its own bodies from the root. A cell's child slots
 *           and its leaves change only under that cell's lock (SPLASH's
 *           CellLock, by cell number; cell_lock): an empty slot gets a new
 *           leaf; a leaf with room gets the body; a full leaf (LEAF_MAX
 *           bodies, SPLASH's MAX_BODIES_PER_LEAF) is replaced by a cell
 *           into which its bodies and the new one are placed privately
 *           before the cell is published. The way down is read without
 *           locks, as SPLASH does, and trusted only through whole cells of
 *           this phase (node_is_whole says why a copy on the DSM may not
 *           be; insert what the lock does and does not bring); empty slots
 *           and leaves are read again under the lock. Each process
 *           takes its cells and leaves from its own pool (SPLASH's
 *           per-process cell and leaf arrays), homed on it. The root's box
 *           is the bodies' bounding cube (SPLASH's setbound), from
 *           per-process boxes; the first process to lock the root in a
 *           phase resets it.
 *   cofm    centres of mass and costs, bottom up: every process does the
 *           leaves and cells it made, the cells a level at a time from the
 *           deepest, with a barrier after each level (SPLASH spins on
 *           each child's done flag instead, which a release-consistent
 *           DSM would not show it).
 *   force   cost zones: every node's cost is the number of interactions its
 *           bodies needed in the previous force phase; the bodies in tree
 *           order (children in octant order: the Morton order of their
 *           boxes — SPLASH uses a Peano-Hilbert order) are cut into P zones
 *           of equal cost, and each process takes the bodies of its zone,
 *           walking only the subtrees that meet it. For each, the tree walk
 *           from the root: a node of side l at distance d from the body
 *           (to its centre of mass) is taken whole when l < theta d, else
 *           opened (SPLASH's subdivp); monopoles only.
 *   update  the owner of each body kicks its velocity by a dt/2, and, but
 *           after the last phase, kicks it again and drifts its position
 *           by dt (kick-drift-kick leapfrog, SPLASH's stepsystem), and
 *           records its bodies' bounding box for the next root.
 * A run of S steps is S + 1 force phases (SPLASH's deck: 3 steps of
 * 0.025, 4 force computations), all timed.
 *
 * The result does not depend on the number of processes, bit for bit: a
 * tree has the same shape whatever the order of insertion (a node is
 * split exactly when it holds more than LEAF_MAX bodies); a leaf's bodies
 * are sorted by number before use; a cell sums its children in octant
 * order; a body's force walk visits the nodes in one order; costs are
 * whole numbers. Only which process does what changes.
 *
 * Self-check, after the timed section (check()):
 *   - process 0 runs the whole simulation again alone in private memory
 *     with the same functions, and positions, velocities and
 *     accelerations must be equal bit for bit (so every node count and
 *     every build gives the same answer, which the RESULT checksum shows);
 *   - accelerations of a sample of bodies against a direct O(n^2) sum;
 *   - total momentum conserved within what the method's force error allows.
 */
#include "par.h"
#include "../kernels/rng.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SPLASH's input deck. */
#define DTIME  0.025
#define EPS    0.05 /* softening length */
#define THETA  1.0  /* SPLASH's tol */
#define MFRAC  0.999 /* Plummer radii are cut at this mass fraction */

#define LEAF_MAX   10   /* SPLASH-2's MAX_BODIES_PER_LEAF */
#define CELL_LOCKS 2048 /* SPLASH's MAXLOCK */
#define MAX_DEPTH  64
#define IMPORT_TRIES 1000 /* insert: a DSM that keeps its promises needs one or two */
#define ROOT       0

/* Pools, the body arrays' blocks and the per-process slots are padded to
 * 64 KiB, the largest coherence unit (DSM_PAGE_SIZE) allows. */
#define GRAIN ((size_t)64 * 1024)

enum kind { DEAD, CELL, LEAF };

/* A cell or a leaf: 128 bytes, so a node never straddles a page. */
struct node {
    double  cm[3];   /* centre of mass (cofm phase) */
    double  mass;
    double  mid[3];  /* centre of the node's box */
    double  half;    /* half its side */
    int64_t cost;    /* interactions its bodies needed last time */
    int16_t kind;    /* enum kind */
    int16_t n;       /* leaf: bodies */
    int32_t phase;   /* the force phase that made it (node_is_whole) */
    int32_t origin;  /* the cell under whose lock it was made (insert) */
    uint32_t seal;   /* seal_of() once whole (node_is_whole) */
    int32_t item[LEAF_MAX]; /* cell: child nodes by octant, -1 = none; leaf: bodies */
};
_Static_assert(sizeof(struct node) == 128, "a node is 128 bytes");

/* One per process, GRAIN apart. */
struct slot {
    double lo[3], hi[3]; /* the box of the bodies it moved last */
    double impulse;      /* sum of dt/2 m |a| over its kicks (the momentum bound) */
    int    deepest;      /* the depth of its deepest cell (cofm) */
};

struct world {
    int      n, P, steps;
    double   theta2, dt;
    bool     par;        /* shared by P processes (locks, barriers); else one, private */
    int      pool_cap;   /* nodes per process */
    struct node *nodes;  /* P pools; pool q holds nodes q * pool_cap ..; node 0 is the root */
    double (*pos)[3], (*vel)[3], (*acc)[3];
    double  *mass;
    int64_t *cost;
    char    *slots;
};

/* What one process keeps to itself. */
struct local {
    int  me;
    int  used;     /* nodes taken from its pool in this phase */
    int *mine;     /* its bodies (its cost zone) */
    int  nmine;
    int *stack;    /* the force walk's */
    int64_t *newcost; /* its bodies' interactions, published in the update */
    double impulse;
};

static struct node *node_at(const struct world *w, int id) { return &w->nodes[id]; }
static struct slot *slot_of(const struct world *w, int q)
{
    return (struct slot *)(w->slots + (size_t)q * GRAIN);
}

/* The lock of node id. SPLASH hashes a cell's number onto MAXLOCK locks
 * (CellLock[seqnum % MAXLOCK]), so cells of different processes share
 * locks; here each process's nodes hash onto a share of the locks of
 * their own, whose numbers are that process's number modulo P — on the
 * DSM the lock's manager (lock number mod the node count). A lock passes
 * between nodes only when cells of the two really are shared (on 2 nodes
 * a lock shared by cells of both moved 2.1k times a node a phase, against
 * 0.6k for their cells alone), and the first take of a lock asks its own
 * node. */
static int cell_lock(const struct world *w, int id)
{
    int q = id / w->pool_cap, share = CELL_LOCKS / w->P;
    return w->P * (1 + id % w->pool_cap % share) + q;
}
static void lock(const struct world *w, int id)
{
    if (w->par)
        par_lock(cell_lock(w, id));
}
static void unlock(const struct world *w, int id)
{
    if (w->par)
        par_unlock(cell_lock(w, id));
}
static void barrier(const struct world *w)
{
    if (w->par)
        par_barrier();
}

/* ---- set-up -------------------------------------------------------------- */

static size_t round_up(size_t x, size_t g) { return (x + g - 1) / g * g; }

static void setup(struct world *w, int n, int steps, double theta, int P, bool par,
                  void *(*alloc)(size_t))
{
    *w = (struct world){.n = n, .P = P, .steps = steps, .theta2 = theta * theta, .dt = DTIME,
                        .par = par};
    /* A process makes at most a leaf per body it inserts, and a cell per
     * split, itself a leaf's end: 2n nodes bounds any one phase. */
    w->pool_cap = (int)round_up((size_t)2 * n + 64, GRAIN / sizeof(struct node));
    w->nodes = alloc((size_t)P * w->pool_cap * sizeof(struct node));
    size_t vec = round_up((size_t)n * 3 * sizeof(double), GRAIN * P);
    w->pos = alloc(vec);
    w->vel = alloc(vec);
    w->acc = alloc(vec);
    w->mass = alloc(round_up((size_t)n * sizeof(double), GRAIN * P));
    w->cost = alloc(round_up((size_t)n * sizeof(int64_t), GRAIN * P));
    w->slots = alloc((size_t)P * GRAIN);
}

static void free_world(struct world *w)
{
    free(w->nodes);
    free(w->pos);
    free(w->vel);
    free(w->acc);
    free(w->mass);
    free(w->cost);
    free(w->slots);
}

static void *alloc_shared(size_t size) { return par_alloc_home(size, PAR_HOME_BLOCK); }
static void *alloc_private(size_t size)
{
    void *p = calloc(1, size);
    if (!p)
        par_die("out of memory (%zu bytes)", size);
    return p;
}

/* A point uniformly on the sphere of radius r. */
static void shell(uint64_t *s, double r, double out[3])
{
    double z = 2 * rng_uniform(s) - 1, phi = 2 * M_PI * rng_uniform(s);
    double rho = sqrt(1 - z * z);
    out[0] = r * rho * cos(phi);
    out[1] = r * rho * sin(phi);
    out[2] = r * z;
}

/* Body i of the Plummer model (SPLASH's testdata), before centring: a
 * function of i alone. */
static void plummer(int i, double x[3], double v[3])
{
    const double rsc = 3 * M_PI / 16, vsc = sqrt(1 / rsc);
    uint64_t s = 0x6261726e6573ull * 1000003u + (uint64_t)i;
    double r = 1 / sqrt(pow(MFRAC * rng_uniform(&s), -2.0 / 3.0) - 1);
    double a, b;
    do { /* von Neumann rejection for the speed, as Aarseth et al. */
        a = rng_uniform(&s);
        b = 0.1 * rng_uniform(&s);
    } while (b > a * a * pow(1 - a * a, 3.5));
    shell(&s, rsc * r, x);
    shell(&s, vsc * sqrt(2.0) * a / pow(1 + r * r, 0.25), v);
}

/* Bodies lo..hi-1, centred on the centre of mass and its velocity (summed
 * over all n in one order, so every process finds the same). Their cost
 * starts at 1, and the slot gets their box. */
static void init_bodies(struct world *w, int lo, int hi, int me)
{
    double cx[3] = {0, 0, 0}, cv[3] = {0, 0, 0}, x[3], v[3];
    for (int i = 0; i < w->n; i++) {
        plummer(i, x, v);
        for (int d = 0; d < 3; d++) {
            cx[d] += x[d];
            cv[d] += v[d];
        }
    }
    struct slot *sl = slot_of(w, me);
    for (int d = 0; d < 3; d++) {
        sl->lo[d] = INFINITY;
        sl->hi[d] = -INFINITY;
    }
    for (int i = lo; i < hi; i++) {
        plummer(i, x, v);
        for (int d = 0; d < 3; d++) {
            w->pos[i][d] = x[d] - cx[d] / w->n;
            w->vel[i][d] = v[d] - cv[d] / w->n;
            sl->lo[d] = fmin(sl->lo[d], w->pos[i][d]);
            sl->hi[d] = fmax(sl->hi[d], w->pos[i][d]);
        }
        w->mass[i] = 1.0 / w->n;
        w->cost[i] = 1;
    }
}

/* ---- tree ------------------------------------------------------------------ */

/* A node of kind `kind` in octant `oct` of cell `parent`, made under the
 * lock of cell `origin`. */
static int new_node(const struct world *w, struct local *l, int kind, int parent, int oct,
                    int origin, int phase)
{
    if (l->used == w->pool_cap)
        par_die("barnes: node pool of %d exhausted", w->pool_cap);
    int id = l->me * w->pool_cap + l->used++;
    struct node *c = node_at(w, id), *p = node_at(w, parent);
    memset(c, 0, sizeof *c);
    c->half = 0.5 * p->half;
    for (int d = 0; d < 3; d++)
        c->mid[d] = p->mid[d] + (oct >> d & 1 ? c->half : -c->half);
    if (c->half < 0x1p-40 * node_at(w, ROOT)->half)
        par_die("barnes: more than %d bodies within 2^-40 of the box: cannot separate them",
                LEAF_MAX);
    c->kind = kind;
    c->phase = phase;
    c->origin = origin;
    for (int k = 0; k < LEAF_MAX; k++)
        c->item[k] = -1;
    return id;
}

static int octant(const struct node *c, const double x[3])
{
    return (x[0] >= c->mid[0]) | (x[1] >= c->mid[1]) << 1 | (x[2] >= c->mid[2]) << 2;
}

static void place_private(const struct world *w, struct local *l, int at, int b, int origin,
                          int phase);

/* Replaces the full leaf o (slot k of cell `at`) by a new cell holding its
 * bodies, placed while nobody else can see the cell; returns the cell. */
static int split(const struct world *w, struct local *l, int at, int k, struct node *o,
                 int origin, int phase)
{
    int c = new_node(w, l, CELL, at, k, origin, phase);
    for (int i = 0; i < o->n; i++)
        place_private(w, l, c, o->item[i], origin, phase);
    __atomic_store_n(&o->kind, DEAD, __ATOMIC_RELAXED); /* others may test it (node_is_cell) */
    return c;
}

/* Places body b under cell `at`, which only this process can see yet. */
static void place_private(const struct world *w, struct local *l, int at, int b, int origin,
                          int phase)
{
    for (;;) {
        struct node *c = node_at(w, at);
        int k = octant(c, w->pos[b]), ch = c->item[k];
        if (ch < 0) {
            int leaf = new_node(w, l, LEAF, at, k, origin, phase);
            node_at(w, leaf)->item[node_at(w, leaf)->n++] = b;
            c->item[k] = leaf;
            return;
        }
        struct node *o = node_at(w, ch);
        if (o->kind == LEAF && o->n < LEAF_MAX) {
            o->item[o->n++] = b;
            return;
        }
        if (o->kind == LEAF)
            c->item[k] = split(w, l, at, k, o, origin, phase);
        at = c->item[k];
    }
}

/* The seal of node id: a hash of all that the insertion reads of it (its
 * box, kind, phase, origin, bodies and slots). A node's maker writes it
 * once the node is whole, and whoever changes it under a lock writes it
 * again; a copy whose seal matches its content is a copy of a whole state
 * of the node, not a mix. 32 bits: a mix passes for whole with
 * probability 2^-32, and mixes are rare to begin with. */
static uint32_t seal_of(const struct node *c, int id)
{
    /* a sum of the words times odd constants: no chain of dependent
     * multiplies (the way down computes one per level) */
    static const uint64_t odd[11] = {
        0x9e3779b97f4a7c15ull, 0xbf58476d1ce4e5b9ull, 0x94d049bb133111ebull,
        0xff51afd7ed558ccdull, 0xc4ceb9fe1a85ec53ull, 0x2545f4914f6cdd1dull,
        0xd6e8feb86659fd93ull, 0xa0761d6478bd642full, 0xe7037ed1a0b428dbull,
        0x8ebc6af09c88c6e3ull, 0x589965cc75374cc3ull};
    _Static_assert(LEAF_MAX == 10, "the seal packs two slots a word, 11 words");
    uint64_t word[11];
    memcpy(&word[0], c->mid, sizeof c->mid);
    memcpy(&word[3], &c->half, sizeof c->half);
    word[4] = (uint64_t)(uint16_t)__atomic_load_n(&c->kind, __ATOMIC_RELAXED) << 48 |
              (uint64_t)(uint16_t)__atomic_load_n(&c->n, __ATOMIC_RELAXED) << 32 |
              (uint32_t)__atomic_load_n(&c->phase, __ATOMIC_RELAXED);
    word[5] = (uint64_t)(uint32_t)c->origin << 32 | (uint32_t)id;
    for (int k = 0; k < LEAF_MAX; k += 2)
        word[6 + k / 2] = (uint64_t)(uint32_t)__atomic_load_n(&c->item[k], __ATOMIC_RELAXED) << 32 |
                          (uint32_t)__atomic_load_n(&c->item[k + 1], __ATOMIC_RELAXED);
    uint64_t h = 0;
    for (int i = 0; i < 11; i++)
        h += word[i] * odd[i];
    h = (h ^ h >> 31) * 0xbf58476d1ce4e5b9ull;
    return (uint32_t)(h ^ h >> 32);
}

static void seal(const struct world *w, int id)
{
    struct node *c = node_at(w, id);
    __atomic_store_n(&c->seal, seal_of(c, id), __ATOMIC_RELEASE);
}

/* Whether this node's copy of node id is a whole state of it, of this
 * phase. On the DSM a copy read without the lock that ordered its making
 * may be of any moment: older than this phase (it shows an older `phase`:
 * the node was remade since), or taken while its maker was still filling
 * it in — a home serves its page from a snapshot copied while its own
 * program writes (hlrc.c), so a copy may show this phase and a cell with
 * children missing, or a leaf with bodies missing. The seal tells a whole
 * state from such a mix. Under threads, the acquire loads pair with the
 * release stores that published the node and sealed it. */
static bool node_is_whole(const struct world *w, int id, int phase)
{
    const struct node *c = node_at(w, id);
    uint32_t sealed = __atomic_load_n(&c->seal, __ATOMIC_ACQUIRE);
    return __atomic_load_n(&c->phase, __ATOMIC_ACQUIRE) == phase && seal_of(c, id) == sealed;
}

/* Whether node id, reached by a read without its parent's lock, can be
 * trusted as a cell of this phase: a whole copy of a cell. A cell is
 * published (its parent's slot written) only after it is whole and
 * sealed, and its kind never changes in the phase. */
static bool node_is_cell(const struct world *w, int id, int phase)
{
    return __atomic_load_n(&node_at(w, id)->kind, __ATOMIC_ACQUIRE) == CELL &&
           node_is_whole(w, id, phase);
}

/* Seals the nodes this process made from pool index `first` on. */
static void seal_made(const struct world *w, const struct local *l, int first)
{
    for (int i = first; i < l->used; i++)
        seal(w, l->me * w->pool_cap + i);
}

/*
 * Inserts body b from the root, under the cells' locks (SPLASH's
 * loadtree). The way down is read without locks and trusted only through
 * whole cells of this phase (node_is_cell); at an empty slot or a leaf,
 * the cell's lock. Its acquire brings every change of its slots and of
 * its leaves (all made under it) — but not the making of the nodes the
 * cell was made with: a split makes the cell and the subtree below it
 * under the lock of the cell it replaces a leaf of (their `origin`), nor
 * what another process is changing in a child cell under that child's own
 * lock (a slot written, its seal not yet: a writer preempted between the
 * two leaves the child not whole for as long as it is off the CPU). So a
 * child that is not whole here under the lock is taken again after the
 * lock of the cell's origin, which brings its making, and the child's own
 * lock, which waits for a change under way and brings it; then again.
 */
static void insert(const struct world *w, struct local *l, int b, int phase)
{
    int at = ROOT, imports = 0; /* at: a cell whole here */
    for (;;) {
        struct node *c = node_at(w, at);
        int k = octant(c, w->pos[b]);
        int ch = __atomic_load_n(&c->item[k], __ATOMIC_ACQUIRE);
        if (ch >= 0 && node_is_cell(w, ch, phase)) {
            at = ch;
            continue;
        }
        lock(w, at);
        ch = c->item[k];
        if (ch < 0) {
            int first = l->used;
            int leaf = new_node(w, l, LEAF, at, k, at, phase);
            struct node *f = node_at(w, leaf);
            f->item[f->n++] = b;
            seal_made(w, l, first);
            __atomic_store_n(&c->item[k], leaf, __ATOMIC_RELEASE);
            seal(w, at);
            unlock(w, at);
            return;
        }
        if (!node_is_whole(w, ch, phase)) {
            int origin = c->origin;
            if (++imports > IMPORT_TRIES)
                par_die("barnes: cell %d's child %d is not whole here under the cell's lock after "
                        "%d takes of the lock of cell %d, under which it was made, and of its own: "
                        "a write made under a lock did not reach this node", at, ch, IMPORT_TRIES,
                        origin);
            unlock(w, at);
            lock(w, origin);
            unlock(w, origin);
            lock(w, ch);
            unlock(w, ch);
            continue;
        }
        struct node *o = node_at(w, ch);
        if (o->kind == LEAF && o->n < LEAF_MAX) {
            o->item[o->n++] = b;
            seal(w, ch);
            unlock(w, at);
            return;
        }
        if (o->kind == LEAF) {
            int first = l->used;
            int cell = split(w, l, at, k, o, at, phase);
            place_private(w, l, cell, b, at, phase);
            seal_made(w, l, first);
            __atomic_store_n(&c->item[k], cell, __ATOMIC_RELEASE);
            seal(w, at);
            unlock(w, at);
            return;
        }
        unlock(w, at);
        at = ch;
    }
}

/* The root of phase `phase`: made by the first process to lock it, from
 * every process's box (all computed the same: slots are read in order). */
static void root_reset(const struct world *w, int phase)
{
    lock(w, ROOT);
    struct node *r = node_at(w, ROOT);
    if (r->phase != phase || r->kind != CELL) {
        double lo[3], hi[3], side = 0;
        for (int d = 0; d < 3; d++) {
            lo[d] = INFINITY;
            hi[d] = -INFINITY;
            for (int q = 0; q < w->P; q++) {
                lo[d] = fmin(lo[d], slot_of(w, q)->lo[d]);
                hi[d] = fmax(hi[d], slot_of(w, q)->hi[d]);
            }
            side = fmax(side, hi[d] - lo[d]);
        }
        memset(r, 0, sizeof *r);
        for (int d = 0; d < 3; d++)
            r->mid[d] = 0.5 * (lo[d] + hi[d]);
        r->half = 0.5 * 1.00002 * side; /* SPLASH's margin: the extremes fall inside */
        r->kind = CELL;
        r->phase = phase;
        r->origin = ROOT;
        for (int k = 0; k < LEAF_MAX; k++)
            r->item[k] = -1;
        seal(w, ROOT);
    }
    unlock(w, ROOT);
}

/* ---- centres of mass --------------------------------------------------------- */

static void finish_leaf(const struct world *w, struct node *f)
{
    for (int i = 1; i < f->n; i++) /* bodies by number: the same sums in any run */
        for (int j = i; j > 0 && f->item[j - 1] > f->item[j]; j--) {
            int t = f->item[j];
            f->item[j] = f->item[j - 1];
            f->item[j - 1] = t;
        }
    double m = 0, s[3] = {0, 0, 0};
    int64_t cost = 0;
    for (int i = 0; i < f->n; i++) {
        int b = f->item[i];
        m += w->mass[b];
        for (int d = 0; d < 3; d++)
            s[d] += w->mass[b] * w->pos[b][d];
        cost += w->cost[b];
    }
    f->mass = m;
    for (int d = 0; d < 3; d++)
        f->cm[d] = s[d] / m;
    f->cost = cost;
}

static void finish_cell(const struct world *w, struct node *c)
{
    double m = 0, s[3] = {0, 0, 0};
    int64_t cost = 0;
    for (int k = 0; k < 8; k++) {
        if (c->item[k] < 0)
            continue;
        const struct node *ch = node_at(w, c->item[k]);
        m += ch->mass;
        for (int d = 0; d < 3; d++)
            s[d] += ch->mass * ch->cm[d];
        cost += ch->cost;
    }
    c->mass = m;
    for (int d = 0; d < 3; d++)
        c->cm[d] = s[d] / m;
    c->cost = cost;
}

/* The depth of node c below a root of half side 2^top: a child's half
 * side is exactly half its parent's. */
static int depth_of(int top, const struct node *c) { return top - ilogb(c->half); }

/* Bottom up, a level at a time: this process's leaves, then its cells from
 * the deepest level of any process's up, a barrier after each level, so a
 * cell's children, whoever made them, are finished before it. SPLASH
 * finishes each process's cells in the reverse order of their making and
 * spins on each child's done flag, which a release-consistent DSM would
 * not show it; counting finished children under the parent's lock (this
 * file's first way) passed the upper cells' locks between the nodes
 * hundreds of times a phase. Ends with a barrier. */
static void cofm(const struct world *w, struct local *l, int phase)
{
    int base = l->me * w->pool_cap, deepest = 0, top = ilogb(node_at(w, ROOT)->half);
    for (int i = 0; i < l->used; i++) {
        struct node *f = node_at(w, base + i);
        if (f->phase != phase)
            continue;
        if (f->kind == LEAF)
            finish_leaf(w, f);
        else if (f->kind == CELL && depth_of(top, f) > deepest)
            deepest = depth_of(top, f);
    }
    slot_of(w, l->me)->deepest = deepest;
    barrier(w);
    for (int q = 0; q < w->P; q++)
        deepest = slot_of(w, q)->deepest > deepest ? slot_of(w, q)->deepest : deepest;
    for (int d = deepest; d >= 0; d--) {
        for (int i = 0; i < l->used; i++) {
            struct node *c = node_at(w, base + i);
            if (c->kind == CELL && c->phase == phase && depth_of(top, c) == d)
                finish_cell(w, c);
        }
        barrier(w);
    }
}

/* ---- cost zones and forces ----------------------------------------------------- */

/* Adds to l->mine the bodies of node id whose cost interval [start, start
 * + cost) begins in [lo, hi); returns start + the node's cost. */
static int64_t zone_walk(const struct world *w, struct local *l, int id, int64_t start,
                         int64_t lo, int64_t hi)
{
    const struct node *c = node_at(w, id);
    if (start >= hi || start + c->cost <= lo)
        return start + c->cost;
    if (c->kind == LEAF) {
        for (int i = 0; i < c->n; i++) {
            int b = c->item[i];
            if (start >= lo && start < hi)
                l->mine[l->nmine++] = b;
            start += w->cost[b];
        }
        return start;
    }
    for (int k = 0; k < 8; k++)
        if (c->item[k] >= 0)
            start = zone_walk(w, l, c->item[k], start, lo, hi);
    return start;
}

static void cost_zone(const struct world *w, struct local *l)
{
    int64_t total = node_at(w, ROOT)->cost, P = w->P, me = l->me;
    l->nmine = 0;
    zone_walk(w, l, ROOT, 0, total * me / P, total * (me + 1) / P);
}

static inline void pull(double a[3], const double dx[3], double m, double eps2)
{
    double r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2] + eps2;
    double f = m / (r2 * sqrt(r2));
    for (int d = 0; d < 3; d++)
        a[d] += f * dx[d];
}

/* Body b's acceleration by the tree walk; returns its interactions. */
static int64_t gravity(const struct world *w, int *stack, int b, double a[3])
{
    const double *x = w->pos[b];
    const double eps2 = EPS * EPS;
    int64_t inter = 0;
    int sp = 0;
    a[0] = a[1] = a[2] = 0;
    stack[sp++] = ROOT;
    while (sp) {
        const struct node *c = node_at(w, stack[--sp]);
        double dx[3] = {c->cm[0] - x[0], c->cm[1] - x[1], c->cm[2] - x[2]};
        double d2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2], side = 2 * c->half;
        if (side * side < w->theta2 * d2) {
            pull(a, dx, c->mass, eps2);
            inter++;
        } else if (c->kind == LEAF) {
            for (int i = 0; i < c->n; i++) {
                int j = c->item[i];
                if (j == b)
                    continue;
                double dj[3] = {w->pos[j][0] - x[0], w->pos[j][1] - x[1], w->pos[j][2] - x[2]};
                pull(a, dj, w->mass[j], eps2);
                inter++;
            }
        } else {
            for (int k = 7; k >= 0; k--) /* octant 0 on top: visited first */
                if (c->item[k] >= 0)
                    stack[sp++] = c->item[k];
        }
    }
    return inter > 0 ? inter : 1;
}

/* ---- the steps ------------------------------------------------------------------ */

static void force_phase(const struct world *w, struct local *l, int phase)
{
    l->used = l->me == 0 ? 1 : 0; /* node 0 is the root */
    root_reset(w, phase);
    for (int i = 0; i < l->nmine; i++)
        insert(w, l, l->mine[i], phase);
    barrier(w);
    cofm(w, l, phase);
    cost_zone(w, l);
    for (int i = 0; i < l->nmine; i++) {
        int b = l->mine[i];
        l->newcost[i] = gravity(w, l->stack, b, w->acc[b]);
    }
    /* nobody moves a body, or changes its cost, while another may still be
     * reading it (in its force walk, or its cost zone walk) */
    barrier(w);
    struct slot *sl = slot_of(w, l->me);
    for (int d = 0; d < 3; d++) {
        sl->lo[d] = INFINITY;
        sl->hi[d] = -INFINITY;
    }
    double h = 0.5 * w->dt;
    for (int i = 0; i < l->nmine; i++) {
        int b = l->mine[i];
        double *x = w->pos[b], *v = w->vel[b], *a = w->acc[b];
        w->cost[b] = l->newcost[i];
        int kicks = (phase > 0) + (phase < w->steps);
        for (int d = 0; d < 3; d++)
            v[d] += kicks * h * a[d];
        l->impulse += kicks * h * w->mass[b] * sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
        if (phase < w->steps)
            for (int d = 0; d < 3; d++) {
                x[d] += w->dt * v[d];
                sl->lo[d] = fmin(sl->lo[d], x[d]);
                sl->hi[d] = fmax(sl->hi[d], x[d]);
            }
    }
    barrier(w);
}

/* The whole run: phases 0..steps. The first phase's bodies are a block of
 * numbers per process; after that, each process's cost zone. */
static void simulate(const struct world *w, int me)
{
    struct local l = {.me = me};
    l.mine = malloc((size_t)w->n * sizeof *l.mine);
    l.stack = malloc((size_t)(7 * MAX_DEPTH + 8) * sizeof *l.stack);
    l.newcost = malloc((size_t)w->n * sizeof *l.newcost);
    if (!l.mine || !l.stack || !l.newcost)
        par_die("out of memory");
    int lo = (int)((int64_t)w->n * me / w->P), hi = (int)((int64_t)w->n * (me + 1) / w->P);
    for (int b = lo; b < hi; b++)
        l.mine[l.nmine++] = b;
    for (int s = 0; s <= w->steps; s++)
        force_phase(w, &l, s);
    slot_of(w, me)->impulse = l.impulse;
    free(l.mine);
    free(l.stack);
    free(l.newcost);
}

/* ---- the check ------------------------------------------------------------------- */

#define SAMPLE 128

/*
 * The tree's force on a body differs from the direct sum by the
 * monopoles' error: a node of side l taken whole at distance d from its
 * centre of mass errs by its quadrupole, at most about (l / d)^2 < theta^2
 * of its own pull (and less, its bodies being spread inside the box); the
 * errors of different nodes partly cancel, and the pulls partly cancel
 * too. Measured on these Plummer spheres (1K and 16K bodies, theta 0.5 to
 * 1.5, after 3 steps): the sample's worst relative error 0.24 theta^2 or
 * less, its root-mean-square 0.047 theta^2 or less. We allow a worst of
 * theta^2 / 2 and an r.m.s. of theta^2 / 10. A body missing from the tree, or a cell with
 * stale sums, moves some accelerations by their whole size.
 *
 * Momentum: the direct forces cancel in pairs, so the total momentum
 * moves only by the force error: |P(end) - P(0)| <= sum over kicks of
 * dt/2 sum_i m_i |a_i - a_i(direct)| <= (worst relative error) times the
 * sum over kicks of dt/2 sum_i m_i |a_i| (the impulse every process adds
 * up). We allow theta^2 / 2 of that impulse, the worst error above
 * (measured: 6e-3 of it or less; the errors mostly cancel).
 */
struct verdict {
    bool   same;       /* equal to the private run, bit for bit */
    double worst, rms; /* the sample's relative acceleration errors */
    double dp;         /* |P(end) - P(0)| / impulse */
    uint64_t checksum;
};

static void momentum(const struct world *w, double p[3])
{
    p[0] = p[1] = p[2] = 0;
    for (int i = 0; i < w->n; i++)
        for (int d = 0; d < 3; d++)
            p[d] += w->mass[i] * w->vel[i][d];
}

static bool check(const struct world *w, const struct world *r, const double p0[3],
                  double theta, struct verdict *v)
{
    size_t vec = (size_t)w->n * 3 * sizeof(double);
    v->same = !memcmp(w->pos, r->pos, vec) && !memcmp(w->vel, r->vel, vec) &&
              !memcmp(w->acc, r->acc, vec);
    v->checksum = fnv1a(fnv1a(FNV1A_START, w->pos, vec), w->vel, vec);

    int k = w->n < SAMPLE ? w->n : SAMPLE;
    double sum2 = 0;
    v->worst = 0;
    for (int s = 0; s < k; s++) {
        int b = (int)((int64_t)w->n * s / k);
        double a[3] = {0, 0, 0};
        for (int j = 0; j < w->n; j++) {
            if (j == b)
                continue;
            double dx[3] = {w->pos[j][0] - w->pos[b][0], w->pos[j][1] - w->pos[b][1],
                            w->pos[j][2] - w->pos[b][2]};
            pull(a, dx, w->mass[j], EPS * EPS);
        }
        double e2 = 0, a2 = 0;
        for (int d = 0; d < 3; d++) {
            e2 += (w->acc[b][d] - a[d]) * (w->acc[b][d] - a[d]);
            a2 += a[d] * a[d];
        }
        double rel = sqrt(e2 / a2);
        v->worst = rel > v->worst || rel != rel ? rel : v->worst;
        sum2 += e2 / a2;
    }
    v->rms = sqrt(sum2 / k);

    double p[3], impulse = 0, dp2 = 0;
    momentum(w, p);
    for (int q = 0; q < w->P; q++)
        impulse += slot_of(w, q)->impulse;
    for (int d = 0; d < 3; d++)
        dp2 += (p[d] - p0[d]) * (p[d] - p0[d]);
    /* no kicks (0 steps): the velocities must not have moved at all */
    v->dp = dp2 == 0 ? 0 : impulse > 0 ? sqrt(dp2) / impulse : INFINITY;

    double t2 = theta * theta;
    return v->same && v->worst <= t2 / 2 && v->rms <= t2 / 10 && v->dp <= t2 / 2;
}

/* ---- driver ---------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: barnes [--size test|quick|full] [-n BODIES] [-s STEPS] [-t THETA]\n"
               "  --size S  test: 1024 bodies, 2 steps; quick: 4096, 3 steps (SPLASH's\n"
               "            tstop 0.075); full (default): 65536, 3 steps (SPLASH's: -n 16384)\n"
               "  -n N      bodies, 2..1048576\n"
               "  -s S      leapfrog steps, 0..100 (S + 1 force computations)\n"
               "  -t THETA  opening angle, 0.1..2 (SPLASH's tol: 1.0)\n");
}

int par_main(int argc, char **argv)
{
    int n = 65536, steps = 3;
    double theta = THETA;
    struct arg_option options[] = {
        {"--size", ARG_WORD, &n, PAR_SIZE_WANT, .words = par_size_words,
         .values = (const int[]){1024, 4096, 65536}},
        {"--size", ARG_WORD, &steps, PAR_SIZE_WANT, .words = par_size_words,
         .values = (const int[]){2, 3, 3}},
        {"-n", ARG_INT, &n, "a body count 2..1048576", .overrides = true, .lo = 2,
         .hi = 1 << 20},
        {"-s", ARG_INT, &steps, "a step count 0..100", .overrides = true, .lo = 0, .hi = 100},
        {"-t", ARG_DOUBLE, &theta, "an opening angle 0.1..2", .overrides = true, .lo = 0.1,
         .hi = 2},
        {0}};
    int rc = par_parse_args(argc, argv, options, usage);
    if (rc != ARGS_RUN)
        return rc;

    int P = par_n(), me = par_id();
    struct world w;
    setup(&w, n, steps, theta, P, true, alloc_shared);
    init_bodies(&w, (int)((int64_t)n * me / P), (int)((int64_t)n * (me + 1) / P), me);
    double p0[3] = {0, 0, 0};
    par_barrier();
    if (me == 0)
        momentum(&w, p0);

    par_timer_start();
    simulate(&w, me);
    double secs = par_timer_stop();

    bool ok = true;
    char extra[200] = "";
    if (me == 0) {
        struct world r;
        setup(&r, n, steps, theta, 1, false, alloc_private);
        init_bodies(&r, 0, n, 0);
        simulate(&r, 0);
        struct verdict v;
        ok = check(&w, &r, p0, theta, &v);
        if (!ok)
            fprintf(stderr,
                    "barnes: FAILED: %s the private run; accelerations against the direct sum: "
                    "worst %.3g, r.m.s. %.3g (allowed %.3g, %.3g); momentum moved %.3g of the "
                    "impulse (allowed %.3g)\n",
                    v.same ? "equal to" : "NOT equal to", v.worst, v.rms, theta * theta / 2,
                    theta * theta / 10, v.dp, theta * theta / 2);
        snprintf(extra, sizeof extra,
                 "steps=%d theta=%g same=%s err.worst=%.2e err.rms=%.2e dp=%.1e checksum=%016llx",
                 steps, theta, v.same ? "yes" : "no", v.worst, v.rms, v.dp,
                 (unsigned long long)v.checksum);
        free_world(&r);
    }
    char size[32];
    snprintf(size, sizeof size, "%d", n);
    return par_report("barnes", size, secs, ok, extra);
}
