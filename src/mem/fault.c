/*
 * fault.c — the SIGSEGV handler.
 *
 * A fault on the shared region is the protocol's business: the handler asks
 * the coherence layer to make the page readable or writable and returns, and
 * the faulting instruction runs again. Any other fault is a real crash and
 * is reported as one, with its address, before the process dies of it (so
 * the launcher reports the signal too) — unless a handler was installed
 * before ours: a fault outside the region then goes to it, so that a
 * program or tool that catches faults on its own memory (guard pages, a
 * crash reporter) works as it did without dsm.
 *
 * Read or write comes from the page-fault error code on x86-64; elsewhere a
 * fault on an invalid page is taken as a read, and a write then faults again
 * on the read-only page.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "base/log.h"
#include "base/profile.h"
#include "base/stack.h"
#include "base/state.h"
#include "base/stats.h"
#include "base/trace.h"
#include "mem/mem.h"

static DSM_STATE const struct mem_fault_ops *fault_ops;
static DSM_STATE struct sigaction previous; /* the handler before ours */

/* async-signal-safe formatting: "dsm: node R: segmentation fault at 0xADDR (why)\n"
 * (room for a path and a source line after it: crash_at) */
#define DIE_LINE_MAX 2048
static size_t put_str(char *buf, size_t at, const char *s)
{
    while (*s && at < DIE_LINE_MAX - 1)
        buf[at++] = *s++;
    return at;
}

static size_t put_num(char *buf, size_t at, uint64_t v, unsigned base)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v && n < 24);
    while (n && at < DIE_LINE_MAX - 1)
        buf[at++] = tmp[--n];
    return at;
}

/* Writes "dsm: node R: WHAT at 0xADDR" and the strings of `tail` (up to a
 * NULL), and dies of `sig` itself, so the launcher says how we died. */
__attribute__((noreturn)) static void die_of(int sig, const char *what, void *addr,
                                             const char *const *tail)
{
    char buf[DIE_LINE_MAX];
    size_t at = put_str(buf, 0, "dsm: node ");
    at = put_num(buf, at, (uint64_t)(log_rank() < 0 ? 0 : log_rank()), 10);
    at = put_str(buf, at, ": ");
    at = put_str(buf, at, what);
    at = put_str(buf, at, " at 0x");
    at = put_num(buf, at, (uint64_t)(uintptr_t)addr, 16);
    for (; *tail; tail++)
        at = put_str(buf, at, *tail);
    at = put_str(buf, at, "\n");
    if (write(STDERR_FILENO, buf, at) < 0) {
        /* nothing more can be done */
    }
    log_said_to_launcher(); /* so dsmrun adds no second line about it */
    signal(sig, SIG_DFL);
    raise(sig);
    _exit(128 + sig);
}

static uint64_t parse_hex(const char **p)
{
    uint64_t v = 0;
    for (;; (*p)++) {
        char c = **p;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return v;
        v = v * 16 + (uint64_t)d;
    }
}

/* The object file holding pc, and pc as an address in it (what addr2line
 * takes: from the object's load address, or pc itself in a program not
 * position-independent), from /proc/self/maps: open and read only, as a
 * signal handler may. */
static bool code_place(uintptr_t pc, char *obj, size_t objlen, uint64_t *rel)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char chunk[4096], line[PATH_MAX + 128], base_path[PATH_MAX] = "";
    size_t used = 0;
    uint64_t base = 0;
    bool found = false;
    ssize_t n;
    while (!found && (n = read(fd, chunk, sizeof chunk)) > 0) {
        for (ssize_t i = 0; i < n && !found; i++) {
            if (chunk[i] != '\n') {
                if (used < sizeof line - 1)
                    line[used++] = chunk[i];
                continue;
            }
            line[used] = 0;
            used = 0;
            /* start-end perms offset dev inode path */
            const char *p = line;
            uint64_t start = parse_hex(&p);
            p++;
            uint64_t end = parse_hex(&p);
            p += 6;
            uint64_t offset = parse_hex(&p);
            const char *path = strchr(p, '/');
            if (!path)
                continue;
            if (offset == 0) {
                base = start;
                size_t k = 0;
                for (; path[k] && k < sizeof base_path - 1; k++)
                    base_path[k] = path[k];
                base_path[k] = 0;
            }
            if (pc < start || pc >= end || strcmp(path, base_path))
                continue;
            const Elf64_Ehdr *h = (const Elf64_Ehdr *)(uintptr_t)base;
            *rel = h->e_type == ET_EXEC ? pc : pc - base;
            size_t k = 0;
            for (; path[k] && k < objlen - 1; k++)
                obj[k] = path[k];
            obj[k] = 0;
            found = true;
        }
    }
    close(fd);
    return found;
}

/* addr2line's "FUNCTION at FILE:LINE" for rel in obj, into out ("" if it
 * is not installed or says nothing): a child that only execs it, made
 * with the raw system call, so that no fork handler of the program or of
 * a library runs in a process that crashed. */
