/*
 * omp_volatile_own.c — a volatile variable of a function's own, whose
 * address goes nowhere but its loads and stores (a benchmark's counter
 * the optimiser must keep), needs no flush: no other thread can see it,
 * and dsmcc calls the runtime for it no more (a flush each access made a
 * loop of 200,000 increments on the master's shared stack take minutes on
 * 2 nodes). One whose address leaves the function (passed to a call)
 * keeps its flushes. (A volatile local of main's shared in a region is
 * not one: clang's outlined region reads it without the qualifier.)
 * Built with -DONLY_OWN or -DONLY_ESCAPING, it holds one kind alone (the
 * build tests look for dsmcc's calls in its assembly); otherwise a
 * program that prints "PASSED: 0 failed" when every check passed.
 */
#include <omp.h>
#include <stdio.h>

#if !defined(ONLY_ESCAPING)
long own_counter(long n)
{
    volatile long s = 0;
    for (long i = 0; i < n; i++)
        s += i % 7;
    return s;
}
#endif

#if !defined(ONLY_OWN)
void set_flag(volatile int *f);
__attribute__((noinline)) void set_flag(volatile int *f) { *f = 1; }

int escaping(void)
{
    volatile int f = 0;
    set_flag(&f);
    return f;
}
#endif

#if !defined(ONLY_OWN) && !defined(ONLY_ESCAPING)
int main(void)
{
    int failed = 0, n = 0;
    long want = 0;
    for (long i = 0; i < 200000; i++)
        want += i % 7;
#pragma omp parallel shared(failed)
    {
#pragma omp master
        n = omp_get_num_threads();
        /* On every thread, the master's on its shared stack among them. */
        if (own_counter(200000) != want) {
#pragma omp atomic
            failed++;
            printf("FAILED: thread %d's own counter\n", omp_get_thread_num());
        }
    }
    if (escaping() != 1) {
        failed++;
        printf("FAILED: the escaping variable\n");
    }
    printf("threads %d\n", n);
    printf("PASSED: %d failed\n", failed);
    return failed != 0;
}
#endif
