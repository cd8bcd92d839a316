/*
 * stack.h — the library runs off the master's shared stack.
 *
 * Under master-only start (runtime/master.c) the master's main runs on a
 * stack in the shared region, whose pages the protocol write-protects and
 * invalidates like any other. The library's own code must not run there: a
 * release that write-protects the very page holding its locals would fault
 * on its next local while holding its own locks. So every entry point that
 * does protocol work (synchronisation, create, finish) calls through
 * stack_private, which moves to the process's own stack when the caller is
 * on the shared one, and simply calls otherwise. Node 0's other OpenMP
 * threads run a region on shared stacks of their own too (omp/region.c,
 * stack_run_shared), so that their tasks may leave the node: each thread
 * keeps its own shared stack and private top.
 */
#ifndef DSM_BASE_STACK_H
#define DSM_BASE_STACK_H
#include <stdbool.h>
#include <stddef.h>

/* The shared stack is [lo, lo + len); `top` is free stack space of the
 * process's own stack to run on (16-byte aligned below it). */
void stack_set_shared(char *lo, size_t len, char *top);

/* fn(arg) on [lo, lo + len), a stack in the shared region, as the
 * calling thread's shared stack (its stack_private calls come back below
 * the caller's frame). Elsewhere than x86-64, fn(arg) where it is. */
void stack_run_shared(char *lo, size_t len, void (*fn)(void *), void *arg);

/* Whether the caller runs on a shared stack (main's, under master-only
 * start, or its own: stack_run_shared). */
bool stack_on_shared(void);

/* fn(arg) on a private stack. fn must copy what arg points to before it
 * does protocol work (arg may point into the shared stack). */
void stack_private(void (*fn)(void *), void *arg);

/* Notes the calling thread's own stack (a node's application thread), so
 * that a fault at its end is told for what it is (stack_overflow_end). */
void stack_note_thread(void);

/* If a fault at addr, the stack pointer at sp (NULL: not known), is a
 * stack overflow — at or just past the end of the noted thread's stack or
 * of the shared stack, or with the stack pointer itself past it — the
 * lowest address of that stack; else NULL. Async-signal-safe. */
const void *stack_overflow_end(const void *addr, const void *sp);
/* The size of a stack in the shared region (main's under dsm_main, a
 * thread's that OpenMP runs there): the process's stack limit, within
 * 1 MiB .. 1 GiB (8 MiB when unlimited). */
size_t stack_shared_size(void);
#endif