static void code_line(const char *obj, uint64_t rel, char *out, size_t len)
{
    static const char *const tools[] = {"/usr/bin/addr2line", "/bin/addr2line",
                                        "/usr/local/bin/addr2line"};
    char hex[24] = "0x";
    hex[put_num(hex, 2, rel, 16)] = 0;
    int fds[2];
    out[0] = 0;
    if (pipe2(fds, O_CLOEXEC) < 0)
        return;
    pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, STDERR_FILENO);
        char *argv[] = {"addr2line", "-f", "-C", "-p", "-e", (char *)obj, hex, NULL};
        char *envp[] = {"LC_ALL=C", NULL};
        for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
            execve(tools[i], argv, envp);
        _exit(127);
    }
    close(fds[1]);
    size_t got = 0;
    struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
    /* A large program's debug information takes addr2line a moment. */
    while (pid > 0 && got < len - 1 && poll(&pfd, 1, 10000) == 1) {
        ssize_t r = read(fds[0], out + got, len - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fds[0]);
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    out[got] = 0;
    out[strcspn(out, "\n")] = 0; /* the innermost of an inlined chain */
    if (!strncmp(out, "?? ", 3))
        out[0] = 0;
}

/* A crash outside dsm's memory: where in the program, as ", in FUNCTION
 * at FILE:LINE (OBJECT+0xOFFSET)", or the object and offset alone. */
__attribute__((noreturn)) static void crash_at(void *addr, const char *why, const void *pc)
{
    char obj[PATH_MAX], where[PATH_MAX + 64], line[PATH_MAX + 256];
    uint64_t rel = 0;
    where[0] = line[0] = 0;
    if (pc && code_place((uintptr_t)pc, obj, sizeof obj, &rel)) {
        size_t at = put_str(where, 0, obj);
        at = put_str(where, at, "+0x");
        where[put_num(where, at, rel, 16)] = 0;
        code_line(obj, rel, line, sizeof line);
    }
    die_of(SIGSEGV, "segmentation fault", addr,
           (const char *const[]){" (", why, ")", where[0] ? ", in " : "", line, line[0] ? " (" : "",
                                 where, line[0] ? ")" : "", NULL});
}

__attribute__((noreturn)) static void crash(void *addr, const char *why)
{
    crash_at(addr, why, NULL);
}

/* A fault at the end of a stack: said as such, with the stack's end. */
__attribute__((noreturn)) static void overflow(void *addr, const void *end)
{
    char end_hex[24];
    end_hex[put_num(end_hex, 0, (uint64_t)(uintptr_t)end, 16)] = 0;
    die_of(SIGSEGV, "stack overflow", addr,
           (const char *const[]){" (segmentation fault past the end of the stack at 0x", end_hex,
                                 ": deeper recursion or larger local arrays than it holds; "
                                 "ulimit -s sets its size)", NULL});
}

