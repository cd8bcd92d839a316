/*
 * omp_task_depend_order.c — the orders `depend` sets among sibling tasks
 * (src/omp/task.c finds a task's predecessors per address: the last
 * `out` for an `in`, the `in`s since it — else that `out` — for any other
 * type), on tasks the master makes, which may leave their node:
 *   1. out, then `in`s, then an `inout`, then `in`s: the first readers see
 *      the first writer's value and all run before the `inout` (it checks
 *      that they ran), the later readers see the `inout`'s value;
 *   2. one task naming one address both `in` and `inout` (it must not wait
 *      for itself) between a writer and a reader;
 *   3. a task with `depend(out: x)` whose child has `depend(inout: x)`:
 *      dependences order siblings only (the child waits for no one; if it
 *      waited for its parent, the parent's end would wait forever);
 *   4. omp_all_memory (dsm only: clang 14 compiles no omp_all_memory and
 *      its libomp knows none), the tasks made through the runtime's entry
 *      by hand as clang makes them: writers of separate words, then an
 *      `inout` on all memory that must follow them all, then readers of
 *      those words and a task with no dependence on them that must follow
 *      it, then one more all-memory task after the readers.
 * Each writer and each early reader spins a while first, so a task run
 * out of order is caught by the values. Built with dsmcc and, as the
 * reference, with clang on libomp. Prints "PASSED: 0 failed".
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define READERS 8
#define WORDS   6

static int failed;

static void check(int ok, const char *what)
{
    if (!ok) {
#pragma omp atomic
        failed++;
        printf("FAILED: %s\n", what);
    }
}

static void spin(void)
{
    double end = omp_get_wtime() + 0.002;
    while (omp_get_wtime() < end)
        ;
}

static long x, seen_first[READERS], seen_then[READERS];
static int read_first[READERS], readers_done_at_inout;

static void in_after_out_after_ins(void)
{
    x = 0;
    memset(read_first, 0, sizeof read_first);
#pragma omp task depend(out : x)
    {
        spin();
        x = 1;
    }
    for (int i = 0; i < READERS; i++) {
#pragma omp task depend(in : x) firstprivate(i)
        {
            spin();
            seen_first[i] = x;
            read_first[i] = 1;
        }
    }
#pragma omp task depend(inout : x)
    {
        int done = 0;
        for (int i = 0; i < READERS; i++)
            done += read_first[i];
        readers_done_at_inout = done;
        x = 2;
    }
    for (int i = 0; i < READERS; i++) {
#pragma omp task depend(in : x) firstprivate(i)
        seen_then[i] = x;
    }
#pragma omp taskwait
    int ok = readers_done_at_inout == READERS;
    for (int i = 0; i < READERS; i++)
        ok = ok && seen_first[i] == 1 && seen_then[i] == 2;
    check(ok, "1: an in ran before its out, or an inout before the ins before it");
}

static long y, y_seen;

static void in_and_inout_on_one_address(void)
{
    y = 0;
#pragma omp task depend(out : y)
    {
        spin();
        y = 1;
    }
#pragma omp task depend(in : y) depend(inout : y)
    y = y * 10;
#pragma omp task depend(in : y)
    y_seen = y;
#pragma omp taskwait
    check(y == 10 && y_seen == 10, "2: a task naming y in and inout ran out of order");
}

static long z, z_child;

static void children_depend_among_themselves(void)
{
    z = z_child = 0;
    for (int k = 0; k < 4; k++) {
#pragma omp task depend(out : z) firstprivate(k)
        {
#pragma omp task depend(inout : z) firstprivate(k)
            z_child += k;
#pragma omp taskwait
            z += 1;
        }
    }
#pragma omp taskwait
    check(z == 4 && z_child == 6, "3: a child's dependence on its parent's address went wrong");
}

#ifndef OMP_LIBOMP_REFERENCE
/* The compiler's side of a task, as clang lays it out (libomp's kmp.h):
 * the head, then the privates. */
