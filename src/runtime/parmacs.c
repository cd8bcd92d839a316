/*
 * parmacs.c — what the PARMACS macros (include/dsm/parmacs.m4) call: one
 * process per node, the master's the first.
 *
 * CREATE(fn) starts fn on the next node; CREATE(fn, n) on every other node
 * and then in the caller. A program's process count must be the job's node
 * count, since a barrier takes every node: a BARRIER or CREATE(fn, n) for
 * another count, or WAIT_FOR_END after another number of creates, ends the
 * job with both numbers and the fix. A CREATE beyond the last node is only
 * counted: the program's next BARRIER or WAIT_FOR_END names its count.
 */
#include <pthread.h>

#include "base/job.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/smp.h"
#include "base/state.h"
#include "runtime/runtime.h"
#include "dsm/parmacs.h"

static DSM_STATE struct {
    pthread_mutex_t lock;
    int             created;    /* at the master: nodes given a process */
    int             excess;     /* at the master: creates beyond the last node */
    int             next_id;    /* this node's lock and condition ids handed out */
} pm = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Ids 0x40000000-0x5fffffff, node-major, so that LOCKINIT on any node
 * needs no communication; above pthreads' (sync.h), inside the range
 * dsm.h gives programs, which it tells a program that mixes PARMACS with
 * its own dsm_lock ids to keep below 0x20000000. */
#define PM_ID_BASE  (1 << 30)
#define PM_ID_SPAN  (1 << 21)

__attribute__((noreturn)) static void wrong_count(const char *what, int procs)
{
    log_fatal("the program %s %d processes but the job has %d nodes; run it with dsmrun -n %d "
              "(one process per node)", what, procs, job()->nodes, procs);
}

void dsm_parmacs_init(void)
{
    if (!rt()->master_only)
        log_fatal("a PARMACS program needs master-only start: build it with dsmcc");
    if (smp_multi())
        log_fatal("a PARMACS program with DSM_THREADS=%d (dsmrun --threads): its CREATEs start "
                  "processes, one per node; run it with --threads 1", smp_threads());
}

void dsm_parmacs_create(void (*fn)(void *))
{
    dsm_parmacs_init();
    if (pm.created + 1 >= job()->nodes) {
        pm.excess++; /* the job ends at the next BARRIER or WAIT_FOR_END */
        return;
    }
    fork_create_on(++pm.created, fn, NULL);
}

void dsm_parmacs_create_all(void (*fn)(void *), int procs)
{
    dsm_parmacs_init();
    if (procs != job()->nodes)
        wrong_count("runs", procs);
    if (pm.created)
        log_fatal("CREATE(fn, n) after other CREATEs: the nodes are taken");
    pm.created = procs - 1;
    dsm_create(fn, NULL);
    fn(NULL);
}

void dsm_parmacs_wait_for_end(void)
{
    if (pm.created + pm.excess != job()->nodes - 1)
        wrong_count("runs", pm.created + pm.excess + 1);
    dsm_wait_for_end();
    pm.created = 0;
}

void dsm_parmacs_barrier(int procs)
{
    PROFILE_SITE();
    if (procs != job()->nodes || pm.excess)
        wrong_count("runs", pm.excess ? pm.created + pm.excess + 1 : procs);
    dsm_barrier();
}

int dsm_parmacs_ids(int count)
{
    pthread_mutex_lock(&pm.lock);
    int first = pm.next_id;
    pm.next_id += count;
    pthread_mutex_unlock(&pm.lock);
    if (count < 1 || first + count > PM_ID_SPAN || job()->rank >= 256)
        log_fatal("PARMACS: out of lock ids (%d asked for, %d in use on this node)", count, first);
    return PM_ID_BASE + job()->rank * PM_ID_SPAN + first;
}
