/*
 * asm_forms — every inline-assembly form dsmcc translates (tools/
 * asm_lift.c), each run on fixed values, with the values it returns and
 * leaves in memory printed. Built plainly (dsmcc --pthreads: the hardware
 * runs the assembly) and with dsmcc (LLVM atomics, then dsm's), the
 * output must be the same: the translation keeps each form's meaning —
 * old values, flags, widths, partial registers, pointers.
 *
 *   asm_forms
 */
#include <stdint.h>
#include <stdio.h>

static int      i32;
static long     i64;
static short    i16;
static uint8_t  u8;
static unsigned u32;
static uintptr_t word;
static void    *ptr;
static int      other;
static int      line;

#define SHOW(fmt, ...) printf("%2d " fmt "\n", ++line, __VA_ARGS__)

/* ---- read-modify-writes with the lock prefix ---- */

static inline int xadd_plus(int *p, int v)
{
    asm volatile("lock; xaddl %0, %1" : "+r"(v), "+m"(*p) : : "memory");
    return v;
}

/* Output and input as separate operands, no size suffix. */
static inline int xadd_split(int *p, int v)
{
    int old;
    asm volatile("lock; xadd %0, %1 \n\t" : "=r"(old), "=m"(*p) : "0"(v), "m"(*p) : "cc", "memory");
    return old;
}

static inline long xadd_q(long *p, long v)
{
    asm volatile("lock xaddq %q0, %1" : "+r"(v), "+m"(*p) : : "memory", "cc");
    return v;
}

static inline short xadd_w(short *p, short v)
{
    asm volatile("lock\n\txaddw %[v], %[m]" : [v] "+r"(v), [m] "+m"(*p) : : "memory");
    return v;
}

static inline uint8_t xadd_b(uint8_t *p, uint8_t v)
{
    asm volatile("lock xaddb %b0, %1" : "+q"(v), "+m"(*p));
    return v;
}

static inline void ops(int *p)
{
    asm volatile("lock; incl %0" : "+m"(*p));
    asm volatile("lock; decl %0" : "+m"(*p));
    asm volatile("lock; addl %1, %0" : "+m"(*p) : "ir"(40));
    asm volatile("lock; addl $2, %0" : "+m"(*p));
    asm volatile("lock; subl %1, %0" : "+m"(*p) : "r"(7));
    asm volatile("lock; orl $0x100, %0" : "+m"(*p));
    asm volatile("lock; andl %1, %0" : "+m"(*p) : "ri"(0x1f3));
    asm volatile("lock; xorl $5, %0" : "+m"(*p));
    asm volatile("lock; notl %0" : "+m"(*p));
    asm volatile("lock orl %1,%0" : "+m"(*p) : "ri"(0x4000));
}

/* Linux's LOCK_PREFIX: the lock's address noted in a section first. */
static inline void inc_linux(int *p)
{
    asm volatile(".pushsection .smp_locks,\"a\"\n.balign 4\n.long 671f - .\n.popsection\n"
                 "671:\n\tlock; incl %0"
                 : "+m"(*p));
}

/* ---- flags read in the same statement ---- */

static inline int dec_and_test(int *v)
{
    unsigned char c;
    asm volatile("lock; decl %0; sete %1" : "+m"(*v), "=qm"(c) : : "memory");
    return c;
}

static inline int inc_and_test(int *v)
{
    _Bool z;
    asm volatile("lock incl %0" : "+m"(*v), "=@ccz"(z) : : "memory");
    return z;
}

static inline int add_negative(int i, int *v)
{
    _Bool s;
    asm volatile("lock; addl %2,%0" : "+m"(*v), "=@ccs"(s) : "ir"(i) : "memory");
    return s;
}

static inline int sub_and_test_ne(long i, long *v)
{
    int ne;
    asm volatile("lock subq %2, %0\n\tsetne %b1\n\tmovzbl %b1, %1" : "+m"(*v), "=q"(ne) : "er"(i) : "memory");
    return ne;
}

/* ---- exchange ---- */

static inline int xchg_plus(int *p, int v)
{
    asm volatile("xchgl %0, %1" : "+r"(v), "+m"(*p) : : "memory");
    return v;
}

