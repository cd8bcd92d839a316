/*
 * omp_kmpc_atomics.c — libomp's atomic entry points (__kmpc_atomic_*,
 * src/omp/kmpc_atomic.c) are exact across nodes. clang 14 makes hardware
 * atomics (or libatomic calls) of every `#pragma omp atomic`, never these
 * calls; Intel's compilers make them, and programs written against libomp
 * call them by name (LLVM's runtime test kmp_taskloop): so this program
 * calls them by name, as that test does. First the operations' meaning,
 * on one thread (capture's flag, the reversed forms, unsigned division
 * and shift, logical and bitwise operations, min/max, swap); then every
 * thread of the team updates shared variables through them, and the
 * results must be exact: sums, a product, tickets all distinct (captured
 * old and new values), max/min, xor, a reversed subtraction applied an
 * even number of times, a spin lock of swap and write that carries a
 * plain counter from node to node, and __kmpc_atomic_start/end around
 * plain updates. The same source on libomp's threads is the reference.
 * Prints "PASSED: 0 failed" when every check passed.
 */
#include <omp.h>
#include <stdio.h>

#define ROUNDS 40 /* even: the reversed subtraction comes back */
#define MAX_THREADS 64

/* kmp_atomic.h's signatures (ident_t * as void *). */
typedef int           i32;
typedef long long     i64;
typedef unsigned      u32;
typedef unsigned long long u64;
int  __kmpc_global_thread_num(void *loc);
void __kmpc_atomic_fixed4_add(void *loc, int gtid, i32 *lhs, i32 rhs);
void __kmpc_atomic_fixed1_add(void *loc, int gtid, char *lhs, char rhs);
void __kmpc_atomic_fixed2_sub(void *loc, int gtid, short *lhs, short rhs);
void __kmpc_atomic_fixed8_add(void *loc, int gtid, i64 *lhs, i64 rhs);
i64  __kmpc_atomic_fixed8_add_cpt(void *loc, int gtid, i64 *lhs, i64 rhs, int flag);
i32  __kmpc_atomic_fixed4_add_cpt(void *loc, int gtid, i32 *lhs, i32 rhs, int flag);
i32  __kmpc_atomic_fixed4_sub_cpt(void *loc, int gtid, i32 *lhs, i32 rhs, int flag);
void __kmpc_atomic_fixed4_max(void *loc, int gtid, i32 *lhs, i32 rhs);
void __kmpc_atomic_fixed4_min(void *loc, int gtid, i32 *lhs, i32 rhs);
i32  __kmpc_atomic_fixed4_max_cpt(void *loc, int gtid, i32 *lhs, i32 rhs, int flag);
void __kmpc_atomic_fixed8_xor(void *loc, int gtid, i64 *lhs, i64 rhs);
void __kmpc_atomic_fixed4_orb(void *loc, int gtid, i32 *lhs, i32 rhs);
void __kmpc_atomic_fixed4_andb(void *loc, int gtid, i32 *lhs, i32 rhs);
void __kmpc_atomic_fixed4_sub_rev(void *loc, int gtid, i32 *lhs, i32 rhs);
i32  __kmpc_atomic_fixed4_sub_cpt_rev(void *loc, int gtid, i32 *lhs, i32 rhs, int flag);
void __kmpc_atomic_fixed4_div_rev(void *loc, int gtid, i32 *lhs, i32 rhs);
void __kmpc_atomic_fixed4_shl(void *loc, int gtid, i32 *lhs, i32 rhs);
void __kmpc_atomic_fixed4_shr(void *loc, int gtid, i32 *lhs, i32 rhs);
void __kmpc_atomic_fixed4u_shr(void *loc, int gtid, u32 *lhs, u32 rhs);
void __kmpc_atomic_fixed4_div(void *loc, int gtid, i32 *lhs, i32 rhs);
void __kmpc_atomic_fixed4u_div(void *loc, int gtid, u32 *lhs, u32 rhs);
void __kmpc_atomic_fixed8_shl_rev(void *loc, int gtid, i64 *lhs, i64 rhs);
void __kmpc_atomic_fixed4_andl(void *loc, int gtid, i32 *lhs, i32 rhs);
void __kmpc_atomic_fixed4_orl(void *loc, int gtid, i32 *lhs, i32 rhs);
void __kmpc_atomic_fixed4_eqv(void *loc, int gtid, i32 *lhs, i32 rhs);
void __kmpc_atomic_fixed4_neqv(void *loc, int gtid, i32 *lhs, i32 rhs);
void __kmpc_atomic_fixed2_mul(void *loc, int gtid, short *lhs, short rhs);
u64  __kmpc_atomic_fixed8u_div_cpt(void *loc, int gtid, u64 *lhs, u64 rhs, int flag);
i64  __kmpc_atomic_fixed8_swp(void *loc, int gtid, i64 *lhs, i64 rhs);
void __kmpc_atomic_fixed8_wr(void *loc, int gtid, i64 *lhs, i64 rhs);
i32  __kmpc_atomic_fixed4_rd(void *loc, int gtid, i32 *lhs);
i64  __kmpc_atomic_fixed8_rd(void *loc, int gtid, i64 *lhs);
void __kmpc_atomic_float4_add(void *loc, int gtid, float *lhs, float rhs);
void __kmpc_atomic_float8_add(void *loc, int gtid, double *lhs, double rhs);
void __kmpc_atomic_float8_mul(void *loc, int gtid, double *lhs, double rhs);
double __kmpc_atomic_float8_rd(void *loc, int gtid, double *lhs);
double __kmpc_atomic_float8_max_cpt(void *loc, int gtid, double *lhs, double rhs, int flag);
void __kmpc_atomic_float8_div_rev(void *loc, int gtid, double *lhs, double rhs);
float __kmpc_atomic_float4_swp(void *loc, int gtid, float *lhs, float rhs);
void __kmpc_atomic_float10_add(void *loc, int gtid, long double *lhs, long double rhs);
long double __kmpc_atomic_float10_sub_cpt(void *loc, int gtid, long double *lhs, long double rhs,
                                          int flag);
