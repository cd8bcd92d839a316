/*
 * exit.c — a dsmcc program's exit, from any thread on any node, ends the
 * whole job with the program's status.
 *
 * To its author the program is one process: exit (main's return
 * included) from any thread ends every thread with that status, after
 * the exit handlers have run once, in the calling process (POSIX, exit).
 *
 * The ordinary end — main's thread on node 0, with no other thread of
 * the program left — is dsm_finish's, which every node takes in step
 * (statistics, trace and profile, file mappings written back, the
 * transport's last acknowledgements; runtime.c). Any other exit cannot
 * be: the caller's other threads, and those of the other nodes, are
 * blocked in the protocol or computing, and tearing the transport, the
 * locks and the page table down under them ended the job with whatever
 * they met first (a futex in freed memory: SIGABRT; a closed socket:
 * "cannot receive from the network: Bad file descriptor"; 4 runs in 5 of
 * a thread's exit(3) on node 1 with --threads 2). Such an exit ends the
 * job as the kernel ends a process, tearing nothing down:
 *  - the calling node claims its end (log_claim_end: a failure met on it
 *    from then on is not reported, the end being decided), writes its
 *    streams and the program's shared file mappings out;
 *  - it tells every other node the status (RUNTIME_END) and waits for
 *    their answers (RUNTIME_END_SEEN), at most half the peer timeout: a
 *    node answers and ends, so an answer lost with it must not become a
 *    peer's failure;
 *  - a node told claims its end too, answers, writes out stdout and ends
 *    with the status; the caller ends likewise once answered. A node's
 *    threads end with its process, wherever they were.
 * Each node tells the launcher that it finished and, with a status other
 * than 0, that the status needs no line of the launcher's: the job ends
 * with the program's status and prints nothing of its own. What only the
 * collective end writes (--stats, DSM_TRACE, DSM_PROFILE) is not written,
 * and the exit handlers registered before main (C++'s static
 * destructors) do not run: as after quick_exit, since other threads may
 * still use what they would destroy.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "base/stack.h"
#include "base/state.h"
#include "ipc/ipc.h"
#include "sync/sync.h"
#include "runtime/bootstrap.h"
#include "base/launch.h"
#include "runtime/runtime.h"

/* ---- the program's exit handlers ------------------------------------------- */

/* Handlers registered once the job runs are the job's: main registers
 * them on node 0, and a thread on another node may call exit, whose C
 * library knows none of them. So dsmcc's atexit puts them in the shared
 * table, and the exit that ends the job runs them on the calling thread,
 * last first (finish_at_exit, master.c, itself registered before main). */
struct atexit_call { void (*fn)(void); int ret; };

static void add_call(void *arg)
{
    struct atexit_call *c = arg;
    struct pthread_atexit *t = pthreads_atexit(true);
    sync_pthread_lock(SYNC_PTHREAD_ATEXIT_ID);
    c->ret = t->n < PTHREAD_ATEXIT_MAX ? 0 : -1; /* POSIX: nonzero when it cannot */
    if (!c->ret)
        t->fn[t->n++] = (uint64_t)(uintptr_t)c->fn;
    sync_pthread_unlock(SYNC_PTHREAD_ATEXIT_ID);
}

int dsm_atexit(void (*fn)(void))
{
    if (!pthreads_atexit(true))
        return atexit(fn);
    struct atexit_call c = {fn, 0};
    stack_private(add_call, &c);
    return c.ret;
}

static void take_call(void *arg)
{
    struct atexit_call *c = arg;
    struct pthread_atexit *t = pthreads_atexit(false);
    sync_pthread_lock(SYNC_PTHREAD_ATEXIT_ID);
    c->fn = t->n ? (void (*)(void))(uintptr_t)t->fn[--t->n] : NULL;
    sync_pthread_unlock(SYNC_PTHREAD_ATEXIT_ID);
}

/* Each runs once, though it may register more (they run too). */
void runtime_exit_handlers(void)
{
    if (!pthreads_atexit(false))
        return;
    for (;;) {
        struct atexit_call c = {NULL, 0};
        stack_private(take_call, &c);
        if (!c.fn)
            return;
        c.fn();
    }
}

/* ---- the job's end ------------------------------------------------------------ */

static DSM_STATE struct {
    atomic_bool exiting; /* this node's program called exit: it ends the job */
    atomic_int  seen;    /* nodes that answered its RUNTIME_END */
} ending;

/* The launcher hears that this node finished, and that the status is
 * the program's own (BOOT_LIFE_SAID: no line of dsmrun's for it). */
static void tell_launcher(int status)
{
    if (status != 0)
        log_said_to_launcher();
    boot_tell_launcher(BOOT_LIFE_FINISHED);
}

static bool all_seen(void *arg)
{
    (void)arg;
    return atomic_load(&ending.seen) >= job()->nodes - 1;
}

struct end_call { int status; };

static void end_here(void *arg)
{
    int status = ((struct end_call *)arg)->status;
    atomic_store(&ending.exiting, true);
    if (!log_claim_end()) /* a failure, or another node's end, ends this node already */
        for (;;)
            pause();
    fflush(NULL);
    mmap_write_back();
    uint32_t code = (uint32_t)status & 0xff;
    for (int i = 0; i < job()->nodes; i++)
        if (i != job()->rank)
            ipc_send(i, RUNTIME_END, code, NULL, 0);
    double wait_s = job()->cfg.peer_timeout_s / 2;
    if (job()->nodes > 1)
        ipc_wait(all_seen, NULL, clock_ns() + (uint64_t)(wait_s * 1e9));
    tell_launcher(status);
    _exit(status);
}

void runtime_exit(int status)
{
    struct end_call c = {status};
    stack_private(end_here, &c);
    _exit(status); /* not reached: end_here ends the process */
}

/* Another node's program called exit. Its end is this node's too: the
 * delivery thread answers and ends the process, whatever the program's
 * threads here are doing. A node whose own program is exiting answers
 * and goes on with its own end. */
static void on_end(int src, const void *msg, size_t len)
{
    (void)len;
    int status = (int)(ipc_msg_aux(msg) & 0xff);
    if (!log_claim_end()) {
        if (atomic_load(&ending.exiting))
            ipc_send(src, RUNTIME_END_SEEN, 0, NULL, 0);
        return;
    }
    ipc_send(src, RUNTIME_END_SEEN, 0, NULL, 0);
    /* stdout's lock may be held by a program thread that faults; its
     * pages will not come now. */
    if (ftrylockfile(stdout) == 0) {
        fflush_unlocked(stdout);
        funlockfile(stdout);
    }
    tell_launcher(status);
    _exit(status);
}

static void on_end_seen(int src, const void *msg, size_t len)
{
    (void)src, (void)msg, (void)len;
    atomic_fetch_add(&ending.seen, 1);
    ipc_notify();
}

void exit_start(void)
{
    ipc_register(RUNTIME_END, "END", on_end, NULL);
    ipc_register(RUNTIME_END_SEEN, "END_SEEN", on_end_seen, NULL);
}
