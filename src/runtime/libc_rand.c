/*
 * libc_rand.c — a dsmcc pthreads program's random number generators are
 * the job's (issue 89, point 3; docs/unmodified-programs.md, "The C
 * library's process-wide state").
 *
 * rand, random and the drand48 family keep one hidden state per process.
 * A program's threads here run in a process per node, so main's
 * srand48(1) seeded node 0's generator alone, and a thread on node 1 drew
 * from an unseeded one (lrand48: 0 where one process gives 89,400,484).
 * So dsmcc wraps them (src/start/wrap_libc.c) and, in a job of several
 * nodes, they run here, on one state in shared memory (in pthreads.c's
 * table) under one dsm lock, SYNC_PTHREAD_RAND_ID: every draw of every
 * thread of every node is one step of one sequence, as in one process.
 *
 * The algorithms are glibc's (stdlib/random_r.c, drand48-iter.c and
 * friends), so a job draws the numbers the same program draws on one
 * machine: random is the additive feedback generator r[i] = r[i-3] +
 * r[i-31] (TYPE_3; initstate picks TYPE_0 to TYPE_4 by the buffer's size
 * as glibc does), seeded by 16807's LCG with 310 draws discarded, rand is
 * random, and drand48's is the 48-bit LCG a = 0x5DEECE66D, c = 0xB that
 * lcong48 may change. rand_r, and erand48, nrand48 and jrand48's xsubi,
 * are the caller's state; those three still use lcong48's a and c, read
 * under the lock. tests/unit/test_libc_rand.c compares them with the C
 * library's own for many seeds.
 */
#include <dsm/pthread.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "mem/mem.h"
#include "sync/sync.h"
#include "runtime/runtime.h"

/* ---- random (glibc's random_r.c) ----------------------------------------- */

enum { TYPE_0, TYPE_1, TYPE_2, TYPE_3, TYPE_4, MAX_TYPES };
static const int degrees[MAX_TYPES] = {0, 7, 15, 31, 63};
static const int seps[MAX_TYPES] = {0, 3, 1, 3, 1};

/* Where the state is: ints of the current buffer (its word 0 records the
 * type and the rear pointer, as glibc's does, when another is set). */
static int32_t *at(const struct libc_rand *r, int32_t index) { return r->state + index; }

int32_t libc_random_next(struct libc_rand *r)
{
    if (!r->state)
        libc_random_seed(r, 1); /* glibc's first state is srandom(1)'s */
    int32_t *state = r->state;
    if (r->type == TYPE_0) {
        int32_t val = (int32_t)(((uint32_t)state[0] * 1103515245U + 12345U) & 0x7fffffff);
        state[0] = val;
        return val;
    }
    int32_t *fptr = at(r, r->front), *rptr = at(r, r->rear), *end = at(r, r->deg);
    uint32_t val = (uint32_t)*fptr + (uint32_t)*rptr;
    *fptr = (int32_t)val;
    ++fptr;
    if (fptr >= end) {
        fptr = state;
        ++rptr;
    } else if (++rptr >= end)
        rptr = state;
    r->front = (int32_t)(fptr - state);
    r->rear = (int32_t)(rptr - state);
    return (int32_t)(val >> 1); /* the least random bit dropped */
}

void libc_random_seed(struct libc_rand *r, unsigned seed)
{
    if (!r->state) { /* random's own buffer, TYPE_3, as glibc's randtbl */
        r->state = r->table + 1;
        r->type = TYPE_3;
        r->deg = degrees[TYPE_3];
        r->sep = seps[TYPE_3];
    }
    int32_t *state = r->state;
    if (seed == 0)
        seed = 1;
    state[0] = (int32_t)seed;
    if (r->type == TYPE_0)
        return;
    int32_t word = (int32_t)seed;
    for (int i = 1; i < r->deg; i++) {
        /* state[i] = 16807 * state[i - 1] % 2147483647, in 31 bits */
        long hi = word / 127773, lo = word % 127773;
        word = (int32_t)(16807 * lo - 2836 * hi);
        if (word < 0)
            word += 2147483647;
        state[i] = word;
    }
    r->front = r->sep;
    r->rear = 0;
    for (int k = r->deg * 10; k > 0; k--)
        libc_random_next(r);
}

/* The current buffer's word 0: its type and rear pointer, as glibc keeps
 * them for a later setstate. */
