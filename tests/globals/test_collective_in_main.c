/*
 * test_collective_in_main.c — an SPMD program (every node meant to run
 * main: dsm_startup, then a barrier or a broadcast) built with dsmcc, where
 * only node 0 runs main and the others wait for work: the collective is
 * refused in one line instead of waiting for ever.
 *
 *   test_collective_in_main barrier|bcast|created
 *
 * created: the same barrier inside a dsm_create'd function, which every
 * node meets (the refusal must not touch it).
 */
#include <dsm.h>
#include <stdio.h>
#include <string.h>

static void work(void *arg)
{
    (void)arg;
    dsm_barrier();
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    const char *what = argc > 1 ? argv[1] : "barrier";
    if (!strcmp(what, "created")) {
        dsm_create(work, NULL);
        work(NULL);
        dsm_wait_for_end();
        printf("collective in a create: met on %d nodes\n", dsm_nodes());
    } else if (!strcmp(what, "bcast")) {
        int x = 42;
        dsm_bcast(&x, sizeof x, 0);
    } else {
        dsm_barrier();
    }
    dsm_finish();
    return 0;
}
