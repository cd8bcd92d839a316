/* asm_refused.h — an atomic helper in a header (asm_refused.c): dsmcc
 * names the header's line, where the statement is written. */
static inline void set_bit_locked(long nr, volatile unsigned long *addr)
{
    asm volatile("lock; btsq %1, %0" : "+m"(*addr) : "Ir"(nr) : "memory"); /* here: CASE_HEADER */
}