long double __kmpc_atomic_float10_rd(void *loc, int gtid, long double *lhs);
void __kmpc_atomic_start(void);
void __kmpc_atomic_end(void);

static int failed;

static void check(int ok, const char *what)
{
    if (!ok) {
        failed++;
        printf("FAILED: %s\n", what);
    }
}

/* Shared (file scope): the targets of the team's updates. */
static i32 sum4, max4, min4 = 1 << 30, bits4, rev4 = 7, capture_next;
static char sum1;
static short sub2;
static i64 sum8, xor8, next8, spin;
static long guarded, in_section;
static float sum_f;
static double sum_d, prod_d = 1.0;
static long double sum_ld;
/* Whole words, each written by one thread: seen[v] = 1 for each value. */
static long ticket_seen[MAX_THREADS * ROUNDS];
static long capture_seen[MAX_THREADS * ROUNDS + 1];

/* One thread: what each form means. */
static void semantics(int g)
{
    i32 x = 10;
    check(__kmpc_atomic_fixed4_add_cpt(NULL, g, &x, 5, 0) == 10 && x == 15, "add_cpt flag 0: old");
    check(__kmpc_atomic_fixed4_add_cpt(NULL, g, &x, 5, 1) == 20 && x == 20, "add_cpt flag 1: new");
    check(__kmpc_atomic_fixed4_sub_cpt(NULL, g, &x, 3, 1) == 17, "sub_cpt");
    __kmpc_atomic_fixed4_sub_rev(NULL, g, &x, 100);
    check(x == 83, "sub_rev: x = rhs - x");
    check(__kmpc_atomic_fixed4_sub_cpt_rev(NULL, g, &x, 90, 0) == 83 && x == 7, "sub_cpt_rev");
    x = 7;
    __kmpc_atomic_fixed4_div_rev(NULL, g, &x, 100);
    check(x == 14, "div_rev: x = rhs / x");
    __kmpc_atomic_fixed4_shl(NULL, g, &x, 2);
    check(x == 56, "shl");
    x = -64;
    __kmpc_atomic_fixed4_shr(NULL, g, &x, 2);
    check(x == -16, "shr: arithmetic on signed");
    u32 u = 0x80000000u;
    __kmpc_atomic_fixed4u_shr(NULL, g, &u, 4);
    check(u == 0x08000000u, "fixed4u_shr: logical");
    x = -7;
    __kmpc_atomic_fixed4_div(NULL, g, &x, 2);
    check(x == -3, "div: signed");
    u = 0xfffffff0u;
    __kmpc_atomic_fixed4u_div(NULL, g, &u, 16);
    check(u == 0x0fffffffu, "fixed4u_div: unsigned");
    u64 uu = 1000;
    check(__kmpc_atomic_fixed8u_div_cpt(NULL, g, &uu, 10, 1) == 100 && uu == 100, "fixed8u_div_cpt");
    i64 s = 3;
    __kmpc_atomic_fixed8_shl_rev(NULL, g, &s, 1);
    check(s == 8, "shl_rev: x = rhs << x");
    x = 5;
    __kmpc_atomic_fixed4_andl(NULL, g, &x, 0);
    check(x == 0, "andl");
    __kmpc_atomic_fixed4_orl(NULL, g, &x, 9);
    check(x == 1, "orl");
    x = 0x0f;
    __kmpc_atomic_fixed4_eqv(NULL, g, &x, 0x0f);
    check(x == -1, "eqv: ~(x ^ rhs)");
    __kmpc_atomic_fixed4_neqv(NULL, g, &x, 0x0f);
    check(x == ~0x0f, "neqv: x ^ rhs");
    x = 0x3c;
    __kmpc_atomic_fixed4_andb(NULL, g, &x, 0x0f);
    check(x == 0x0c, "andb");
    x = 4;
    check(__kmpc_atomic_fixed4_max_cpt(NULL, g, &x, 9, 0) == 4 && x == 9, "max_cpt");
    __kmpc_atomic_fixed4_min(NULL, g, &x, 2);
    check(x == 2, "min");
    short sh = -3;
    __kmpc_atomic_fixed2_mul(NULL, g, &sh, 7);
    check(sh == -21, "fixed2_mul");
    i64 w = 5;
    check(__kmpc_atomic_fixed8_swp(NULL, g, &w, 6) == 5 && w == 6, "swp");
    __kmpc_atomic_fixed8_wr(NULL, g, &w, 11);
    check(__kmpc_atomic_fixed8_rd(NULL, g, &w) == 11, "wr, rd");
    double d = 1.5;
    check(__kmpc_atomic_float8_max_cpt(NULL, g, &d, 2.5, 1) == 2.5, "float8_max_cpt");
    __kmpc_atomic_float8_div_rev(NULL, g, &d, 10.0);
    check(d == 4.0, "float8_div_rev");
    float f = 1.0f;
    check(__kmpc_atomic_float4_swp(NULL, g, &f, 2.0f) == 1.0f && f == 2.0f, "float4_swp");
    long double ld = 2.5L;
    check(__kmpc_atomic_float10_sub_cpt(NULL, g, &ld, 1.0L, 0) == 2.5L && ld == 1.5L,
          "float10_sub_cpt");
}