/* xv6: memory first, the value in eax tied by number. */
static inline unsigned xchg_xv6(volatile unsigned *addr, unsigned newval)
{
    unsigned result;
    asm volatile("lock; xchgl %0, %1" : "+m"(*addr), "=a"(result) : "1"(newval) : "cc");
    return result;
}

static inline uint8_t xchg_b(uint8_t *p, uint8_t v)
{
    asm volatile("xchgb %b0, %1" : "+q"(v), "+m"(*p) : : "memory");
    return v;
}

static inline void *xchg_ptr(void **p, void *v)
{
    asm volatile("xchgq %0, %1" : "+r"(v), "+m"(*p) : : "memory");
    return v;
}

/* ---- compare and exchange ---- */

static inline int cas_val(int *p, int old, int new)
{
    int prev;
    asm volatile("lock; cmpxchgl %1,%2" : "=a"(prev) : "r"(new), "m"(*p), "0"(old) : "memory");
    return prev;
}

static inline int cas_ok(long *p, long old, long new, long *seen)
{
    unsigned char ok;
    asm volatile("lock cmpxchgq %[n], %[p]" : "=@ccz"(ok), [p] "+m"(*p), "+a"(old) : [n] "r"(new) : "memory");
    *seen = old;
    return ok;
}

static inline uint8_t cas_b(uint8_t *p, uint8_t old, uint8_t new)
{
    asm volatile("lock cmpxchgb %2, %1" : "+a"(old), "+m"(*p) : "q"(new) : "memory");
    return old;
}

/* The flag turned into the result inside the statement: setz into %%al
 * then movzbl, as older MPI runtimes write it. */
static inline int cas_setz_movzbl(volatile unsigned *addr, unsigned old, unsigned new)
{
    unsigned ret = old;
    asm volatile("lock; cmpxchgl %1,%2\n\tsetz %%al\n\tmovzbl %%al,%0\n" : "+a"(ret) : "r"(new), "m"(*addr) : "memory");
    return ret; /* the flag, widened */
}

/* sete after cmpxchg into a "=qm" byte; the expected value in memory too. */
static inline int cas_sete_qm(volatile int *addr, int *oldval, int newval)
{
    unsigned char ret;
    asm volatile("lock; cmpxchgl %3,%2\n\tsete %0\n\t" : "=qm"(ret), "+a"(*oldval), "+m"(*addr) : "q"(newval) : "memory", "cc");
    return ret;
}

/* A 64-bit result through "=a" from a 32-bit cmpxchg (%k1). */
static inline int cas_k(volatile unsigned *addr, unsigned oldval, unsigned newval)
{
    unsigned long prev;
    asm volatile("lock; cmpxchgl %k1,%2" : "=a"(prev) : "q"(newval), "m"(*addr), "0"(oldval) : "memory");
    return prev == oldval;
}

/* Concurrency Kit's shapes: the flag set into the accumulator's own
 * output, the expected value a separate "a" input; the value found also
 * stored through an "=m"; a flag into an "=rm" byte. */
static inline _Bool cas_into_a(int *target, int compare, int set)
{
    _Bool z;
    asm volatile("lock cmpxchgl %2, %0; setz %1;" : "+m"(*target), "=a"(z) : "q"(set), "a"(compare) : "memory", "cc");
    return z;
}

static inline _Bool cas_value(int *target, int compare, int set, int *v)
{
    _Bool z;
    asm volatile("lock cmpxchgl %3, %0;"
                 "mov %% eax, %2;" /* sic: "% eax", as Concurrency Kit writes it */
                 "setz %1;"
                 : "+m"(*target), "=a"(z), "=m"(*v)
                 : "q"(set), "a"(compare)
                 : "memory", "cc");
    return z;
}

static inline void inc_zero(int *target, _Bool *zero)
{
    asm volatile("lock incl %0; setz %1" : "+m"(*target), "=rm"(*zero) : : "memory", "cc");
}

static inline double fas_double(double *target, double v)
{
    asm volatile("xchgq %0, %1" : "+m"(*target), "+q"(v) : : "memory");
    return v;
}

static inline int ck_load(int *target)
{
    int r;
    asm volatile("movl %1, %0" : "=q"(r) : "m"(*target) : "memory");
    return r;
}

static inline void ck_store(int *target, int v)
{
    asm volatile("movl %1, %0" : "=m"(*target) : "q"(v) : "memory");
}

