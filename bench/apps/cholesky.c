/*
 * cholesky.c — a blocked Cholesky factorisation with a shared task queue
 * under a lock: the dynamic scheduling of SPLASH-2's Cholesky (Rothberg
 * and Gupta's supernodal fan-in method, whose processes take ready
 * supernode tasks from queues under locks), on a dense matrix.
 *
 *   cholesky [--size test|quick|full] [-n N] [-b B]
 *
 * A = L L^T for a symmetric positive definite A of order N, in B x B
 * blocks. Block (I,J) of the lower triangle (I >= J) is one task, the
 * fan-in (left-looking) form of SPLASH's supernode task: apply every
 * update it awaits, A_IJ -= L_IK L_JK^T for K = 0 .. J-1 in that order,
 * then finish it: the Cholesky factor of the diagonal block (I = J), or
 * the triangular solve L_IJ = A_IJ L_JJ^-T. A task is ready once the
 * blocks it reads are final: L_IK and L_JK for every K < J, and L_JJ, so
 * it waits on 2J + 1 others (J on the diagonal). Every task's count of
 * blocks awaited, and a FIFO of ready tasks, live in shared memory under
 * one lock, the queue lock. A process takes the oldest ready task under
 * the lock, runs it without locks, then under the lock counts the task
 * done in every task that reads its block, queuing those that became
 * ready; with nothing ready it tries again (SPLASH's processes also spin
 * on the queue). The first task is (0,0); when all are taken the processes
 * stop, and the timed section's closing barrier waits for the last.
 *
 * Why not SPLASH's sparse supernodal code: the part of it that matters to
 * a DSM is this dynamic work under locks, and its irregular sparse
 * structure would come from the Harwell-Boeing matrices (tk15, tk29) that
 * we do not ship. The dense blocked form keeps the task queue, the
 * fan-in updates and the read-mostly sharing of finished blocks, and its
 * answer can be checked from a formula.
 *
 * Every block sees the same operations in the same order whoever runs
 * it, so the factor is the same, bit for bit, for any number of processes
 * and any build: the RESULT checksum shows it.
 *
 * Layout: each block is row-major, alone on its pages (padded to 64 KiB,
 * the largest DSM_PAGE_SIZE), homed by first touch on the process that
 * fills it in (blocks dealt out cyclically); the queue and counters share
 * pages of their own.
 *
 * Self-check, after the timed section: ||L L^T - A||_F against Higham's
 * backward-error bound (check_factor); the processes share the rows.
 */
#include "par.h"

#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GRAIN ((size_t)64 * 1024)
#define QUEUE_LOCK 0

static size_t round_up(size_t x, size_t g) { return (x + g - 1) / g * g; }

struct chol {
    int      n, b, nb, tasks;
    size_t   stride;  /* bytes between blocks */
    char    *blocks;  /* the lower triangle's blocks, by task number */
    struct queue *q;
};

/* Under QUEUE_LOCK. */
struct queue {
    int head, tail;   /* ready[head .. tail-1] wait to be taken */
    long idle;        /* times a process found nothing ready */
    int  data[];      /* ready[tasks], then awaited[tasks] */
};

static int task_of(int i, int j) { return i * (i + 1) / 2 + j; }
static double *blk(const struct chol *c, int i, int j)
{
    return (double *)(c->blocks + (size_t)task_of(i, j) * c->stride);
}
static int *ready(const struct chol *c) { return c->q->data; }
static int *awaited(const struct chol *c) { return c->q->data + c->tasks; }

/* A's entries: symmetric, off the diagonal a hash of the position in
 * [-1, 1); the diagonal adds N, more than the sum of any row's other
 * entries, so A is positive definite. */
static double entry(int n, int i, int j)
{
    if (i < j) {
        int t = i;
        i = j;
        j = t;
    }
    uint64_t z = (uint64_t)i * (uint64_t)n + (uint64_t)j + 0x63686f6c65736b79ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    double v = (double)(z >> 11) * 0x1p-52 - 1.0;
    return i == j ? v + n : v;
}

/* ---- the block kernels ------------------------------------------------------
 * Out of line and aligned, so every build and the check run the same code
 * (../kernels/lu_blocks.h says why). Row-major b x b blocks; `t` is b x b scratch. */
#define KERNEL __attribute__((noinline, aligned(64))) static

/* y -= s x over a row: the inner loop of every kernel. */
static inline void axpy(double *restrict y, const double *restrict x, double s, int len)
{
    for (int k = 0; k < len; k++)
        y[k] -= s * x[k];
}

static void transpose(double *restrict t, const double *restrict a, int b)
{
    for (int r = 0; r < b; r++)
        for (int k = 0; k < b; k++)
            t[(size_t)k * b + r] = a[(size_t)r * b + k];
}

/* c -= a x^T, with xt = x^T. */
KERNEL void update(double *c, const double *a, const double *xt, int b)
{
    for (int r = 0; r < b; r++)
        for (int k = 0; k < b; k++)
            axpy(c + (size_t)r * b, xt + (size_t)k * b, a[(size_t)r * b + k], b);
}

