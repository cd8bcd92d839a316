/*
 * asm_barriers — inline assembly that is no atomic on memory, which dsmcc
 * must build as it is (tools/asm_lift.c leaves it to the hardware):
 * fences, compiler barriers, pauses, Linux's smp_mb on the stack, the
 * time-stamp counter, an exchange of two registers, a plain add to
 * memory, a string copy and a loop. Built with dsmcc (the build is half
 * the test) and run, it checks what each computes.
 *
 *   asm_barriers
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int  counter = 40;
static char from[64] = "inline assembly that is no atomic", to[64];

int main(void)
{
    int ok = 1;
    asm volatile("mfence" ::: "memory");
    asm volatile("lfence");
    asm volatile("sfence" ::: "memory");
    asm volatile("" ::: "memory");
    asm volatile("pause");
    asm volatile("rep; nop");
    asm volatile("lock; addl $0,-4(%%rsp)" ::: "memory", "cc");

    uint32_t lo, hi;
    asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
    uint64_t t0 = (uint64_t)hi << 32 | lo;
    asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
    ok &= ((uint64_t)hi << 32 | lo) >= t0;

    int a = 1, b = 2;
    asm("xchgl %0, %1" : "+r"(a), "+r"(b));
    ok &= a == 2 && b == 1;

    /* A plain read-modify-write of memory, no lock: not atomic, kept. */
    asm volatile("addl %1, %0" : "+m"(counter) : "ir"(2));
    ok &= counter == 42;

    size_t n = strlen(from) + 1;
    void  *d = to, *s = from;
    asm volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
    ok &= strcmp(to, from) == 0;

    long sum = 0, i = 10;
    asm("1:\n\t"
        "addq %1, %0\n\t"
        "decq %1\n\t"
        "jnz 1b"
        : "+r"(sum), "+r"(i));
    ok &= sum == 55;

    printf("asm_barriers: %s\n", ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