/* FreeBSD's atomic_load_acq_{char,short,int,long} (sys/amd64/include/
 * atomic.h): a cmpxchg of the accumulator, which the statement never
 * sets, into memory: whatever rax held, it ends holding *p, and *p is
 * unchanged. */
#define FREEBSD_LOAD(name, type, op)                                                               \
    static inline type name(volatile type *p)                                                      \
    {                                                                                              \
        type res;                                                                                  \
        asm volatile("lock ; " op : "=a"(res), "+m"(*p) : : "memory", "cc");                       \
        return res;                                                                                \
    }
FREEBSD_LOAD(load_acq_char, uint8_t, "cmpxchgb %b0,%1")
FREEBSD_LOAD(load_acq_short, short, "cmpxchgw %w0,%1")
FREEBSD_LOAD(load_acq_int, unsigned, "cmpxchgl %0,%1")
FREEBSD_LOAD(load_acq_long, long, "cmpxchgq %0,%1")

/* ---- Phoenix's helpers, in their shape ---- */

/* (Phoenix's own has "=a": without the early clobber clang -O0 gives n
 * rax too, and the xorq overwrites it.) */
static inline int test_and_set(uintptr_t *n)
{
    uintptr_t not_set;
    asm volatile("xorq %%rdx, %%rdx\n"
                 "xorq %%rax, %%rax\n"
                 "incq %%rdx\n"
                 "lock cmpxchgq %%rdx, (%1)\n"
                 "decq %%rax\n"
                 : "=&a"(not_set) : "r"(n) : "%rdx");
    return (int)not_set;
}

static inline unsigned fetch_and_inc(unsigned *n)
{
    unsigned old;
    asm volatile("movl $1, %0\n"
                 "lock xaddl %0, (%1)\n"
                 : "=a"(old) : "b"(n));
    return old;
}

static inline int cmp_and_swp(uintptr_t v, uintptr_t *cmper, uintptr_t matcher)
{
    int swapped;
    asm volatile("xorl %%edx, %%edx\n"
                 "lock cmpxchgq %2, (%3)\n"
                 "setz %%dl\n"
                 : "=d"(swapped) : "a"(matcher), "b"(v), "c"(cmper) : "cc");
    return swapped;
}

static inline uintptr_t atomic_xchg(uintptr_t n, uintptr_t *v)
{
    asm volatile("lock xchgq %1, (%2)\n" : "=r"(n) : "0"(n), "r"(v));
    return n;
}

/* ---- a plain store and load in asm of their own (release, acquire) ---- */

static inline void release(int *l)
{
    asm volatile("movl $0, %0" : "+m"(*l) : : "memory");
}

static inline int load(int *p)
{
    int v;
    asm volatile("movl %1, %0" : "=r"(v) : "m"(*p) : "memory");
    return v;
}

/* ---- fences, kept as the hardware's ---- */

static inline void fences(void)
{
    asm volatile("mfence" : : : "memory");
    asm volatile("lock; addl $0,-4(%%rsp)" : : : "memory", "cc");
    asm volatile("" : : : "memory");
}