static void record_position(struct libc_rand *r)
{
    r->state[-1] = r->type == TYPE_0 ? TYPE_0 : MAX_TYPES * r->rear + r->type;
}

char *libc_random_initstate(struct libc_rand *r, unsigned seed, char *buf, size_t n)
{
    if (!r->state)
        libc_random_seed(r, 1);
    record_position(r);
    int type;
    if (n >= 128)
        type = n < 256 ? TYPE_3 : TYPE_4;
    else if (n < 32) {
        if (n < 8) {
            errno = EINVAL;
            return NULL;
        }
        type = TYPE_0;
    } else
        type = n < 64 ? TYPE_1 : TYPE_2;
    char *old = (char *)(r->state - 1);
    r->type = type;
    r->deg = degrees[type];
    r->sep = seps[type];
    r->state = (int32_t *)buf + 1;
    libc_random_seed(r, seed);
    record_position(r);
    return old;
}

char *libc_random_setstate(struct libc_rand *r, char *buf)
{
    if (!r->state)
        libc_random_seed(r, 1);
    int32_t *state = (int32_t *)buf + 1;
    char *old = (char *)(r->state - 1);
    record_position(r);
    int type = state[-1] % MAX_TYPES;
    if (type < TYPE_0 || type > TYPE_4) {
        errno = EINVAL;
        return NULL;
    }
    r->type = type;
    r->deg = degrees[type];
    r->sep = seps[type];
    if (type != TYPE_0) {
        int rear = state[-1] / MAX_TYPES;
        r->rear = rear;
        r->front = (rear + r->sep) % r->deg;
    }
    r->state = state;
    return old;
}

/* ---- the drand48 family (glibc's drand48-iter.c and friends) ------------- */

static void rand48_defaults(struct libc_rand48 *d)
{
    d->a = 0x5deece66dULL;
    d->c = 0xb;
    d->init = 1;
}

/* One step of xsubi (the job's x, or the caller's) with d's a and c. */
static void rand48_step(struct libc_rand48 *d, unsigned short xsubi[3])
{
    if (!d->init)
        rand48_defaults(d);
    uint64_t x = (uint64_t)xsubi[2] << 32 | (uint32_t)xsubi[1] << 16 | xsubi[0];
    uint64_t result = x * d->a + d->c;
    xsubi[0] = (unsigned short)(result & 0xffff);
    xsubi[1] = (unsigned short)((result >> 16) & 0xffff);
    xsubi[2] = (unsigned short)((result >> 32) & 0xffff);
}

double libc_erand48(struct libc_rand48 *d, unsigned short xsubi[3])
{
    rand48_step(d, xsubi);
    /* 1 <= 1.mantissa < 2, the mantissa's top 48 bits the state's */
    uint64_t bits = 0x3ff0000000000000ULL | (uint64_t)xsubi[2] << 36 |
                    (uint64_t)xsubi[1] << 20 | (uint64_t)xsubi[0] << 4;
    double v;
    memcpy(&v, &bits, sizeof v);
    return v - 1.0;
}

long libc_nrand48(struct libc_rand48 *d, unsigned short xsubi[3])
{
    rand48_step(d, xsubi);
    return (long)((uint32_t)xsubi[2] << 15 | (uint32_t)xsubi[1] >> 1);
}

long libc_jrand48(struct libc_rand48 *d, unsigned short xsubi[3])
{
    rand48_step(d, xsubi);
    return (int32_t)((uint32_t)xsubi[2] << 16 | xsubi[1]);
}

void libc_srand48(struct libc_rand48 *d, long seed)
{
    seed &= 0xffffffffL;
    d->x[2] = (unsigned short)(seed >> 16);
    d->x[1] = (unsigned short)(seed & 0xffff);
    d->x[0] = 0x330e;
    rand48_defaults(d);
}

unsigned short *libc_seed48(struct libc_rand48 *d, const unsigned short seed[3])
{
    memcpy(d->old_x, d->x, sizeof d->x);
    memcpy(d->x, seed, sizeof d->x);
    rand48_defaults(d);
    return d->old_x;
}

void libc_lcong48(struct libc_rand48 *d, const unsigned short param[7])
{
    memcpy(d->x, param, sizeof d->x);
    d->a = (uint64_t)param[5] << 32 | (uint32_t)param[4] << 16 | param[3];
    d->c = param[6];
    d->init = 1;
}

/* ---- the program's calls --------------------------------------------------- */

/* The job's state, locked, or NULL where the calls are the C library's
 * (one node, not a pthreads program, before or after the job). */
