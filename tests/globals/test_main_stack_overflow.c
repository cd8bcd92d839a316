/*
 * test_main_stack_overflow — main runs on a stack in the shared region
 * (master-only start); running off its bottom must be a reported crash, not
 * a silent write into another allocation: the stack is taken from the top
 * of the master's arena, with unallocated pages below it.
 */
#include <stdio.h>
#include <string.h>

#include <dsm.h>

static int deep(int n)
{
    volatile char buf[4096];
    memset((char *)buf, n, sizeof buf);
    return n ? deep(n - 1) + buf[7] : 0;
}

int main(void)
{
    fprintf(stderr, "shallow: %d\n", deep(100)); /* fine */
    fprintf(stderr, "deep: %d\n", deep(1 << 20)); /* 4 GiB of frames: off the stack */
    return 0;
}