int main(void)
{
    int n = omp_get_max_threads();
    if (n > MAX_THREADS)
        n = MAX_THREADS;
    semantics(__kmpc_global_thread_num(NULL));
    int team = 0;
#pragma omp parallel num_threads(n)
    {
        int g = __kmpc_global_thread_num(NULL);
        int t = omp_get_thread_num();
#pragma omp single
        team = omp_get_num_threads();
        for (int r = 0; r < ROUNDS; r++) {
            int v = t * ROUNDS + r;
            __kmpc_atomic_fixed4_add(NULL, g, &sum4, 1);
            __kmpc_atomic_fixed1_add(NULL, g, &sum1, 3);
            __kmpc_atomic_fixed2_sub(NULL, g, &sub2, 2);
            __kmpc_atomic_fixed8_add(NULL, g, &sum8, (i64)v << 20);
            ticket_seen[__kmpc_atomic_fixed8_add_cpt(NULL, g, &next8, 1, 0)] = 1;
            capture_seen[__kmpc_atomic_fixed4_add_cpt(NULL, g, &capture_next, 1, 1)] = 1;
            __kmpc_atomic_fixed4_max(NULL, g, &max4, v);
            __kmpc_atomic_fixed4_min(NULL, g, &min4, v);
            __kmpc_atomic_fixed8_xor(NULL, g, &xor8, (i64)v * 0x9e3779b9LL);
            __kmpc_atomic_fixed4_orb(NULL, g, &bits4, 1 << (t % 31));
            __kmpc_atomic_fixed4_sub_rev(NULL, g, &rev4, 100);
            __kmpc_atomic_float4_add(NULL, g, &sum_f, 1.0f);
            __kmpc_atomic_float8_add(NULL, g, &sum_d, 0.5);
            if (r < 10)
                __kmpc_atomic_float8_mul(NULL, g, &prod_d, 2.0);
            __kmpc_atomic_float10_add(NULL, g, &sum_ld, 0.25L);
            /* A spin lock of swap and write: the plain counter's writes
             * travel with it. */
            while (__kmpc_atomic_fixed8_swp(NULL, g, &spin, 1) != 0)
                ;
            guarded++;
            __kmpc_atomic_fixed8_wr(NULL, g, &spin, 0);
            __kmpc_atomic_start();
            in_section += 2;
            __kmpc_atomic_end();
        }
#pragma omp barrier
        long total = (long)team * ROUNDS;
        check(__kmpc_atomic_fixed4_rd(NULL, g, &sum4) == total, "fixed4_add sum (rd)");
        check(__kmpc_atomic_float8_rd(NULL, g, &sum_d) == 0.5 * (double)total, "float8_add sum (rd)");
        check(__kmpc_atomic_float10_rd(NULL, g, &sum_ld) == 0.25L * (long double)total,
              "float10_add sum (rd)");
    }
    long total = (long)team * ROUNDS;
    i64 sum_v = 0, xor_v = 0;
    for (long v = 0; v < total; v++) {
        sum_v += (i64)v << 20;
        xor_v ^= (i64)v * 0x9e3779b9LL;
    }
    check(sum4 == total, "fixed4_add");
    check(sum1 == (char)(3 * total), "fixed1_add (wraps)");
    check(sub2 == (short)(-2 * total), "fixed2_sub");
    check(sum8 == sum_v, "fixed8_add");
    check(next8 == total && capture_next == total, "captures counted");
    int distinct = 1;
    for (long v = 0; v < total; v++)
        distinct &= ticket_seen[v] == 1 && capture_seen[v + 1] == 1;
    check(distinct, "captured old (flag 0) and new (flag 1) values all distinct");
    check(max4 == total - 1 && min4 == 0, "max, min");
    check(xor8 == xor_v, "fixed8_xor");
    check(bits4 == (team >= 31 ? 0x7fffffff : (1 << team) - 1), "fixed4_orb");
    check(rev4 == 7, "sub_rev applied an even number of times");
    check(sum_f == (float)total, "float4_add");
    double p = 1.0;
    for (int i = 0; i < 10 * team; i++)
        p *= 2.0;
    check(prod_d == p, "float8_mul");
    check(guarded == total, "spin lock of swp and wr carries a plain counter");
    check(in_section == 2 * total, "__kmpc_atomic_start/end");
    printf("threads %d\n", team);
    printf("PASSED: %d failed\n", failed);
    return failed != 0;
}