static struct libc_rand *job_rand(void)
{
    if (!sync_pthreads_on)
        return NULL;
    struct libc_rand *r = pthreads_libc_rand();
    if (!r)
        log_fatal("a random number generator (rand, random, drand48, ...) on node %d by a thread "
                  "dsm did not start: a program's threads are created by main or by threads "
                  "pthread_create started", job()->rank);
    sync_pthread_object(r); /* a thread dsm did not start, beside another: said */
    sync_pthread_lock(SYNC_PTHREAD_RAND_ID);
    return r;
}

static void job_rand_done(void) { sync_pthread_unlock(SYNC_PTHREAD_RAND_ID); }

/* A state buffer initstate or setstate is given: the job's only if every
 * node reaches it (shared memory). */
static void check_buffer(const char *call, const char *buf)
{
    if (!mem_contains(buf))
        log_fatal("%s(%p): a state buffer outside shared memory (a thread's stack or "
                  "thread_local), which the other nodes' threads cannot reach; make it a global "
                  "or malloc it (docs/unmodified-programs.md, \"The C library's process-wide state\")",
                  call, (const void *)buf);
}

long dsm_random(void)
{
    struct libc_rand *r = job_rand();
    if (!r)
        return random();
    long v = libc_random_next(r);
    job_rand_done();
    return v;
}

void dsm_srandom(unsigned seed)
{
    struct libc_rand *r = job_rand();
    if (!r) {
        srandom(seed);
        return;
    }
    libc_random_seed(r, seed);
    job_rand_done();
}

int dsm_rand(void) { return (int)dsm_random(); }

void dsm_srand(unsigned seed) { dsm_srandom(seed); }

char *dsm_initstate(unsigned seed, char *buf, size_t n)
{
    if (!sync_pthreads_on)
        return initstate(seed, buf, n);
    check_buffer("initstate", buf);
    struct libc_rand *r = job_rand();
    char *old = libc_random_initstate(r, seed, buf, n);
    job_rand_done();
    return old;
}

char *dsm_setstate(char *buf)
{
    if (!sync_pthreads_on)
        return setstate(buf);
    check_buffer("setstate", buf);
    struct libc_rand *r = job_rand();
    char *old = libc_random_setstate(r, buf);
    job_rand_done();
    return old;
}

double dsm_drand48(void)
{
    struct libc_rand *r = job_rand();
    if (!r)
        return drand48();
    double v = libc_erand48(&r->r48, r->r48.x);
    job_rand_done();
    return v;
}

double dsm_erand48(unsigned short xsubi[3])
{
    struct libc_rand *r = job_rand();
    if (!r)
        return erand48(xsubi);
    double v = libc_erand48(&r->r48, xsubi);
    job_rand_done();
    return v;
}

long dsm_lrand48(void)
{
    struct libc_rand *r = job_rand();
    if (!r)
        return lrand48();
    long v = libc_nrand48(&r->r48, r->r48.x);
    job_rand_done();
    return v;
}

long dsm_nrand48(unsigned short xsubi[3])
{
    struct libc_rand *r = job_rand();
    if (!r)
        return nrand48(xsubi);
    long v = libc_nrand48(&r->r48, xsubi);
    job_rand_done();
    return v;
}

long dsm_mrand48(void)
{
    struct libc_rand *r = job_rand();
    if (!r)
        return mrand48();
    long v = libc_jrand48(&r->r48, r->r48.x);
    job_rand_done();
    return v;
}

long dsm_jrand48(unsigned short xsubi[3])
{
    struct libc_rand *r = job_rand();
    if (!r)
        return jrand48(xsubi);
    long v = libc_jrand48(&r->r48, xsubi);
    job_rand_done();
    return v;
}

void dsm_srand48(long seed)
{
    struct libc_rand *r = job_rand();
    if (!r) {
        srand48(seed);
        return;
    }
    libc_srand48(&r->r48, seed);
    job_rand_done();
}

unsigned short *dsm_seed48(unsigned short seed[3])
{
    struct libc_rand *r = job_rand();
    if (!r)
        return seed48(seed);
    unsigned short *old = libc_seed48(&r->r48, seed);
    job_rand_done();
    return old;
}

void dsm_lcong48(unsigned short param[7])
{
    struct libc_rand *r = job_rand();
    if (!r) {
        lcong48(param);
        return;
    }
    libc_lcong48(&r->r48, param);
    job_rand_done();
}
