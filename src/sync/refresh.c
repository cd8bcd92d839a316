/*
 * refresh.c — a thread that runs a task another node made sees that
 * node's released writes without a flush of its own.
 *
 * OpenMP promises a thread another's writes only through a flush (an
 * atomic, a barrier, a lock). A program that polls a plain variable — a
 * task that spins until its creator clears a flag, as LLVM's
 * omp_fill_taskqueue does — relies on hardware coherence, which a
 * page-based DSM with write notices (hlrc, lrc) does not give: the
 * thief's copy of the flag's page stays valid and old, while the creator
 * waits for the thief's task. libomp runs such a program; so does dsm
 * while a thread runs a stolen task: every REFRESH_MS of the thread's CPU
 * time a timer interrupts it (CPU time: a thread asleep or blocked in a
 * system call is never interrupted, so a program's sleep is not cut
 * short), and when the interrupted instruction is the program's own
 * code (never the runtime's or the C library's, whose locks it may hold),
 * the handler pulls, as a flush's acquire half (flush.c, sync_pull),
 * every interval another node released that this node lacks — a page
 * they changed is invalidated and its next read fetches it. A fault's
 * catch-up pulls the same way from the same kind of place (a signal
 * handler on the thread's alternate stack). Under erc a release already
 * invalidates every copy, under sc every store is seen: nothing to do.
 *
 * Each pull doubles the thread's time to the next (up to REFRESH_MAX_MS,
 * and on from one stolen task to the next): a task that polls sees the
 * write within about the time the thread has already spent so, and a
 * thread that computes stolen tasks for seconds pulls a handful of times. What it
 * costs: a round trip to every node per pull, and the fetches of what changed,
 * which the task's end (a release and the creator's acquire) or the next
 * barrier would have brought anyway.
 */
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "base/job.h"
#include "base/log.h"
#include "base/state.h"
#include "coherence/coherence.h"
#include "sync/sync.h"

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

#define REFRESH_MS     50
#define REFRESH_MAX_MS 1600
#define REFRESH_SIGNAL (SIGRTMIN + 3)
#define TEXT_RANGES 8

/* The program's own code: the executable's executable segments. */
static DSM_STATE struct {
    uintptr_t lo[TEXT_RANGES], hi[TEXT_RANGES];
    int       n;
    bool      ready;
} text;
static DSM_STATE pthread_once_t once = PTHREAD_ONCE_INIT;

static __thread struct {
    timer_t timer;
    bool    made;   /* the thread's timer exists */
    int     depth;  /* sync_refresh_begin calls not ended */
    long    period; /* ms to the next tick */
} me;

static void arm(long ms)
{
    struct itimerspec every = {.it_value = {ms / 1000, (ms % 1000) * 1000000L},
                               .it_interval = {ms / 1000, (ms % 1000) * 1000000L}};
    timer_settime(me.timer, 0, &every, NULL); /* async-signal-safe */
}

static int first_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size, (void)arg;
    for (int i = 0; i < info->dlpi_phnum && text.n < TEXT_RANGES; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            text.lo[text.n] = info->dlpi_addr + ph->p_vaddr;
            text.hi[text.n] = text.lo[text.n] + ph->p_memsz;
            text.n++;
        }
    }
    return 1; /* the first object is the executable */
}

static bool in_program(uintptr_t pc)
{
    for (int i = 0; i < text.n; i++)
        if (pc >= text.lo[i] && pc < text.hi[i])
            return true;
    return false;
}

static uintptr_t interrupted_pc(const void *uctx)
{
    const ucontext_t *uc = uctx;
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.pc;
#else
    (void)uc;
    return 0;
#endif
}

static void on_tick(int sig, siginfo_t *si, void *uctx)
{
    (void)sig, (void)si;
    if (me.depth > 0 && in_program(interrupted_pc(uctx))) {
        sync_pull();
        if (me.period < REFRESH_MAX_MS)
            arm(me.period *= 2);
    }
}

static void setup(void)
{
    dl_iterate_phdr(first_object, NULL);
    struct sigaction sa = {.sa_sigaction = on_tick, .sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK};
    sigemptyset(&sa.sa_mask);
    text.ready = text.n > 0 && sigaction(REFRESH_SIGNAL, &sa, NULL) == 0;
}

void sync_refresh_begin(void)
{
    if (me.depth++ > 0 || !coh->apply_notices || job()->nodes <= 1)
        return;
    pthread_once(&once, setup);
    if (!text.ready)
        return;
    if (!me.made) {
        struct sigevent sev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = REFRESH_SIGNAL};
        sev.sigev_notify_thread_id = (pid_t)gettid();
        if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &me.timer) != 0)
            return; /* no timer: the task runs as it would without */
        me.made = true;
    }
    if (!me.period)
        me.period = REFRESH_MS;
    arm(me.period); /* the thread's period goes on from its last stolen task */
}

void sync_refresh_end(void)
{
    if (--me.depth > 0 || !me.made)
        return;
    struct itimerspec off = {{0, 0}, {0, 0}};
    timer_settime(me.timer, 0, &off, NULL);
}
