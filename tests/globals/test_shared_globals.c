/*
 * test_shared_globals — plain globals are shared memory in a program built
 * with dsmcc (master-only start, shared globals), under every protocol.
 *
 * main runs once, on the master; it writes globals before the create, the
 * workers and the master then write and read globals in phases separated by
 * barriers and locks, and everyone checks what the others wrote:
 *   - initialised .data and .bss written by the master before dsm_create;
 *   - a .bss array written in blocks by every node, read by every node;
 *   - a global written by the master after the create, read after a barrier;
 *   - a pointer global set under a lock by whichever node arrives first;
 *   - a local variable of main, passed by address, written by the workers;
 *   - a counter of main's starts: main ran once;
 *   - a thread-local, written by every node: each keeps its own.
 * Exit status 0 when every check held on every node.
 */
#include <stdio.h>
#include <string.h>

#include <dsm.h>

#define WORDS (3 * 65536 / sizeof(long)) /* spans several coherence pages */
#define LOCK_COUNT 1
#define LOCK_ROOT  2

int  init_data = 42;                 /* .data */
long main_starts;                    /* .bss */
long before_create[16];
long after_create;
long blocks[WORDS];
long arrivals;
long *root;                          /* set by the first to arrive */
long root_target[64];
long errors;
long visits;
__thread long tl_rank = -1;    /* thread-local: private */

struct work { long *main_local; long expect_before; };

#define CHECK(cond) do { if (!(cond)) { fail(__LINE__, #cond); } } while (0)

static void fail(int line, const char *what)
{
    fprintf(stderr, "node %d: line %d: %s does not hold\n", dsm_rank(), line, what);
    dsm_lock(LOCK_COUNT);
    errors++;
    dsm_unlock(LOCK_COUNT);
}

static void phases(void *arg)
{
    struct work *w = arg;
    int me = dsm_rank(), n = dsm_nodes();
    tl_rank = me;

    /* Written by the master before the create. */
    CHECK(main_starts == 1);
    CHECK(init_data == 43);
    for (int i = 0; i < 16; i++)
        CHECK(before_create[i] == w->expect_before + i);

    /* Every node writes its block; all read all after a barrier. */
    size_t per = WORDS / (size_t)n;
    for (size_t i = (size_t)me * per; i < (size_t)(me + 1) * per; i++)
        blocks[i] = (long)i * 3 + me;
    /* A pointer set under a lock by the first to arrive. */
    dsm_lock(LOCK_ROOT);
    if (!root) {
        root = &root_target[me];
        *root = 1000 + me;
    }
    arrivals++;
    dsm_unlock(LOCK_ROOT);
    /* A local of main, by address. */
    if (me != 0)
        w->main_local[me] = 7 * me;
    dsm_barrier();

    for (int node = 0; node < n; node++)
        for (size_t i = (size_t)node * per; i < (size_t)(node + 1) * per; i += 97)
            CHECK(blocks[i] == (long)i * 3 + node);
    CHECK(arrivals == n);
    CHECK(root != NULL && root >= root_target && root < root_target + n &&
          *root == 1000 + (root - root_target));
    if (me == 0)
        after_create = 99;
    dsm_barrier();
    CHECK(after_create == 99);
    CHECK(tl_rank == me);
    for (int node = 1; node < n; node++)
        CHECK(w->main_local[node] == 7 * node);

    dsm_lock(LOCK_COUNT);
    visits++;
    dsm_unlock(LOCK_COUNT);
}

int main(int argc, char **argv)
{
    (void)argc, (void)argv;
    main_starts++;
    if (dsm_rank() != 0) {
        fprintf(stderr, "main ran on node %d\n", dsm_rank());
        return 1;
    }
    long main_local[64];
    memset(main_local, 0, sizeof main_local);
    init_data++;
    for (int i = 0; i < 16; i++)
        before_create[i] = 500 + i;
    struct work w = {.main_local = main_local, .expect_before = 500};

    dsm_create(phases, &w);
    phases(&w);
    dsm_wait_for_end();

    if (visits != dsm_nodes())
        fail(__LINE__, "every node ran the work once");
    if (errors) {
        printf("shared globals: %ld errors on %d nodes\n", errors, dsm_nodes());
        return 1;
    }
    printf("shared globals: all checks held on %d nodes\n", dsm_nodes());
    return 0;
}
