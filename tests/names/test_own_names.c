/*
 * test_own_names — a program may use any name libdsm uses inside (issue
 * 55). Linked with own_names.c, which defines every one of them as the
 * program's own (functions that abort when called, variables full of
 * 0x5A), it runs a fork-style job — a create, a lock-protected counter,
 * shared memory written by every node, barriers — and checks the counter,
 * the memory and that no variable of its own was written. With the
 * library's names exported (as before), the library called the program's
 * functions and read and wrote its variables.
 */
#include <stdio.h>
#include <stdlib.h>

#include <dsm.h>

extern unsigned char *const own_data[];
extern const char *const own_data_names[];
extern const int own_functions;

#define SLOTS 4096

struct shared {
    long counter;
    long slot[SLOTS];
};

static void work(void *arg)
{
    struct shared *s = arg;
    int me = dsm_rank(), n = dsm_nodes();
    for (int i = 0; i < 100; i++) {
        dsm_lock(1);
        s->counter++;
        dsm_unlock(1);
    }
    for (int i = me; i < SLOTS; i += n)
        s->slot[i] = 1000L * me + i;
    dsm_barrier();
    long bad = 0;
    for (int i = 0; i < SLOTS; i++)
        bad += s->slot[i] != 1000L * (i % n) + i;
    if (bad)
        printf("node %d: %ld slots wrong\n", me, bad);
    dsm_barrier();
}

int main(int argc, char **argv)
{
    dsm_startup_fork(&argc, &argv);
    int n = dsm_nodes();
    struct shared *s = dsm_malloc(sizeof *s);
    s->counter = 0;
    dsm_create(work, s);
    work(s);
    dsm_wait_for_end();
    int wrong = s->counter != 100L * n;
    if (wrong)
        printf("counter %ld, expected %ld\n", s->counter, 100L * n);
    int names = 0;
    for (int k = 0; own_data[k]; k++, names++)
        for (int b = 0; b < 64; b++)
            if (own_data[k][b] != 0x5A) {
                printf("the program's own %s was written\n", own_data_names[k]);
                wrong = 1;
                break;
            }
    if (!wrong)
        printf("%d nodes ran right beside %d functions and %d variables of the program's own "
               "named as libdsm's internals\n", n, own_functions, names);
    dsm_finish();
    return wrong;
}
