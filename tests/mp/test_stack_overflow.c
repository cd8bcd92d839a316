/*
 * A stack overflow on a node is a reported crash that says so, with its
 * address — as every other crash is — not a bare "killed by signal 11":
 * the node's thread takes the fault on an alternate signal stack, and a
 * fault at the end of its stack is named a stack overflow.
 *   recurse  node 1 recurses without end (1 KiB frames);
 *   array    node 1 calls a function whose local array is larger than the
 *            whole stack (64 MiB under `ulimit -s 8192`): it faults far
 *            below the stack's end, with the stack pointer past it.
 * The other nodes wait in a barrier that never completes; the launcher
 * stops them once node 1 has died. Reaching the end is a failure.
 * Usage: test_stack_overflow recurse|array
 */
#include "mp_util.h"

__attribute__((noinline)) static int deep(volatile char *up, long n)
{
    volatile char frame[1024];
    frame[0] = (char)n;
    frame[1023] = up ? up[0] : 0;
    if (n > (1l << 40)) /* never: keeps the recursion finite to the compiler */
        return 0;
    return deep(frame, n + 1) + frame[512];
}

__attribute__((noinline)) static int huge_frame(void)
{
    volatile char big[64 << 20];
    big[0] = 1;
    big[sizeof big - 1] = 2;
    return big[0] + big[sizeof big - 1];
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    MP_CHECK(argc > 1, "usage: test_stack_overflow recurse|array");
    MP_CHECK(dsm_nodes() >= 2, "needs 2 nodes");
    dsm_barrier();
    if (dsm_rank() == 1) {
        int r = !strcmp(argv[1], "recurse") ? deep(NULL, 0) : huge_frame();
        fprintf(stderr, "node 1: no overflow (%d)\n", r);
        exit(3);
    }
    dsm_barrier();
    return 3;
}
