/*
 * test_master_reserves — a master that reserves far more address space than
 * an even share of a small machine (SPLASH-3 Ocean's fixed-size arrays:
 * ~28 GiB from the master) works on 4 nodes with the default region, and
 * touches only what it uses; a reservation beyond a node's arena still ends
 * the job with "shared region exhausted".
 *
 *   test_master_reserves [GiB]   reserve GiB on the master (default 28)
 */
#include <stdio.h>
#include <stdlib.h>

#include <dsm.h>

static char *big;
static size_t big_len;
static long errors;

static void check(void *arg)
{
    (void)arg;
    size_t step = big_len / 8;
    for (size_t at = 0; at < big_len; at += step)
        if (big[at] != (char)(at / step + 1)) {
            dsm_lock(1);
            errors++;
            dsm_unlock(1);
        }
    char *mine = dsm_malloc(1 << 20); /* the workers' arenas still serve */
    mine[0] = 1;
    dsm_free(mine);
}

int main(int argc, char **argv)
{
    double gib = argc > 1 ? atof(argv[1]) : 28;
    big_len = (size_t)(gib * (1 << 30));
    big = dsm_malloc(big_len);
    size_t step = big_len / 8;
    for (size_t at = 0; at < big_len; at += step)
        big[at] = (char)(at / step + 1);
    dsm_create(check, NULL);
    dsm_wait_for_end();
    if (errors) {
        printf("master reserves %.0f GiB: %ld errors\n", gib, errors);
        return 1;
    }
    printf("master reserves %.0f GiB on %d nodes: ok\n", gib, dsm_nodes());
    return 0;
}
