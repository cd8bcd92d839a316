/*
 * asm_refused — inline assembly that writes memory atomically in a form
 * dsmcc does not translate (tools/asm_lift.c): built with -DCASE_..., each
 * case must stop the build in one line naming the file and the line
 * marked "here: CASE_..." (refused.sh).
 */
#include "asm_refused.h"

unsigned long bits;
int counter, other;
__int128 wide;

#ifdef CASE_FILE_SCOPE
/* Assembly outside a function: it has no line dsmcc can name but the
 * file's. */
asm(".globl count_up\n"
    "count_up:\n"
    "\tlock; incl (%rdi)\n"
    "\tret\n");
#endif

int main(void)
{
#ifdef CASE_BTS
    asm volatile("lock; btsl %1, %0" : "+m"(counter) : "Ir"(3) : "memory"); /* here: CASE_BTS */
#endif
#ifdef CASE_CMPXCHG16B
    unsigned long lo = 0, hi = 0;
    asm volatile("lock; cmpxchg16b %0" /* here: CASE_CMPXCHG16B */
                 : "+m"(wide), "+a"(lo), "+d"(hi)
                 : "b"(1UL), "c"(0UL)
                 : "memory");
#endif
#ifdef CASE_TWO
    asm volatile("lock; incl %0\n\tlock; incl %1" : "+m"(counter), "+m"(other)); /* here: CASE_TWO */
#endif
#ifdef CASE_SPIN_LOOP
    /* A spin lock as older Linux wrote it: a loop around the atomic. */
    asm volatile("1: lock; decl %0\n\t" /* here: CASE_SPIN_LOOP */
                 "jns 3f\n"
                 "2: pause\n\t"
                 "cmpl $0, %0\n\t"
                 "jle 2b\n\t"
                 "jmp 1b\n"
                 "3:\n"
                 : "+m"(counter)
                 :
                 : "memory");
#endif
#ifdef CASE_SYMBOL
    asm volatile("lock; incl counter(%%rip)" ::: "memory"); /* here: CASE_SYMBOL */
#endif
#ifdef CASE_INDEX
    int *base = &counter;
    asm volatile("lock; incl (%0,%1,4)" : : "r"(base), "r"(0L) : "memory"); /* here: CASE_INDEX */
#endif
#ifdef CASE_INTEL
    asm volatile(".intel_syntax noprefix\n\t" /* here: CASE_INTEL */
                 "lock xadd dword ptr [%1], %0\n\t"
                 ".att_syntax prefix"
                 : "+r"(other)
                 : "r"(&counter)
                 : "memory");
#endif
#ifdef CASE_ASM_GOTO
    asm goto("lock; decl %0; je %l[zero]" : "+m"(counter) : : "memory" : zero); /* here: CASE_ASM_GOTO */
    counter = 1;
zero:
#endif
#ifdef CASE_CMPXCHG_UNSET
    /* A compare with an accumulator never set, storing another register:
     * what it stores depends on what rax held (FreeBSD's load, which
     * stores back rax itself, is translated). */
    int found;
    asm volatile("lock; cmpxchgl %2, %1" : "=a"(found), "+m"(counter) : "r"(7) : "memory"); /* here: CASE_CMPXCHG_UNSET */
    other = found;
#endif
#ifdef CASE_HEADER
    set_bit_locked(5, &bits);
#endif
    return counter + other + (int)bits;
}
