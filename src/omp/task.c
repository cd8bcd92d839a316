/*
 * task.c — explicit tasks, run at once by the thread that meets them.
 *
 * OpenMP lets a task be executed immediately ("undeferred") by its
 * encountering thread; doing so always is a correct implementation, and on
 * a DSM it is also the one that never moves a task's private data between
 * nodes. taskwait and taskgroup then have nothing left to wait for, and
 * dependences are met by program order. (taskloop is not supported: it
 * fails to link.)
 */
#include <stdlib.h>

#include "base/log.h"
#include "omp/kmpc.h"

typedef kmp_int32 (*kmp_routine_entry_t)(kmp_int32, void *);

/* The head of clang's task object (kmp.h kmp_task_t); the compiler lays out
 * the privates after it and the shareds where `shareds` points. */
typedef struct kmp_task {
    void               *shareds;
    kmp_routine_entry_t routine;
    kmp_int32           part_id;
} kmp_task_t;

kmp_task_t *__kmpc_omp_task_alloc(ident_t *loc, kmp_int32 gtid, kmp_int32 flags,
                                  size_t sizeof_kmp_task_t, size_t sizeof_shareds,
                                  kmp_routine_entry_t task_entry)
{
    (void)loc, (void)gtid, (void)flags;
    /* The task, then its shareds, 16-byte aligned as libomp lays them. */
    size_t head = (sizeof_kmp_task_t + 15) & ~(size_t)15;
    kmp_task_t *t = calloc(1, head + sizeof_shareds + 16);
    if (!t)
        log_fatal("out of memory for an OpenMP task");
    t->shareds = sizeof_shareds ? (char *)t + head : NULL;
    t->routine = task_entry;
    return t;
}

kmp_int32 __kmpc_omp_task(ident_t *loc, kmp_int32 gtid, kmp_task_t *task)
{
    (void)loc;
    task->routine(gtid, task);
    free(task);
    return 0;
}

kmp_int32 __kmpc_omp_task_with_deps(ident_t *loc, kmp_int32 gtid, kmp_task_t *task,
                                    kmp_int32 ndeps, void *deps, kmp_int32 ndeps_noalias,
                                    void *noalias)
{
    (void)ndeps, (void)deps, (void)ndeps_noalias, (void)noalias;
    return __kmpc_omp_task(loc, gtid, task);
}

/* if(0) tasks: the compiler calls the routine itself between these. */
void __kmpc_omp_task_begin_if0(ident_t *loc, kmp_int32 gtid, kmp_task_t *task)
{
    (void)loc, (void)gtid, (void)task;
}

void __kmpc_omp_task_complete_if0(ident_t *loc, kmp_int32 gtid, kmp_task_t *task)
{
    (void)loc, (void)gtid;
    free(task);
}

void __kmpc_omp_wait_deps(ident_t *loc, kmp_int32 gtid, kmp_int32 ndeps, void *deps,
                          kmp_int32 ndeps_noalias, void *noalias)
{
    (void)loc, (void)gtid, (void)ndeps, (void)deps, (void)ndeps_noalias, (void)noalias;
}

kmp_int32 __kmpc_omp_taskwait(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    return 0;
}

kmp_int32 __kmpc_omp_taskyield(ident_t *loc, kmp_int32 gtid, int end_part)
{
    (void)loc, (void)gtid, (void)end_part;
    return 0;
}

void __kmpc_taskgroup(ident_t *loc, kmp_int32 gtid) { (void)loc, (void)gtid; }
void __kmpc_end_taskgroup(ident_t *loc, kmp_int32 gtid) { (void)loc, (void)gtid; }