static const void *fault_sp(const void *uctx)
{
    const ucontext_t *uc = uctx;
#if defined(__x86_64__)
    return (const void *)(uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    return (const void *)(uintptr_t)uc->uc_mcontext.sp;
#else
    (void)uc;
    return NULL;
#endif
}

/* The faulting instruction, for the profile. */
static const void *fault_pc(const void *uctx)
{
    const ucontext_t *uc = uctx;
#if defined(__x86_64__)
    return (const void *)(uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (const void *)(uintptr_t)uc->uc_mcontext.pc;
#else
    (void)uc;
    return NULL;
#endif
}

static int fault_is_write(const void *uctx)
{
#if defined(__x86_64__)
    const ucontext_t *uc = uctx;
    return (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
    (void)uctx;
    return -1;
#endif
}

/* Why a fault outside the region happened, as far as the signal says:
 * nothing mapped there (a null pointer; else, under dsm, most often a
 * pointer into memory private to another node), or mapped without the
 * access. */
static const char *outside_why(const void *addr, int code)
{
    if (code == SEGV_MAPERR && (uintptr_t)addr < 65536)
        return "a null pointer: nothing is mapped at 0 or just above it";
    if (code == SEGV_MAPERR)
        return "outside the shared region, where nothing is mapped on this node: a pointer to "
               "memory private to another node (another thread's stack or thread_local "
               "variables, a library's own allocations), or to memory freed";
    if (code == SEGV_ACCERR)
        return "outside the shared region, where this node maps it without that access: a "
               "write to read-only data or code, or a guard page";
    return "outside the shared region";
}

static void on_segv(int sig, siginfo_t *si, void *uctx)
{
    void *addr = si->si_addr;
    /* In fork's child the system view has no access (forked.c): only
     * dsm's own code goes there, so the child called dsm. */
    if (__builtin_expect(log_in_forked_child(), 0) && mem.sys &&
        (uintptr_t)((char *)addr - mem.sys) < mem.size)
        log_forked_child("called dsm (which touched the shared region at %p)", addr);
    if (!mem.base || !mem_contains(addr)) {
        /* Not ours: the previous handler's, if it is one (SIG_DFL would
         * kill without a word, SIG_IGN would fault forever). */
        if (previous.sa_flags & SA_SIGINFO) {
            previous.sa_sigaction(sig, si, uctx);
            return;
        }
        if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
            previous.sa_handler(sig);
            return;
        }
        const void *end = stack_overflow_end(addr, fault_sp(uctx));
        if (end)
            overflow(addr, end);
        crash_at(addr, outside_why(addr, si->si_code), fault_pc(uctx));
    }
    if (si->si_code != SEGV_ACCERR)
        crash(addr, "inside the shared region, unmapped");
    int saved = errno;
    size_t page = mem_page_of(addr);
    int w = fault_is_write(uctx);
    if (__builtin_expect(log_in_forked_child(), 0)) /* mem_forked_child */
        log_forked_child("%s the shared memory at %p", w == 0 ? "read" : w > 0 ? "wrote" : "touched", addr);
    if (w < 0)
        w = mem.pages[page].state == PAGE_READ;
    bool profiled = PROFILE_ON;
    uint64_t t0 = TRACE_ON || profiled ? clock_ns() : 0;
    uint64_t fetched = profiled ? stats_get(STAT_PAGES_FETCHED) : 0;
    if (w)
        fault_ops->write_fault(page);
    else
        fault_ops->read_fault(page);
    if (TRACE_ON)
        trace_put(TRACE_FAULT, w != 0, 0, page, t0, clock_ns(), 0);
    if (profiled)
        profile_fault(page, addr, fault_pc(uctx), w != 0, t0,
                      stats_get(STAT_PAGES_FETCHED) - fetched);
    errno = saved;
}

static DSM_STATE char sigbus_dir[160];

/* A store into a hole of the home file that the file system cannot fill. */
static void on_sigbus(int sig, siginfo_t *si, void *uctx)
{
    (void)sig;
    (void)uctx;
    die_of(SIGBUS, "no room for shared memory", si->si_addr,
           (const char *const[]){" in the home file under ", sigbus_dir,
                                 " (DSM_HOME_DIR: is its disk full?)", NULL});
}

void mem_catch_sigbus(const char *dir)
{
    snprintf(sigbus_dir, sizeof sigbus_dir, "%s", dir);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, NULL) < 0)
        log_fatal("cannot install the SIGBUS handler: %s", strerror(errno));
}

void mem_crash_unallocated(void *addr)
{
    /* The master's stack in the region has unallocated pages below it. */
    const void *end = stack_overflow_end(addr, NULL);
    if (end)
        overflow(addr, end);
    crash(addr, "inside the shared region, but not allocated");
}

/* The calling thread (a node's application thread) takes its faults on an
 * alternate stack: a thread whose stack is exhausted has no room for the
 * handler's frame, and would die of the fault without a word; and the
 * master's main, on a stack in the region (runtime/master.c), must take
 * faults where the protocol never takes the pages away. A stack the
 * program set up itself is kept if the protocol's fault path fits in it. */
#define ALT_STACK_BYTES (1u << 20) /* room for the protocol's fault path */

void mem_fault_watch_thread(void)
{
    stack_t old;
    if (sigaltstack(NULL, &old) < 0 || (old.ss_flags & SS_DISABLE) ||
        old.ss_size < ALT_STACK_BYTES) {
        /* Mapped, not malloc'ed: it lives as long as the thread, and
         * only the kernel holds its address (a leak checker would see a
         * malloc'ed block no pointer reaches). */
        void *sp = mmap(NULL, ALT_STACK_BYTES, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        stack_t alt = {.ss_sp = sp == MAP_FAILED ? NULL : sp, .ss_size = ALT_STACK_BYTES};
        if (!alt.ss_sp || sigaltstack(&alt, NULL) < 0)
            log_fatal("cannot set up the fault handler's stack");
    }
    stack_note_thread();
}

/* The program's own SIGSEGV handler, installed while dsm's runs: it takes
 * the faults outside the region, as one installed before ours does; dsm's
 * stays. old gets the program's last one. */
void mem_fault_chain(const struct sigaction *act, struct sigaction *old)
{
    if (old)
        *old = previous;
    if (act)
        previous = *act;
}

void mem_set_fault_ops(const struct mem_fault_ops *ops)
{
    fault_ops = ops;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    /* SA_ONSTACK: a thread with an alternate stack (the master's main on
     * its stack in the region, runtime/master.c) takes faults there. */
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    struct sigaction old;
    if (sigaction(SIGSEGV, &sa, &old) < 0)
        log_fatal("cannot install the fault handler: %s", strerror(errno));
    if (!((old.sa_flags & SA_SIGINFO) && old.sa_sigaction == on_segv)) /* installed again */
        previous = old;
}