int main(void)
{
    i32 = 5;
    SHOW("xadd_plus %d %d", xadd_plus(&i32, 3), i32);
    SHOW("xadd_split %d %d", xadd_split(&i32, -10), i32);
    i64 = 1L << 40;
    SHOW("xadd_q %ld %ld", xadd_q(&i64, 7), i64);
    i16 = 32767;
    SHOW("xadd_w %d %d", xadd_w(&i16, 1), i16);
    u8 = 250;
    SHOW("xadd_b %u %u", xadd_b(&u8, 10), u8);
    i32 = 1000;
    ops(&i32);
    SHOW("ops %d", i32);
    inc_linux(&i32);
    SHOW("inc_linux %d", i32);
    i32 = 2;
    int a = dec_and_test(&i32), b = dec_and_test(&i32), c = dec_and_test(&i32);
    SHOW("dec_and_test %d %d %d %d", a, b, c, i32);
    i32 = -2;
    a = inc_and_test(&i32);
    b = inc_and_test(&i32);
    SHOW("inc_and_test %d %d %d", a, b, i32);
    i32 = 3;
    a = add_negative(-2, &i32);
    b = add_negative(-2, &i32);
    SHOW("add_negative %d %d %d", a, b, i32);
    i64 = 10;
    a = sub_and_test_ne(4, &i64);
    b = sub_and_test_ne(6, &i64);
    SHOW("sub_and_test_ne %d %d %ld", a, b, i64);
    i32 = 11;
    SHOW("xchg_plus %d %d", xchg_plus(&i32, 12), i32);
    u32 = 0;
    a = (int)xchg_xv6(&u32, 1);
    b = (int)xchg_xv6(&u32, 1);
    SHOW("xchg_xv6 %d %d %u", a, b, u32);
    u8 = 0;
    SHOW("xchg_b %u %u", xchg_b(&u8, 0xff), u8);
    ptr = &other;
    SHOW("xchg_ptr %d %d", xchg_ptr(&ptr, &i32) == &other, ptr == &i32);
    i32 = 7;
    a = cas_val(&i32, 7, 8);
    b = cas_val(&i32, 7, 9);
    SHOW("cas_val %d %d %d", a, b, i32);
    i64 = 1;
    long seen1, seen2;
    a = cas_ok(&i64, 1, 2, &seen1);
    b = cas_ok(&i64, 1, 3, &seen2);
    SHOW("cas_ok %d %ld %d %ld %ld", a, seen1, b, seen2, i64);
    u8 = 9;
    a = cas_b(&u8, 9, 200);
    b = cas_b(&u8, 9, 1);
    SHOW("cas_b %d %d %u", a, b, u8);
    u32 = 3;
    a = cas_setz_movzbl(&u32, 3, 4);
    b = cas_setz_movzbl(&u32, 3, 5);
    SHOW("cas_setz_movzbl %d %d %u", a, b, u32);
    i32 = 6;
    int expect = 6;
    a = cas_sete_qm(&i32, &expect, 7);
    int e1 = expect;
    b = cas_sete_qm(&i32, &expect, 8);
    SHOW("cas_sete_qm %d %d %d %d %d", a, e1, b, expect, i32);
    u32 = 0xffffffffu;
    a = cas_k(&u32, 0xffffffffu, 1);
    b = cas_k(&u32, 0xffffffffu, 2);
    SHOW("cas_k %d %d %u", a, b, u32);
    i32 = 4;
    a = cas_into_a(&i32, 4, 5);
    b = cas_into_a(&i32, 4, 6);
    SHOW("cas_into_a %d %d %d", a, b, i32);
    int found = -1;
    a = cas_value(&i32, 4, 6, &found);
    SHOW("cas_value %d %d %d", a, found, i32);
    _Bool z1, z2;
    i32 = -2;
    inc_zero(&i32, &z1);
    inc_zero(&i32, &z2);
    SHOW("inc_zero %d %d %d", z1, z2, i32);
    double dbl = 2.5;
    SHOW("fas_double %g %g", fas_double(&dbl, -0.75), dbl);
    ck_store(&i32, 77);
    SHOW("ck_load_store %d", ck_load(&i32));
    word = 0;
    a = test_and_set(&word);
    b = test_and_set(&word);
    SHOW("test_and_set %d %d %lu", a, b, (unsigned long)word);
    u32 = 41;
    SHOW("fetch_and_inc %u %u", fetch_and_inc(&u32), u32);
    word = 5;
    a = cmp_and_swp(6, &word, 5);
    b = cmp_and_swp(7, &word, 5);
    SHOW("cmp_and_swp %d %d %lu", a, b, (unsigned long)word);
    SHOW("atomic_xchg %lu %lu", (unsigned long)atomic_xchg(99, &word), (unsigned long)word);
    i32 = 1;
    release(&i32);
    SHOW("release %d", i32);
    i32 = 1234;
    SHOW("load %d", load(&i32));
    u8 = 0xa5;
    i16 = -300;
    u32 = 0xdeadbeefu;
    i64 = -(1L << 50) - 3;
    SHOW("load_acq_char %u %u", load_acq_char(&u8), u8);
    SHOW("load_acq_short %d %d", load_acq_short(&i16), i16);
    SHOW("load_acq_int %u %u", load_acq_int(&u32), u32);
    SHOW("load_acq_long %ld %ld", load_acq_long(&i64), i64);
    fences();
    SHOW("fences %d", 1);
    printf("asm_forms: ok\n");
    return 0;
}
