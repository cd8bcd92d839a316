/*
 * omp_bounded_wait.h — waits of the OpenMP task tests that end: a thread
 * waits for a shared count with atomic reads, at most BOUND_MS, and a
 * wait that ran out sets gave_up, so that the other waits end at once
 * and the test fails a check instead of hanging. Included by one source
 * each (its own copy of gave_up).
 */
#ifndef OMP_BOUNDED_WAIT_H
#define OMP_BOUNDED_WAIT_H

#include <unistd.h>

#define BOUND_MS 30000 /* a bound, not a timing: a wait past it fails */

static int gave_up; /* a wait ran out: the others do not wait */

static int read_int(int *p)
{
    int v;
#pragma omp atomic read
    v = *p;
    return v;
}

static void add_int(int *p, int v)
{
#pragma omp atomic
    *p += v;
}

/* Until *p is at least v: whether it came within the bound. */
static int wait_for(int *p, int v)
{
    for (int ms = 0; ms < BOUND_MS; ms++) {
        if (read_int(p) >= v)
            return 1;
        if (read_int(&gave_up))
            return 0;
        usleep(1000);
    }
    add_int(&gave_up, 1);
    return 0;
}

#endif
