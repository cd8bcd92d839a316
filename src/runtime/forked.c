/*
 * forked.c — what fork means in a node (docs/api.md, "fork").
 *
 * A process a node forks is not a node of the job: the job does not know
 * it, it has none of its node's threads (the service thread among them),
 * and the region it inherits is the node's memfd, shared. What such a
 * child may do is what shells, system() and popen() do: exec at once (or
 * _exit). So fork works, from any thread, in every build; in the child,
 * before the program's code runs (pthread_atfork), the region becomes
 * read-only where the node could read it (mem/forked.c), and anything of
 * dsm's the child then does — a store to shared memory, a read of a page
 * the node did not hold, a call that would send a message or wait for
 * one — ends the child with one line naming fork, the child and its node
 * (base/log.c, log_forked_child). The node and the job go on; the child's
 * parent sees it exit with status 1. glibc's system(), popen() and
 * posix_spawn() start their child with vfork semantics, which runs no
 * fork handlers and shares nothing once it execs: they are untouched.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "base/log.h"
#include "base/stack.h"
#include "mem/mem.h"
#include "runtime/runtime.h"

/* Under master-only start (dsmcc) main runs on a stack in the region, and
 * the child goes on on it until it execs: it gets its own copy of it
 * (mem_forked_child). The node must not write that stack until the copy
 * is made — its frames above fork's would be the child's — so it waits
 * in fork for the child's word, on a pipe of that one fork. */
static __thread int copied[2] = {-1, -1};
static __thread const char *fork_sp; /* dsm_fork's frame on main's stack */

static void before(void)
{
    if (rt()->main_stack && pipe2(copied, O_CLOEXEC) < 0)
        copied[0] = copied[1] = -1; /* then fork fails below, as it would */
}

static void in_parent(void)
{
    if (copied[0] < 0)
        return;
    char c;
    close(copied[1]);
    while (read(copied[0], &c, 1) < 0 && errno == EINTR) /* EOF: the child has its copy, or is gone */
        ;
    close(copied[0]);
    copied[0] = copied[1] = -1;
}

static void in_child(void)
{
    log_forked();
    if (rt()->main_stack && copied[0] < 0)
        log_forked_child("started without the pipe that keeps its node's stack still until it has its copy (out of file descriptors?)");
    mem_forked_child(rt()->main_stack, rt()->main_stack_len, fork_sp);
    if (copied[0] >= 0) {
        close(copied[0]);
        close(copied[1]); /* the node's read sees EOF */
        copied[0] = copied[1] = -1;
    }
}

void forked_start(void)
{
    if (pthread_atfork(before, in_parent, in_child))
        log_fatal("cannot register the handler of fork's child");
}

/* dsmcc's programs reach fork through this (libdsm-start.a wraps it): a
 * fork on main's shared stack is made from a private one, so that neither
 * the node nor the child writes the other's frames between the fork and
 * the child's copy of that stack (in_child). */
struct fork_call { pid_t pid; };

static void fork_here(void *arg) { ((struct fork_call *)arg)->pid = fork(); }

pid_t dsm_fork(void)
{
    struct fork_call c;
    fork_sp = (const char *)&c; /* the page below it is copied too (the red zone) */
    stack_private(fork_here, &c);
    fork_sp = NULL;
    return c.pid;
}
