/*
 * null_deref.c — node 1 reads through a null pointer in a function of its
 * own, built with -g: its crash line must name the function and the line
 * (mem/fault.c, crash_at).
 */
#include <stdio.h>

#include "dsm.h"

/* noinline: the fault must be in this function, not inlined into main. */
__attribute__((noinline)) static int read_through(volatile int *p)
{
    return *p; /* the faulting line */
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    volatile int *nothing = NULL;
    if (dsm_rank() == 1)
        printf("%d\n", read_through(nothing));
    dsm_barrier();
    dsm_finish();
    return 0;
}
