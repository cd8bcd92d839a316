/*
 * Thousands of lock-protected writes between two barriers: the barrier's
 * release (every interval of the epoch) and the lock grants grow beyond one
 * datagram, and must be reassembled and applied like small ones.
 */
#include "mp_util.h"

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 3000;
    uint64_t *c = NULL;
    if (dsm_rank() == 0)
        c = dsm_malloc(4096);
    dsm_bcast(&c, sizeof c, 0);
    for (int i = 0; i < iters; i++) {
        dsm_lock(1);
        (*c)++;
        dsm_unlock(1);
    }
    dsm_barrier();
    MP_CHECK(*c == (uint64_t)iters * (uint64_t)dsm_nodes(), "counter %llu", (unsigned long long)*c);
    if (dsm_rank() == 0)
        printf("large release: %d nodes x %d lock-protected increments, counter exact\n", dsm_nodes(), iters);
    dsm_finish();
    return 0;
}
