/*
 * signals.c — a dsmcc program's signal dispositions are the job's
 * (include/dsm/pthread.h; docs/unmodified-programs.md, "Signals").
 *
 * A disposition (sigaction, signal) is a process's: one installed by main
 * holds in every thread. Its threads here run in a process per node, so a
 * handler main installs reaches node 0 alone, and a thread on another
 * node that raises the signal (raise, kill of its own process, alarm)
 * would die of its default action. So the program's sigaction installs
 * the disposition here and sends it to every other node, whose delivery
 * thread installs it too (a handler's address is the same on every node:
 * dsmrun starts them without address-space randomisation). Messages to a
 * node keep their order, so a handler installed before a pthread_create
 * is there when the thread starts. dsm's own threads block the signals a
 * program may send (smp_internal_thread), so a signal goes to a program
 * thread of the node it was sent to.
 *
 * SIGSEGV is dsm's: the program's handler is kept for the faults outside
 * the shared region (mem_fault_chain), and dsm's stays installed; before,
 * installing one replaced dsm's, and the next fault on shared memory went
 * to the program.
 */
#include <dsm/pthread.h>
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "base/job.h"
#include "base/log.h"
#include "ipc/ipc.h"
#include "mem/mem.h"
#include "sync/sync.h"
#include "runtime/runtime.h"

struct sig_msg {
    int32_t  sig;
    int32_t  flags;
    uint64_t handler;             /* sa_handler or sa_sigaction */
    unsigned char mask[sizeof(sigset_t)];
};

static bool job_wide(void) { return sync_pthreads_on && job()->started && job()->nodes > 1; }

static void on_sigaction(int src, const void *msg, size_t len)
{
    struct sig_msg m;
    ipc_body(src, msg, len, &m, sizeof m, NULL, "sigaction");
    if (m.sig <= 0 || m.sig >= NSIG || m.sig == SIGKILL || m.sig == SIGSTOP)
        log_fatal("node %d sent a signal disposition that does not fit this job", src);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    if (m.flags & SA_SIGINFO)
        sa.sa_sigaction = (void (*)(int, siginfo_t *, void *))(uintptr_t)m.handler;
    else
        sa.sa_handler = (void (*)(int))(uintptr_t)m.handler;
    sa.sa_flags = m.flags;
    memcpy(&sa.sa_mask, m.mask, sizeof sa.sa_mask);
    if (m.sig == SIGSEGV)
        mem_fault_chain(&sa, NULL);
    else
        sigaction(m.sig, &sa, NULL);
}

int dsm_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    int rc = 0;
    if (sig == SIGSEGV && mem.base && job()->started)
        mem_fault_chain(act, old);
    else
        rc = sigaction(sig, act, old);
    if (rc || !act || !job_wide())
        return rc;
    struct sig_msg m = {.sig = sig, .flags = act->sa_flags,
                        .handler = act->sa_flags & SA_SIGINFO ? (uint64_t)(uintptr_t)act->sa_sigaction
                                                              : (uint64_t)(uintptr_t)act->sa_handler};
    memcpy(m.mask, &act->sa_mask, sizeof m.mask);
    for (int n = 0; n < job()->nodes; n++)
        if (n != job()->rank) {
            int err = ipc_send(n, RUNTIME_SIGACTION, 0, &m, sizeof m);
            if (err)
                log_fatal("sigaction(%d): cannot reach node %d: %s", sig, n, strerror(-err));
        }
    return 0;
}

/* signal(): glibc's BSD semantics (SA_RESTART, the handler kept). */
void (*dsm_signal(int sig, void (*handler)(int)))(int)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sig > 0 && sig < NSIG)
        sigaddset(&sa.sa_mask, sig);
    if (dsm_sigaction(sig, &sa, &old))
        return SIG_ERR;
    return (old.sa_flags & SA_SIGINFO) ? (void (*)(int))(uintptr_t)old.sa_sigaction : old.sa_handler;
}

void signals_start(void)
{
    ipc_register(RUNTIME_SIGACTION, "SIGACTION", on_sigaction, NULL);
}
