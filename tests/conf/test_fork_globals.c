/*
 * Fork style: the master alone runs main; dsm_create runs a function on
 * every other node, which starts from the master's global variables as they
 * are at that call.
 *  - the master sets globals (an int, an array, a struct, a pointer to
 *    shared memory it has filled) and creates `check`; every worker checks
 *    that it sees those values, and that shared memory written by the master
 *    before the create is visible (a create is a release/acquire);
 *  - right after dsm_create returns, before the workers may have run, the
 *    master changes the globals: the workers must still see the values of
 *    the call (a copy, not a share);
 *  - each worker writes its results into shared memory (arg points there);
 *    the master reads them after dsm_wait_for_end, which is a
 *    synchronisation point;
 *  - further creates with new values (three in all): the workers see the
 *    new values, and a change a worker made to its own copy of a global in
 *    the previous run is gone (the master's globals replace it);
 * A global array of MAX_WORDS longs (512 KiB) makes each create carry a
 * large copy of the globals; `array_words` is how much of it is checked.
 * Usage: test_fork_globals [array_words]
 */
#include "mp_util.h"

#define MAX_WORDS 65536

struct config {
    int    generation;
    int    shared_generation;   /* of the values in g_shared */
    double scale;
    char   name[32];
    long   words;
};

struct results {
    int64_t seen_generation[MP_MAX_NODES];
    int64_t seen_int[MP_MAX_NODES];
    int64_t array_sum[MP_MAX_NODES];
    int64_t shared_sum[MP_MAX_NODES];
    int64_t ran[MP_MAX_NODES];
    int64_t node_count[MP_MAX_NODES];
};

int               g_int;                  /* .bss */
int               g_initialised = 12345;  /* .data */
long              g_array[MAX_WORDS];
struct config     g_config = {.name = "initial"};
int64_t          *g_shared;               /* points into shared memory */
static int        g_worker_writes;        /* each worker changes its own copy */

static int64_t array_value(int gen, long i) { return (int64_t)gen * 1000003 + i * 13; }
static int64_t shared_value(int gen, long i) { return (int64_t)gen * 7 + i * 5 + 1; }

static void check(void *arg)
{
    struct results *res = arg;
    int me = dsm_rank(), gen = g_config.generation;
    MP_CHECK(g_int == gen * 100, "generation %d: g_int = %d, expected %d", gen, g_int, gen * 100);
    MP_CHECK(g_initialised == 12345 + gen, "generation %d: g_initialised = %d", gen, g_initialised);
    MP_CHECK(g_config.scale == 0.5 * gen, "generation %d: g_config.scale = %g", gen, g_config.scale);
    char name[32];
    snprintf(name, sizeof name, "generation-%d", gen);
    MP_CHECK(strcmp(g_config.name, name) == 0, "generation %d: g_config.name = \"%s\"", gen,
             g_config.name);
    MP_CHECK(g_worker_writes == 0, "generation %d: this node's own change of the last run "
             "survived the create (%d)", gen, g_worker_writes);
    int64_t asum = 0, ssum = 0;
    for (long i = 0; i < g_config.words; i++) {
        MP_CHECK(g_array[i] == array_value(gen, i), "generation %d: g_array[%ld] = %ld", gen, i,
                 g_array[i]);
        MP_CHECK(g_shared[i] == shared_value(g_config.shared_generation, i),
                 "generation %d: g_shared[%ld] = %lld, expected %lld", gen, i,
                 (long long)g_shared[i], (long long)shared_value(g_config.shared_generation, i));
        asum += g_array[i];
        ssum += g_shared[i];
    }
    g_worker_writes = me; /* must not reach the next create */
    res->seen_generation[me] = gen;
    res->seen_int[me] = g_int;
    res->array_sum[me] = asum;
    res->shared_sum[me] = ssum;
    res->ran[me]++;
    res->node_count[me] = dsm_nodes();
}

/* The master's globals for run `gen`; shared memory too when `shared`. */
static void set_globals(int gen, int shared)
{
    g_int = gen * 100;
    g_initialised = 12345 + gen;
    g_config.generation = gen;
    g_config.scale = 0.5 * gen;
    snprintf(g_config.name, sizeof g_config.name, "generation-%d", gen);
    for (long i = 0; i < g_config.words; i++)
        g_array[i] = array_value(gen, i);
    if (shared) {
        g_config.shared_generation = gen;
        for (long i = 0; i < g_config.words; i++)
            g_shared[i] = shared_value(gen, i);
    }
}

int main(int argc, char **argv)
{
    dsm_startup_fork(&argc, &argv); /* returns on the master only */
    MP_CHECK(dsm_rank() == 0, "dsm_startup_fork returned on node %d", dsm_rank());
    int n = dsm_nodes();
    long words = argc > 1 ? atol(argv[1]) : 4096;
    MP_CHECK(n <= MP_MAX_NODES && words >= 1 && words <= MAX_WORDS, "at most %d nodes and %d words",
             MP_MAX_NODES, MAX_WORDS);
    g_config.words = words;
    g_shared = dsm_malloc((size_t)words * sizeof *g_shared);
    struct results *res = dsm_malloc(sizeof *res);

    for (int gen = 1; gen <= 3; gen++) {
        set_globals(gen, 1);
        dsm_create(check, res);
        /* Too late for this run: the workers have their copy already. */
        g_int = -1;
        g_config.generation = -1;
        for (long i = 0; i < words; i += 64)
            g_array[i] = -1;
        dsm_wait_for_end();
        int64_t asum = 0, ssum = 0;
        for (long i = 0; i < words; i++) {
            asum += array_value(gen, i);
            ssum += shared_value(gen, i);
        }
        for (int j = 1; j < n; j++) {
            MP_CHECK(res->ran[j] == gen, "after run %d, node %d ran %lld times", gen, j,
                     (long long)res->ran[j]);
            MP_CHECK(res->seen_generation[j] == gen && res->seen_int[j] == gen * 100,
                     "run %d: node %d saw generation %lld, g_int %lld", gen, j,
                     (long long)res->seen_generation[j], (long long)res->seen_int[j]);
            MP_CHECK(res->array_sum[j] == asum && res->shared_sum[j] == ssum,
                     "run %d: node %d's sums %lld, %lld, expected %lld, %lld", gen, j,
                     (long long)res->array_sum[j], (long long)res->shared_sum[j],
                     (long long)asum, (long long)ssum);
            MP_CHECK(res->node_count[j] == n, "node %d counted %lld nodes", j,
                     (long long)res->node_count[j]);
        }
    }
    /* A second dsm_create before dsm_wait_for_end is refused (dsm.h;
     * tests/globals/test_create_per_worker.c): a create per phase. */
    printf("fork_globals: %d nodes, 3 creates with %ld-word globals and shared data: ok\n", n,
           words);
    dsm_finish();
    return 0;
}
