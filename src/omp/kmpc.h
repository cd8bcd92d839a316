/*
 * kmpc.h — the types of LLVM's OpenMP runtime interface (the `__kmpc_*`
 * calls clang emits), as openmp/runtime/src/kmp.h declares them. Only the
 * layout matters: clang passes these to us.
 */
#ifndef DSM_OMP_KMPC_H
#define DSM_OMP_KMPC_H
#include <stddef.h>
#include <stdint.h>

typedef int32_t  kmp_int32;
typedef uint32_t kmp_uint32;
typedef int64_t  kmp_int64;
typedef uint64_t kmp_uint64;

/* A source location: psource is ";file;function;line;column;;". */
typedef struct ident {
    kmp_int32   reserved_1;
    kmp_int32   flags;
    kmp_int32   reserved_2;
    kmp_int32   reserved_3;
    const char *psource;
} ident_t;

/* What a critical section or a reduction is named by: a global of the
 * program, one per name. */
typedef kmp_int32 kmp_critical_name[8];

typedef void (*kmpc_micro)(kmp_int32 *global_tid, kmp_int32 *bound_tid, ...);

/* Schedule types (kmp.h enum sched_type), those clang emits. */
enum kmp_sched {
    kmp_sch_lower = 32,
    kmp_sch_static_chunked = 33,
    kmp_sch_static = 34,
    kmp_sch_dynamic_chunked = 35,
    kmp_sch_guided_chunked = 36,
    kmp_sch_runtime = 37,
    kmp_sch_auto = 38,
    kmp_sch_trapezoidal = 39,
    kmp_sch_static_greedy = 40,
    kmp_sch_static_balanced = 41,
    kmp_sch_guided_iterative_chunked = 42,
    kmp_sch_guided_analytical_chunked = 43,
    kmp_sch_static_steal = 44,
    kmp_sch_static_balanced_chunked = 45,
    kmp_sch_guided_simd = 46,   /* schedule(simd:guided) */
    kmp_sch_runtime_simd = 47,  /* schedule(simd:runtime) */
    kmp_sch_upper = 48,
    kmp_ord_lower = 64,  /* ordered loops: kmp_sch_* + 32 */
    kmp_ord_upper = 72,
    kmp_distribute_static_chunked = 91, /* distribute dist_schedule(static, c) */
    kmp_distribute_static = 92,         /* distribute */
    kmp_nm_lower = 160,  /* "nomerge" variants: kmp_sch_* + 128, ordered + 128 */
    kmp_nm_upper = 200,
};
#define KMP_SCH_MODIFIER_MONOTONIC    (1 << 29)
#define KMP_SCH_MODIFIER_NONMONOTONIC (1 << 30)

/* The kmp_sched value without its modifiers and nomerge offset, and
 * whether it is ordered; -1 for one dsm does not know. */
int kmp_sched_base(kmp_int32 schedule, int *ordered);
#endif
