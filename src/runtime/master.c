/*
 * master.c — master-only start: the program's main runs on the master
 * alone, on a stack in the shared region; the other nodes wait for work
 * from the first instant (dsm.h, dsm_main).
 *
 * dsmcc links with -Wl,--wrap=main and libdsm-start.a, whose __wrap_main
 * calls dsm_main with the program's real main. On every node dsm_main joins
 * the job with shared globals; the workers then serve creates until the
 * master ends the job, and the master switches to a stack taken from the
 * top of its arena (homed there, with unallocated pages below it, so that
 * an overflow is a reported crash) and calls main. A local variable of main is thus
 * shared memory: its address, handed to a worker, means the same variable
 * there (OpenMP's shared locals need that).
 *
 * The job ends when main returns or anything calls exit: an exit handler,
 * registered before main so that it runs after the program's own, calls
 * dsm_finish while the program's handlers may still use shared memory;
 * dsm_finish then makes the globals and the stack plain memory for the
 * destructors that follow. That is main's ordinary end; an exit from
 * another thread, or while other threads run, ends the job at once
 * (exit.c).
 *
 * Faults on the region stack are handled on an alternate signal stack: the
 * kernel cannot push a signal frame onto a stack page the protocol has made
 * unreadable. The library's entry points that do protocol work move off the
 * region stack too (base/stack.h).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <ucontext.h>

#include "base/job.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/stack.h"
#include "base/state.h"
#include "mem/mem.h"
#include "omp/omp.h"
#include "runtime/runtime.h"

#define PRIVATE_GAP        (64u << 10) /* below dsm_main's frame: swapcontext's */

static DSM_STATE struct {
    ucontext_t caller, callee;
    int      (*fn)(int, char **, char **);
    int        argc;
    char     **argv, **envp;
    int        status;
} master;

static void run_main(void)
{
    master.status = master.fn(master.argc, master.argv, master.envp);
}

/* main's thread, alone in the program, ends the job in step with the
 * other nodes; any other exit ends it at once (exit.c). */
static void finish_at_exit(int status, void *arg)
{
    (void)arg;
    /* A forked child's exit is not the node's (forked.c); after
     * dsm_finish there is no job to end. */
    if (log_in_forked_child() || !job()->started)
        return;
    runtime_exit_handlers();
    if (!pthreads_main_alone())
        runtime_exit(status);
    if (status != 0) /* the program's own status: no line of the launcher's for it */
        log_said_to_launcher();
    dsm_finish();
}

int dsm_main(int argc, char **argv, char **envp, int (*main_fn)(int, char **, char **))
{
    struct runtime *r = rt();
    if (job()->started)
        log_fatal("dsm_main: the job has already started");
    r->share_globals = true;
    r->fork_asked = true;
    dsm_startup(&argc, &argv);
    r->master_only = true;
    /* Every node's: a worker's thread may call exit too. */
    if (on_exit(finish_at_exit, NULL) != 0)
        log_fatal("cannot register the job's end at exit");
    fork_begin(); /* the workers stay there */

    /* Faults on the region stack go to the alternate signal stack that
     * dsm_startup gave this thread (mem_fault_watch_thread). */
    r->main_stack_len = stack_shared_size();
    r->main_stack = mem_alloc_top(r->main_stack_len);
    if (PROFILE_ON)
        profile_alloc(PROF_ALLOC_STACK, r->main_stack, r->main_stack_len);
    /* The library runs below this frame on the process's own stack while
     * main is suspended on the shared one (base/stack.h). */
    stack_set_shared(r->main_stack, r->main_stack_len,
                     (char *)__builtin_frame_address(0) - PRIVATE_GAP);

    omp_before_main();
    master.fn = main_fn;
    master.argc = argc;
    master.argv = argv;
    master.envp = envp;
    if (getcontext(&master.callee) < 0)
        log_fatal("cannot switch to the shared stack");
    master.callee.uc_stack.ss_sp = r->main_stack;
    master.callee.uc_stack.ss_size = r->main_stack_len;
    master.callee.uc_link = &master.caller;
    makecontext(&master.callee, run_main, 0);
    if (swapcontext(&master.caller, &master.callee) < 0)
        log_fatal("cannot switch to the shared stack");
    exit(master.status); /* back on the process's own stack */
}
