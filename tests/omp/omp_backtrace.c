/*
 * omp_backtrace.c — a walk of the call stack from inside a parallel
 * region crosses dsm's stack switch (src/base/stack.c, stack_call_on).
 *
 * Every thread of a team over several nodes runs the region on a shared
 * stack of its own, reached from its process's own stack by a switch of
 * the stack pointer. An unwinder (glibc's backtrace(), as the sharing
 * profile samples call stacks with; a debugger; a C++ exception) must
 * step back across that switch to the thread's own stack, down to the C
 * library's first frame of the thread (start_thread, or main's caller),
 * and must never read outside either stack: when the switch's unwind
 * information described the frame on the new stack, the walk read above
 * the shared stack's top, which for the last node's threads is the end
 * of the region, and every OpenMP program on 2 nodes under --profile
 * ended with a segmentation fault there.
 *
 * Each thread walks its stack inside the region (and inside a task,
 * which may run on another node than its creator's) and checks that the
 * walk ends in the C library. Prints "PASSED: 0 failed".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#define FRAMES 256

static int failed;

/* Whether the walk from here reaches a frame of the C library after the
 * caller's: the thread's first frames are the C library's. */
static __attribute__((noinline)) int walk_reaches_libc(const char *where)
{
    void *f[FRAMES];
    int n = backtrace(f, FRAMES);
    int found = 0;
    for (int i = 1; i < n && !found; i++) {
        Dl_info d;
        if (dladdr(f[i], &d) && d.dli_fname && strstr(d.dli_fname, "libc.so"))
            found = 1;
    }
    if (!found)
        printf("%s: thread %d's walk of %d frames never reached the C library\n", where,
               omp_get_thread_num(), n);
    return found;
}

int main(void)
{
    int threads = 0;
#pragma omp parallel
    {
#pragma omp single
        threads = omp_get_num_threads();
        if (!walk_reaches_libc("region")) {
#pragma omp atomic
            failed++;
        }
#pragma omp single
        for (int t = 0; t < 4 * threads; t++) {
#pragma omp task
            if (!walk_reaches_libc("task")) {
#pragma omp atomic
                failed++;
            }
        }
    }
    printf("threads %d\n", threads);
    printf("PASSED: %d failed\n", failed);
    return failed != 0;
}
