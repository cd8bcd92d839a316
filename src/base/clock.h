/* clock.h — monotonic time in nanoseconds. */
#ifndef DSM_BASE_CLOCK_H
#define DSM_BASE_CLOCK_H
#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Deadline `timeout` seconds from now; 0 means none (negative timeout). */
static inline uint64_t clock_deadline(double timeout)
{
    if (timeout < 0)
        return 0;
    return clock_ns() + (uint64_t)(timeout * 1e9);
}
#endif
