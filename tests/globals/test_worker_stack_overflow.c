/*
 * test_worker_stack_overflow — under master-only start (dsmcc), a function
 * created on the other nodes runs on each worker's own stack; running off
 * it must be a crash report naming a stack overflow and its address, as on
 * the master's shared stack (test_main_stack_overflow).
 */
#include <stdio.h>
#include <string.h>

#include <dsm.h>

__attribute__((noinline)) static int deep(long n)
{
    volatile char buf[4096];
    memset((char *)buf, (int)n, sizeof buf);
    return n ? deep(n - 1) + buf[7] : 0;
}

static void work(void *arg)
{
    (void)arg;
    if (dsm_rank() == 1)
        fprintf(stderr, "deep: %d\n", deep(1l << 20)); /* 4 GiB of frames */
}

int main(void)
{
    fprintf(stderr, "shallow: %d\n", deep(100));
    dsm_create(work, NULL);
    dsm_wait_for_end();
    return 0;
}
