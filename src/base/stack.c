/*
 * stack.c — calling into the library off the shared stack (stack.h).
 */
#include <pthread.h>
#include <stdint.h>
#include <sys/resource.h>

#include "base/state.h"
#include "base/stack.h"

/* The calling thread's shared stack, if it runs on one: the master's main
 * (stack_set_shared) or a thread's region (stack_run_shared). Per thread:
 * each runs on its own, and returns to its own private stack. */
static __thread struct {
    char *lo, *hi, *top;
} shared;

void stack_set_shared(char *lo, size_t len, char *top)
{
    shared.lo = lo;
    shared.hi = lo + len;
    shared.top = (char *)((uintptr_t)top & ~(uintptr_t)15);
}

#if defined(__x86_64__)
/* stack_call_on(top, fn, arg): switches rsp to `top`, calls fn(arg)
 * there, and switches back. Each thread on a shared stack has its own
 * private top; nested calls from fn are already off the shared stack.
 *
 * Written whole in assembly for its unwind information: the frame's
 * canonical address is kept in rbp, on the stack it was called from, so
 * an unwinder walking out of fn — backtrace() in the sharing profile's
 * samples (base/profile.c), a debugger, a C++ exception — steps from one
 * stack back to the other. With the switch as inline assembly in a C
 * function the compiler's unwind tables said the frame was where rsp
 * pointed, on the new stack: the walk read above the shared stack's top,
 * which for the last node's threads is the end of the region (every
 * OpenMP program on 2 nodes under --profile ended with a segmentation
 * fault there). */
void stack_call_on(char *top, void (*fn)(void *), void *arg);
__asm__(".pushsection .text\n"
        ".globl stack_call_on\n"
        ".hidden stack_call_on\n"
        ".type stack_call_on, @function\n"
        ".p2align 4\n"
        "stack_call_on:\n"
        ".cfi_startproc\n"
        "endbr64\n"
        "push %rbp\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rbp, -16\n"
        "mov %rsp, %rbp\n"
        ".cfi_def_cfa_register %rbp\n"
        "mov %rdi, %rsp\n" /* top is 16-byte aligned: so is fn's frame after the call */
        "mov %rdx, %rdi\n"
        "call *%rsi\n"
        "mov %rbp, %rsp\n"
        "pop %rbp\n"
        ".cfi_def_cfa %rsp, 8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size stack_call_on, .-stack_call_on\n"
        ".popsection\n");
#endif

#if defined(__x86_64__)
/* Below the caller's frame on its private stack, where stack_private's
 * calls run while the thread is on its shared stack: room for this
 * function's and stack_call_on's frames. */
#define PRIVATE_GAP (16u << 10)

void stack_run_shared(char *lo, size_t len, void (*fn)(void *), void *arg)
{
    char here;
    typeof(shared) outer = shared;
    shared.lo = lo;
    shared.hi = lo + len;
    shared.top = (char *)(((uintptr_t)&here - PRIVATE_GAP) & ~(uintptr_t)15);
    /* fn reads `shared` (stack_private), which the compiler cannot see
     * through stack_call_on: without its address escaping here, the
     * stores above were dropped as dead. */
    __asm__ volatile("" : : "r"(&shared) : "memory");
    stack_call_on((char *)((uintptr_t)(lo + len) & ~(uintptr_t)15), fn, arg);
    shared = outer;
}
#else
void stack_run_shared(char *lo, size_t len, void (*fn)(void *), void *arg)
{
    (void)lo, (void)len;
    fn(arg);
}
#endif

bool stack_on_shared(void)
{
    char here;
    return &here >= shared.lo && &here < shared.hi;
}

void stack_private(void (*fn)(void *), void *arg)
{
    char here;
#if defined(__x86_64__)
    if (&here >= shared.lo && &here < shared.hi) {
        stack_call_on(shared.top, fn, arg);
        return;
    }
#endif
    (void)here;
    fn(arg);
}

/* The application thread's own stack, [lo, hi): one per thread, since a
 * node may run several (DSM_THREADS). */
static __thread struct {
    uintptr_t lo, hi;
} thread_stack;

void stack_note_thread(void)
{
    pthread_attr_t attr;
    void *addr;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
        thread_stack.lo = (uintptr_t)addr;
        thread_stack.hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&attr);
}

/* How far past a stack's end a fault still counts as its overflow: the
 * kernel's guard gap below a growing stack (256 pages) and a large frame.
 * A stack pointer past the end (a frame larger still, such as a big local
 * array) is an overflow wherever the frame first faults. */
#define OVERFLOW_REACH  (1u << 20)
#define SP_REACH        (1ull << 30)

static int past_end(uintptr_t lo, uintptr_t hi, uintptr_t a, uintptr_t sp)
{
    if (!lo)
        return 0;
    if (a < lo + 4096 && a + OVERFLOW_REACH >= lo)
        return 1;
    return sp && sp < lo + 4096 && sp + SP_REACH >= lo && a + 65536 >= sp && a < hi;
}

const void *stack_overflow_end(const void *addr, const void *sp)
{
    uintptr_t a = (uintptr_t)addr, s = (uintptr_t)sp;
    if (past_end(thread_stack.lo, thread_stack.hi, a, s))
        return (const void *)thread_stack.lo;
    if (past_end((uintptr_t)shared.lo, (uintptr_t)shared.hi, a, s))
        return shared.lo;
    return NULL;
}

#define MAIN_STACK_DEFAULT (8u << 20)
#define MAIN_STACK_MAX     (1u << 30)

/* main's stack: as large as the process's stack limit allows (8 MiB when
 * unlimited), at most 1 GiB. A shared stack of another thread's
 * (omp's regions) is as large. */
size_t stack_shared_size(void)
{
    struct rlimit rl;
    size_t n = MAIN_STACK_DEFAULT;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        n = rl.rlim_cur > MAIN_STACK_MAX ? MAIN_STACK_MAX : (size_t)rl.rlim_cur;
    return n < (1u << 20) ? (1u << 20) : n;
}
