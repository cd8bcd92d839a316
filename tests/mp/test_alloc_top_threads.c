/*
 * Blocks from the top of a node's arena (mem_alloc_top: the master's
 * stack, each OpenMP thread's shared stack) taken by several threads of a
 * node at once are all distinct: two threads of a node starting their
 * first region over the nodes together once got the same stack, because
 * the block's address was read after the allocator's lock was dropped.
 * THREADS threads a node each take ROUNDS one-page blocks as fast as they
 * can; every node checks that no two of its blocks are the same.
 */
#include <pthread.h>

#include "mem/mem.h"
#include "mp_util.h"

#define THREADS 4
#define ROUNDS  400

static void *blocks[THREADS][ROUNDS];
static pthread_barrier_t go;

static void *take(void *arg)
{
    void **mine = arg;
    pthread_barrier_wait(&go);
    for (int i = 0; i < ROUNDS; i++)
        mine[i] = mem_alloc_top(1);
    return NULL;
}

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    pthread_t t[THREADS];
    pthread_barrier_init(&go, NULL, THREADS);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, take, blocks[i]);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    void **all = &blocks[0][0];
    qsort(all, THREADS * ROUNDS, sizeof *all, by_address);
    size_t page = dsm_page_size();
    for (int i = 1; i < THREADS * ROUNDS; i++)
        MP_CHECK((uintptr_t)all[i] - (uintptr_t)all[i - 1] >= page,
                 "blocks %p and %p from the top of the arena overlap", all[i - 1], all[i]);
    dsm_barrier();
    if (dsm_rank() == 0)
        printf("%d blocks a node from the arena's top, %d threads at once: all distinct\n",
               THREADS * ROUNDS, THREADS);
    dsm_finish();
    return 0;
}