/* In place: the lower Cholesky factor of a diagonal block (zeros above). */
KERNEL void factor_diag(double *a, int b)
{
    for (int k = 0; k < b; k++) {
        double *rk = a + (size_t)k * b;
        if (!(rk[k] > 0))
            par_die("cholesky: the matrix is not positive definite (pivot %g)", rk[k]);
        double d = sqrt(rk[k]);
        rk[k] = d;
        for (int i = k + 1; i < b; i++)
            a[(size_t)i * b + k] /= d;
        for (int i = k + 1; i < b; i++) {
            double *ri = a + (size_t)i * b;
            for (int j = k + 1; j <= i; j++)
                ri[j] -= ri[k] * a[(size_t)j * b + k];
        }
    }
    for (int i = 0; i < b; i++)
        for (int j = i + 1; j < b; j++)
            a[(size_t)i * b + j] = 0;
}

/* In place: a = a l^-T, l the factored diagonal block, lt = l^T. */
KERNEL void solve(double *a, const double *lt, int b)
{
    for (int r = 0; r < b; r++) {
        double *ar = a + (size_t)r * b;
        for (int k = 0; k < b; k++) {
            double x = ar[k] / lt[(size_t)k * b + k];
            ar[k] = x;
            axpy(ar + k + 1, lt + (size_t)k * b + k + 1, x, b - k - 1);
        }
    }
}

/* Task (i,j): every update, in order, then the finish. */
static void run_task(const struct chol *c, int i, int j, double *t)
{
    int b = c->b;
    double *a = blk(c, i, j);
    for (int k = 0; k < j; k++) {
        transpose(t, blk(c, j, k), b);
        update(a, blk(c, i, k), t, b);
    }
    if (i == j) {
        factor_diag(a, b);
    } else {
        transpose(t, blk(c, j, j), b);
        solve(a, t, b);
    }
}

/* ---- the task queue ---------------------------------------------------------- */

static void push(const struct chol *c, int i, int j) { ready(c)[c->q->tail++] = task_of(i, j); }

/* One blocks-awaited count down for task (i,j); queued at zero. */
static void count_down(const struct chol *c, int i, int j)
{
    if (--awaited(c)[task_of(i, j)] == 0)
        push(c, i, j);
}

/* Block (i,j) is final: every task that reads it. Under QUEUE_LOCK. */
static void finished(const struct chol *c, int i, int j)
{
    if (i == j) {
        for (int a = j + 1; a < c->nb; a++)
            count_down(c, a, j); /* L_JJ of the column's solves */
        return;
    }
    for (int b = j + 1; b < i; b++)
        count_down(c, i, b); /* as L_IK of row i's tasks */
    for (int a = i; a < c->nb; a++)
        count_down(c, a, i); /* as L_JK of column i's */
}

static void work(const struct chol *c)
{
    double *t = malloc((size_t)c->b * c->b * sizeof *t);
    if (!t)
        par_die("out of memory");
    for (;;) {
        par_lock(QUEUE_LOCK);
        int task = -1;
        bool over = c->q->head == c->tasks;
        if (!over && c->q->head < c->q->tail)
            task = ready(c)[c->q->head++];
        else if (!over)
            c->q->idle++;
        par_unlock(QUEUE_LOCK);
        if (over)
            break;
        if (task < 0) {
            sched_yield(); /* the 2 cores of this machine are shared */
            continue;
        }
        int i = 0;
        while (task_of(i + 1, 0) <= task)
            i++;
        int j = task - task_of(i, 0);
        run_task(c, i, j, t);
        par_lock(QUEUE_LOCK);
        finished(c, i, j);
        par_unlock(QUEUE_LOCK);
    }
    free(t);
}

/* ---- the check ------------------------------------------------------------------
 *
 * Higham, Accuracy and Stability of Numerical Algorithms, Thm 10.3: the
 * computed factor of a Cholesky factorisation in floating point (any order
 * of the inner products' terms; blocking only reorders them) satisfies
 * A + dA = L L^T with |dA| <= g_{n+1} |L| |L|^T elementwise, g_k = k u /
 * (1 - k u), u = 2^-53; forming the product here adds at most g_n |L||L|^T
 * again. So ||fl(L L^T) - A||_F <= 2 g_{n+1} || |L| |L|^T ||_F
 * <= 2 g_{n+1} ||L||_F^2, which is what we require. Here ||L||_F^2 =
 * trace(A) ~ N^2, so the bound is ~ 4 N^3 u (1e-5 at N = 2048) against
 * ||A||_F ~ N^1.5: a relative 2e-10. A block computed from a stale or
 * missing one is off by ~1 in most of its B^2 entries, far beyond it.
 *
 * Every process checks rows i = me, me + P, ... of the lower triangle from
 * its own private row-major copy of L; A is regenerated as it goes.
 */
struct check { double err2, a2, l2; uint64_t checksum; };