typedef int32_t (*task_entry)(int32_t, void *);
struct hand_task {
    void      *shareds;
    task_entry routine;
    int32_t    part_id;
    int32_t    pad;
    int64_t    data1, data2; /* libomp's kmp_cmplrdata_t pair */
    int        kind, word;
};
struct depend_info {
    intptr_t base_addr;
    size_t   len;
    uint8_t  flags; /* 1 in, 2 out, 3 inout, 0x80 omp_all_memory */
};
struct ident;
void *__kmpc_omp_task_alloc(struct ident *, int32_t, int32_t, size_t, size_t, task_entry);
int32_t __kmpc_omp_task_with_deps(struct ident *, int32_t, void *, int32_t, void *, int32_t,
                                  void *);
int32_t __kmpc_global_thread_num(struct ident *);

enum { WRITE, ALL_FIRST, READ, FREE, ALL_LAST };
static long words[WORDS], seen_word[WORDS];
static int all_first_saw, free_saw, all_last_saw, all_first_ran, readers_ran;

static int32_t hand_routine(int32_t gtid, void *arg)
{
    (void)gtid;
    struct hand_task *t = arg;
    switch (t->kind) {
    case WRITE:
        spin();
        words[t->word] = t->word + 1;
        break;
    case ALL_FIRST: { /* every writer before it */
        int n = 0;
        for (int i = 0; i < WORDS; i++)
            n += words[i] == i + 1;
        all_first_saw = n;
        all_first_ran = 1;
        break;
    }
    case READ:
        spin();
        seen_word[t->word] = all_first_ran ? words[t->word] : -1;
#pragma omp atomic
        readers_ran++;
        break;
    case FREE: /* depends on a word no other task names: still after ALL_FIRST */
        free_saw = all_first_ran;
        break;
    case ALL_LAST:
        all_last_saw = readers_ran;
        break;
    }
    return 0;
}

static void hand_made(int kind, int word, int ndeps, struct depend_info *deps)
{
    int32_t gtid = __kmpc_global_thread_num(NULL);
    struct hand_task *t = __kmpc_omp_task_alloc(NULL, gtid, 1 /* tied */, sizeof *t, 0,
                                                hand_routine);
    t->kind = kind;
    t->word = word;
    __kmpc_omp_task_with_deps(NULL, gtid, t, ndeps, deps, 0, NULL);
}

static void all_memory_orders_everything(void)
{
    static long unrelated;
    memset(words, 0, sizeof words);
    all_first_saw = free_saw = all_last_saw = all_first_ran = readers_ran = 0;
    for (int i = 0; i < WORDS; i++) {
        struct depend_info d = {(intptr_t)&words[i], sizeof words[i], 2};
        hand_made(WRITE, i, 1, &d);
    }
    struct depend_info all = {0, 0, 0x80};
    hand_made(ALL_FIRST, 0, 1, &all);
    for (int i = 0; i < WORDS; i++) {
        struct depend_info d = {(intptr_t)&words[i], sizeof words[i], 1};
        hand_made(READ, i, 1, &d);
    }
    struct depend_info u = {(intptr_t)&unrelated, sizeof unrelated, 3};
    hand_made(FREE, 0, 1, &u);
    hand_made(ALL_LAST, 0, 1, &all);
#pragma omp taskwait
    int ok = all_first_saw == WORDS && free_saw == 1 && all_last_saw == WORDS;
    for (int i = 0; i < WORDS; i++)
        ok = ok && seen_word[i] == i + 1;
    check(ok, "4: a task ran out of order around an omp_all_memory task");
}
#endif

int main(void)
{
#pragma omp parallel
#pragma omp master
    for (int round = 0; round < 3; round++) {
        in_after_out_after_ins();
        in_and_inout_on_one_address();
        children_depend_among_themselves();
#ifndef OMP_LIBOMP_REFERENCE
        all_memory_orders_everything();
#endif
    }
    printf("PASSED: %d failed\n", failed);
    return failed != 0;
}
