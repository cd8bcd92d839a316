/*
 * omp_atomics.c — every kind of atomic operation is exact across nodes
 * (issue 38): dsmcc instruments each atomic instruction, and the runtime
 * runs it coherently. Every thread (one per node) adds to shared counters
 * through each kind — C11 _Atomic and <stdatomic.h>, the __atomic and
 * __sync builtins, OpenMP atomic update/read/write/capture, integer and
 * floating point, min/max, compare-and-swap loops — and the sums must be
 * exact. A hardware atomic on one node's copy of the page loses the other
 * nodes' updates. Tickets taken with fetch-and-add and with atomic capture
 * must be all distinct; a spin lock made of an atomic exchange and an
 * atomic store must carry a plain counter's writes from node to node (an
 * atomic is a release and an acquire in dsm terms). Prints
 * "PASSED: 0 failed" when every check passed.
 */
#include <omp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define ROUNDS 60
#define MAX_THREADS 64

static int failed;
static _Atomic long c11_add;
static atomic_int c11_sub;
static _Atomic unsigned char c11_byte;
static _Atomic short c11_short;
static _Atomic double c11_double;
static long builtin_add, builtin_cas;
static unsigned builtin_or;
static int sync_add, sync_cas;
static long omp_update, omp_capture_sum, omp_written;
static double omp_double;
static float omp_float_mul;
static int max_seen, min_seen;
static _Atomic int spin;
static long guarded; /* plain: the spin lock orders it */
/* Written by many nodes between the same barriers: whole words each, as
 * race-free data must be for a page-based DSM's word-granular diffs. */
static long ticket_seen[MAX_THREADS * ROUNDS];
static long capture_seen[MAX_THREADS * ROUNDS];
static atomic_int tickets;
static int capture_next;

static void check(int ok, const char *what)
{
    if (!ok) {
        failed++;
        printf("FAILED: %s\n", what);
    }
}

int main(void)
{
    int n = omp_get_max_threads();
    if (n > MAX_THREADS)
        n = MAX_THREADS;
    c11_sub = n * ROUNDS;
    c11_double = 0.5;
    omp_float_mul = 1.0f;
    min_seen = 1 << 30;
    /* A stack variable of main's: shared memory under dsmcc too. */
    atomic_long on_main_stack = 0;
#pragma omp parallel num_threads(n)
    {
        int me = omp_get_thread_num();
        for (int r = 0; r < ROUNDS; r++) {
            atomic_fetch_add(&c11_add, 2);
            atomic_fetch_sub_explicit(&c11_sub, 1, memory_order_relaxed);
            c11_byte++;
            c11_short += 3;
            c11_double += 1.0;
            atomic_fetch_add_explicit(&on_main_stack, 1, memory_order_release);
            __atomic_fetch_add(&builtin_add, 5, __ATOMIC_RELAXED);
            __atomic_fetch_or(&builtin_or, 1u << (me % 32), __ATOMIC_ACQ_REL);
            long seen = __atomic_load_n(&builtin_cas, __ATOMIC_ACQUIRE);
            while (!__atomic_compare_exchange_n(&builtin_cas, &seen, seen + 1, 1, __ATOMIC_SEQ_CST,
                                                __ATOMIC_RELAXED))
                ;
            __sync_fetch_and_add(&sync_add, 1);
            int old;
            do
                old = sync_cas;
            while (!__sync_bool_compare_and_swap(&sync_cas, old, old + 1));
            __atomic_fetch_max(&max_seen, me * 1000 + r, __ATOMIC_RELAXED);
            __atomic_fetch_min(&min_seen, me * 1000 + r, __ATOMIC_RELAXED);
#pragma omp atomic
            omp_update += 7;
#pragma omp atomic update
            omp_double += 0.25;
            if (r < 2 && me < 8) {
#pragma omp atomic
                omp_float_mul *= 2.0f;
            }
            int mine;
#pragma omp atomic capture
            mine = capture_next++;
            if (mine >= 0 && mine < n * ROUNDS)
                capture_seen[mine]++; /* distinct tickets: plain writes to distinct words */
            long after;
#pragma omp atomic capture
            {
                omp_capture_sum += 1;
                after = omp_capture_sum;
            }
            if (after < 1 || after > (long)n * ROUNDS)
                check(0, "omp atomic capture (block): a value never held");
            int t = atomic_fetch_add(&tickets, 1);
            if (t >= 0 && t < n * ROUNDS)
                ticket_seen[t]++;
            while (atomic_exchange_explicit(&spin, 1, memory_order_acquire))
                ;
            guarded++;
            atomic_store_explicit(&spin, 0, memory_order_release);
        }
        if (me == 0) {
#pragma omp atomic write
            omp_written = 42;
        }
    }
    long total = (long)n * ROUNDS;
    check(c11_add == 2 * total, "C11 atomic_fetch_add");
    check(c11_sub == 0, "C11 atomic_fetch_sub_explicit, relaxed");
    check(c11_byte == (unsigned char)total, "C11 _Atomic unsigned char ++");
    check(c11_short == (short)(3 * total), "C11 _Atomic short +=");
    check(c11_double == 0.5 + (double)total, "C11 _Atomic double += (a compare-and-swap loop)");
    check(on_main_stack == total, "C11 atomic on a variable of main's stack");
    check(builtin_add == 5 * total, "__atomic_fetch_add");
    unsigned bits = 0;
    for (int i = 0; i < n; i++)
        bits |= 1u << (i % 32);
    check(builtin_or == bits, "__atomic_fetch_or");
    check(builtin_cas == total, "__atomic_compare_exchange_n loop");
    check(sync_add == total, "__sync_fetch_and_add");
    check(sync_cas == total, "__sync_bool_compare_and_swap loop");
    check(max_seen == (n - 1) * 1000 + ROUNDS - 1, "__atomic_fetch_max");
    check(min_seen == 0, "__atomic_fetch_min");
    check(omp_update == 7 * total, "omp atomic update");
    check(omp_double == 0.25 * (double)total, "omp atomic on a double");
    check(omp_float_mul == (float)(1 << 2 * (n < 8 ? n : 8)), "omp atomic *= on a float");
    check(omp_capture_sum == total, "omp atomic capture (block)");
    long omp_read;
#pragma omp atomic read
    omp_read = omp_written;
    check(omp_read == 42, "omp atomic write, then read");
    int capture_ok = 1, ticket_ok = 1;
    for (long i = 0; i < total; i++) {
        capture_ok &= capture_seen[i] == 1;
        ticket_ok &= ticket_seen[i] == 1;
    }
    check(capture_next == total && capture_ok, "omp atomic capture: every ticket once");
    check(tickets == total && ticket_ok, "atomic_fetch_add: every ticket once");
    check(guarded == total, "a spin lock of atomics carries a plain counter's writes");
    printf("threads %d\n", n);
    printf("PASSED: %d failed\n", failed);
    return failed != 0;
}
