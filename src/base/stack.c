/*
 * stack.c — calling into the library off the shared stack (stack.h).
 */
#include <stdint.h>

#include "base/state.h"
#include "base/stack.h"

static DSM_STATE struct {
    char *lo, *hi, *top;
} shared;

void stack_set_shared(char *lo, size_t len, char *top)
{
    shared.lo = lo;
    shared.hi = lo + len;
    shared.top = (char *)((uintptr_t)top & ~(uintptr_t)15);
}

#if defined(__x86_64__)
/* Switches rsp to `top`, calls fn(arg) there, and switches back. Only the
 * master's application thread is ever on the shared stack, so one private
 * top serves; nested calls from fn are already off it. */
__attribute__((noinline)) static void call_on(char *top, void (*fn)(void *), void *arg)
{
    __asm__ volatile("mov %%rsp, %%r12\n\t"
                     "mov %[top], %%rsp\n\t"
                     "call *%[fn]\n\t"
                     "mov %%r12, %%rsp\n\t"
                     : [top] "+r"(top), [fn] "+r"(fn), "+D"(arg)
                     :
                     : "r12", "rax", "rcx", "rdx", "rsi", "r8", "r9", "r10", "r11", "memory", "cc",
                       "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
                       "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
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
        call_on(shared.top, fn, arg);
        return;
    }
#endif
    (void)here;
    fn(arg);
}
