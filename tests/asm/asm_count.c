/*
 * asm_count — a pthreads program whose threads count with x86-64 inline
 * assembly, as thread pools and MapReduce runtimes do (issue 54): each of
 * THREADS threads adds ITERS to every counter, each counter through
 * another form, and main checks the exact totals. The threads start
 * together (a barrier), so that they count at the same time on every
 * layout: the hardware's atomics each on their own node's copy of the
 * page lose the other nodes' increments. Built with dsmcc, every
 * form becomes a dsm atomic (tools/asm_lift.c) and the totals are exact
 * with the threads on several nodes; before that, a node's lock; xaddl
 * updated its own copy of the page and most increments were lost.
 * Then they pass a baton in turn, waiting on FreeBSD's atomic_load_acq
 * (a lock cmpxchg read as a load, issue 89) for the one before to hand it
 * on with an asm store: each sees the one before's plain write.
 *
 *   asm_count THREADS ITERS
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* lock; xaddl with "+r" and "+m", returning the old value. */
static inline int fetch_add(volatile int *p, int v)
{
    asm volatile("lock; xaddl %0, %1" : "+r"(v), "+m"(*p) : : "memory");
    return v;
}

/* lock; incl on a "+m" operand. */
static inline void inc(volatile int *p)
{
    asm volatile("lock; incl %0" : "+m"(*p) : : "memory");
}

/* lock addq of an "ir" input, newline-separated, no suffix on lock. */
static inline void add64(volatile long *p, long v)
{
    asm volatile("lock\n\taddq %1, %0" : "+m"(*p) : "ir"(v) : "memory", "cc");
}

/* A test-and-set spin lock on xchg (implicitly locked, no prefix), and
 * its release by a plain store in asm, as xv6 writes it. */
static inline void spin_lock(volatile int *l)
{
    for (;;) {
        int v = 1;
        asm volatile("xchgl %0, %1" : "+r"(v), "+m"(*l) : : "memory");
        if (v == 0)
            return;
        asm volatile("pause");
    }
}

static inline void spin_unlock(volatile int *l)
{
    asm volatile("movl $0, %0" : "+m"(*l) : : "memory");
}

/* lock; cmpxchg returning the value it found ("=a", "0"). */
static inline int cas(volatile int *p, int old, int new)
{
    int prev;
    asm volatile("lock; cmpxchgl %2, %1" : "=a"(prev), "+m"(*p) : "r"(new), "0"(old) : "memory");
    return prev;
}

/* lock cmpxchgq, success from the flags (=@ccz), named operands. */
static inline int cas64(volatile long *p, long old, long new)
{
    unsigned char ok;
    asm volatile("lock cmpxchgq %[new], %[mem]"
                 : "=@ccz"(ok), [mem] "+m"(*p), "+a"(old)
                 : [new] "r"(new)
                 : "memory");
    return ok;
}

/* Phoenix's shape: the constant loaded in the asm, memory through a
 * pointer in a register. */
static inline unsigned fetch_and_inc(unsigned *n)
{
    unsigned old;
    asm volatile("movl $1, %0\n\tlock xaddl %0, (%1)\n" : "=a"(old) : "b"(n) : "memory");
    return old;
}

/* Linux's old atomic_dec_and_test: the flag read in the same asm. */
static inline int dec_and_test(volatile int *v)
{
    unsigned char c;
    asm volatile("lock; decl %0; sete %1" : "+m"(*v), "=qm"(c) : : "memory");
    return c != 0;
}

/* FreeBSD's atomic_load_acq_int: a cmpxchg of the accumulator, never set
 * ("=a" and no input), into memory: an atomic load. */
static inline unsigned load_acq(volatile unsigned *p)
{
    unsigned res;
    asm volatile("lock; cmpxchgl %0,%1" : "=a"(res), "+m"(*p) : : "memory", "cc");
    return res;
}

/* The release store that goes with it: a mov in a statement of its own. */
static inline void store_rel(volatile unsigned *p, unsigned v)
{
    asm volatile("movl %1, %0" : "=m"(*p) : "r"(v) : "memory");
}

static int      threads, iters;
static int      c_xadd, c_inc, c_locked, c_cas, c_zero, c_down;
static long     c_add64, c_cas64;
static unsigned c_phoenix;
static int      lock_word;
static int      tickets_seen[64];
static unsigned baton;       /* whose turn: handed on with store_rel */
static long     relay;       /* written in turn, ordered by the baton */
static int      relay_order[64];
static pthread_barrier_t start;

static void *work(void *arg)
{
    long t = (long)arg;
    int  mine = 0;
    pthread_barrier_wait(&start);
    for (int i = 0; i < iters; i++) {
        if (fetch_add(&c_xadd, 1) < 0)
            mine = -1000000;
        inc(&c_inc);
        add64(&c_add64, 3);
        spin_lock(&lock_word);
        c_locked++; /* ordered by the lock */
        spin_unlock(&lock_word);
        int seen = c_cas, prev;
        while ((prev = cas(&c_cas, seen, seen + 1)) != seen)
            seen = prev;
        long s;
        do
            s = c_cas64;
        while (!cas64(&c_cas64, s, s + 2));
        fetch_and_inc(&c_phoenix);
        if (dec_and_test(&c_down))
            fetch_add(&c_zero, 1);
        mine++;
    }
    tickets_seen[t] = mine;
    /* The baton, in thread order: each waits on FreeBSD's load until the
     * one before hands it on, sees what that one wrote, and hands on. */
    while (load_acq(&baton) != (unsigned)t)
        asm volatile("pause");
    relay_order[t] = (int)relay;
    relay = t + 1;
    store_rel(&baton, (unsigned)t + 1);
    return NULL;
}

int main(int argc, char **argv)
{
    threads = argc > 1 ? atoi(argv[1]) : 3;
    iters = argc > 2 ? atoi(argv[2]) : 1000;
    if (threads < 1 || threads > 64 || iters < 1)
        return 2;
    c_down = threads * iters;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    pthread_t tid[64];
    for (long t = 0; t < threads; t++)
        if (pthread_create(&tid[t], NULL, work, (void *)t) != 0)
            return 3;
    for (int t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    long want = (long)threads * iters;
    int  ok = 1;
#define CHECK(name, got, expect)                                                                   \
    do {                                                                                           \
        printf("%-28s %ld (want %ld)\n", name, (long)(got), (long)(expect));                      \
        ok &= (long)(got) == (long)(expect);                                                       \
    } while (0)
    CHECK("lock; xaddl", c_xadd, want);
    CHECK("lock; incl", c_inc, want);
    CHECK("lock addq", c_add64, 3 * want);
    CHECK("xchgl spin lock", c_locked, want);
    CHECK("lock; cmpxchgl loop", c_cas, want);
    CHECK("lock cmpxchgq =@ccz loop", c_cas64, 2 * want);
    CHECK("movl; lock xaddl (%1)", c_phoenix, want);
    CHECK("lock; decl; sete to zero", c_down, 0);
    CHECK("... reached zero once", c_zero, 1);
    for (int t = 0; t < threads; t++)
        CHECK("a thread's iterations", tickets_seen[t], iters);
    for (int t = 0; t < threads; t++)
        CHECK("baton: the one before's write", relay_order[t], t);
    CHECK("baton: lock; cmpxchgl load", load_acq(&baton), threads);
    printf("asm_count: %s\n", ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