static void check_factor(const struct chol *c, struct check *out)
{
    int n = c->n, b = c->b, p = par_n(), me = par_id();
    double *l = calloc((size_t)n * n, sizeof *l);
    if (!l)
        par_die("out of memory for the check (N = %d)", n);
    for (int bi = 0; bi < c->nb; bi++)
        for (int bj = 0; bj <= bi; bj++)
            for (int r = 0; r < b; r++)
                memcpy(l + (size_t)(bi * b + r) * n + (size_t)bj * b,
                       blk(c, bi, bj) + (size_t)r * b, (size_t)b * sizeof *l);
    out->checksum = fnv1a(FNV1A_START, l, (size_t)n * n * sizeof *l);
    out->err2 = out->a2 = out->l2 = 0;
    for (int i = me; i < n; i += p) {
        const double *li = l + (size_t)i * n;
        for (int j = 0; j <= i; j++) {
            const double *lj = l + (size_t)j * n;
            double s = 0;
            for (int k = 0; k <= j; k++)
                s += li[k] * lj[k];
            double a = entry(n, i, j), e = s - a, twice = i == j ? 1 : 2; /* and (j,i) */
            out->err2 += twice * e * e;
            out->a2 += twice * a * a;
            out->l2 += li[j] * li[j];
        }
    }
    free(l);
}

/* ---- options --------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: cholesky [--size test|quick|full] [-n N] [-b B]\n"
               "  --size S  test: N = 256, B = 32; quick: N = 1024; full (default): N = 2048;\n"
               "            B = 64 but in test\n"
               "  -n N      matrix order, a multiple of B, 1..8192\n"
               "  -b B      block order, 1..256\n");
}

int par_main(int argc, char **argv)
{
    int n = 2048, b = 64;
    struct arg_option options[] = {
        {"--size", ARG_WORD, &n, PAR_SIZE_WANT, .words = par_size_words,
         .values = (const int[]){256, 1024, 2048}},
        {"--size", ARG_WORD, &b, PAR_SIZE_WANT, .words = par_size_words,
         .values = (const int[]){32, 64, 64}},
        {"-n", ARG_INT, &n, "a matrix order 1..8192", .overrides = true, .lo = 1, .hi = 8192},
        {"-b", ARG_INT, &b, "a block order 1..256", .overrides = true, .lo = 1, .hi = 256},
        {0}};
    int rc = par_parse_args(argc, argv, options, usage);
    if (rc != ARGS_RUN)
        return rc;
    if (n % b)
        return par_bad_args(usage, "-n %d is not a multiple of -b %d", n, b);

    int p = par_n(), me = par_id();
    struct chol c = {.n = n, .b = b, .nb = n / b};
    c.tasks = c.nb * (c.nb + 1) / 2;
    c.stride = round_up((size_t)b * b * sizeof(double), GRAIN);
    c.blocks = par_alloc_home((size_t)c.tasks * c.stride, PAR_HOME_FIRST_TOUCH);
    c.q = par_alloc(round_up(sizeof *c.q + 2 * (size_t)c.tasks * sizeof(int), GRAIN));

    for (int bi = 0; bi < c.nb; bi++)
        for (int bj = 0; bj <= bi; bj++) {
            if (task_of(bi, bj) % p != me)
                continue;
            double *a = blk(&c, bi, bj);
            for (int r = 0; r < b; r++)
                for (int s = 0; s < b; s++)
                    a[r * b + s] = entry(n, bi * b + r, bj * b + s);
        }
    if (me == 0) {
        for (int bi = 0; bi < c.nb; bi++)
            for (int bj = 0; bj <= bi; bj++)
                awaited(&c)[task_of(bi, bj)] = bi == bj ? bj : 2 * bj + 1;
        push(&c, 0, 0);
    }

    par_timer_start();
    work(&c);
    double t = par_timer_stop();

    struct check *checks = par_alloc((size_t)p * GRAIN);
    check_factor(&c, (struct check *)((char *)checks + (size_t)me * GRAIN));
    par_barrier();
    bool ok = true;
    char extra[200] = "";
    if (me == 0) {
        struct check all = {.checksum = checks->checksum};
        for (int q = 0; q < p; q++) {
            const struct check *o = (const struct check *)((char *)checks + (size_t)q * GRAIN);
            all.err2 += o->err2;
            all.a2 += o->a2;
            all.l2 += o->l2;
        }
        double g = (n + 1) * 0x1p-53 / (1.0 - (n + 1) * 0x1p-53);
        double err = sqrt(all.err2), bound = 2 * g * all.l2;
        ok = err <= bound && c.q->tail == c.tasks; /* a NaN fails */
        if (!ok)
            fprintf(stderr,
                    "cholesky: FAILED: ||L L^T - A||_F = %.3g, bound %.3g (||A||_F = %.3g); "
                    "%d of %d tasks queued\n",
                    err, bound, sqrt(all.a2), c.q->tail, c.tasks);
        snprintf(extra, sizeof extra,
                 "b=%d tasks=%d idle=%ld residual=%.2e err/bound=%.2g checksum=%016llx", b,
                 c.tasks, c.q->idle, err / sqrt(all.a2), err / bound,
                 (unsigned long long)all.checksum);
    }
    char size[32];
    snprintf(size, sizeof size, "%d", n);
    return par_report("cholesky", size, t, ok, extra);
}
