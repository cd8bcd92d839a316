/*
 * task_reduction.c — task reductions: `taskgroup task_reduction(...)`,
 * `task in_reduction(...)`, `taskloop reduction(...)`, and the `task`
 * modifier of a parallel's or a loop's reduction (`reduction(task, ...)`),
 * as clang emits them against libomp (kmp_tasking.cpp, the
 * __kmpc_taskred_* and __kmpc_task_reduction_* entries).
 *
 * A taskgroup with a task reduction keeps, per item, the item's shared
 * variable, its compiler-made init, combiner and fini routines, and one
 * private copy per thread that ran a participating task, made the first
 * time that thread asks (libomp's lazy copies). A participating task asks
 * for its copy with __kmpc_task_reduction_get_th_data, naming the
 * taskgroup (or none: the innermost of the task) and the item by its
 * shared address or by a private copy of an enclosing task's (a task with
 * in_reduction inside another passes its own copy's address); the groups
 * are searched from that one outward. At the taskgroup's end, once its
 * tasks are complete, the thread that ends it combines every copy into
 * the shared variable: the copies' writes were made by tasks that
 * completed before that end (task.c's wait), and the combined value is a
 * write of that thread, coherent as any other.
 *
 * The `task` modifier: every thread of the team calls the modifier's init
 * and fini around its part of the region. libomp shares one set of copies
 * over the team and the last thread to finish combines them; here each
 * thread's init opens a taskgroup of its own whose shared variable is that
 * thread's private reduction variable, its tasks (any thread may run
 * them) reduce into the copies of its group, and its fini ends the group,
 * combining them into its variable before the region's reduction merges
 * the threads' variables. The total is the same, and no thread waits for
 * another's tasks.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "omp/kmpc.h"
#include "omp/omp_state.h"

/* libomp's kmp_task_red_input_t (the one-argument init) and
 * kmp_taskred_input_t (init(priv, orig)), as clang lays them out. */
struct red_input_old {
    void  *shar;
    size_t size;
    void  *init, *fini, *comb;
    uint32_t flags;
};
struct red_input {
    void  *shar, *orig;
    size_t size;
    void  *init, *fini, *comb;
    uint32_t flags;
};

/* One thread's private copy of an item. */
struct red_copy {
    struct red_copy *next;
    const void      *owner; /* the thread's key (below) */
    void            *data;
};

struct red_item {
    void  *shar, *orig;  /* orig NULL: init takes one argument */
    size_t size;
    void (*init)(void *, ...);
    void (*fini)(void *);
    void (*comb)(void *, void *);
    struct red_copy *copies;
};

struct omp_taskred {
    pthread_mutex_t lock; /* the copies' lists: the node's threads share them */
    int             num;
    struct red_item items[];
};

/* What names the calling thread among an item's copies. */
static __thread char thread_key;

/* Copies are aligned as malloc aligns nothing larger: a reduction item may
 * be a vector or an over-aligned struct. */
#define COPY_ALIGN 64

static struct omp_taskred *red_new(int num)
{
    if (num <= 0)
        log_fatal("a task reduction of %d items", num);
    struct omp_taskred *r = calloc(1, sizeof *r + (size_t)num * sizeof r->items[0]);
    if (!r)
        log_fatal("out of memory for a task reduction");
    pthread_mutex_init(&r->lock, NULL);
    r->num = num;
    return r;
}

static void item_set(struct red_item *it, void *shar, void *orig, size_t size, void *init,
                     void *fini, void *comb)
{
    if (!comb)
        log_fatal("a task reduction item at %p without a combiner", shar);
    *it = (struct red_item){.shar = shar, .orig = orig, .size = size,
                            .init = (void (*)(void *, ...))init, .fini = (void (*)(void *))fini,
                            .comb = (void (*)(void *, void *))comb};
}

/* Opens the reduction on the current taskgroup (the innermost, just opened
 * by the compiler's __kmpc_taskgroup); returns it, the handle clang passes
 * to the participating tasks. */
static void *attach(struct omp_taskred *r)
{
    struct taskgroup *g = omp_taskgroup_current();
    if (!g)
        log_fatal("a task reduction outside a taskgroup");
    struct omp_taskred **slot = omp_taskgroup_reduction(g);
    if (*slot)
        log_fatal("a second task reduction on one taskgroup");
    *slot = r;
    return g;
}

void *__kmpc_taskred_init(int gtid, int num, void *data)
{
    (void)gtid;
    struct omp_taskred *r = red_new(num);
    const struct red_input *in = data;
    for (int i = 0; i < num; i++)
        item_set(&r->items[i], in[i].shar, in[i].orig ? in[i].orig : in[i].shar, in[i].size,
                 in[i].init, in[i].fini, in[i].comb);
    return attach(r);
}

void *__kmpc_task_reduction_init(int gtid, int num, void *data)
{
    (void)gtid;
    struct omp_taskred *r = red_new(num);
    const struct red_input_old *in = data;
    for (int i = 0; i < num; i++)
        item_set(&r->items[i], in[i].shar, NULL, in[i].size, in[i].init, in[i].fini, in[i].comb);
    return attach(r);
}

void *__kmpc_taskred_modifier_init(ident_t *loc, int gtid, int is_ws, int num, void *data)
{
    (void)is_ws;
    __kmpc_taskgroup(loc, gtid);
    return __kmpc_taskred_init(gtid, num, data);
}

void *__kmpc_task_reduction_modifier_init(ident_t *loc, int gtid, int is_ws, int num, void *data)
{
    (void)is_ws;
    __kmpc_taskgroup(loc, gtid);
    return __kmpc_task_reduction_init(gtid, num, data);
}

void __kmpc_task_reduction_modifier_fini(ident_t *loc, int gtid, int is_ws)
{
    (void)is_ws;
    __kmpc_end_taskgroup(loc, gtid);
}

/* Whether p is the item's shared variable or inside one of its copies;
 * caller holds r->lock. */
static bool names_item(const struct red_item *it, const char *p)
{
    if (p == it->shar)
        return true;
    for (const struct red_copy *c = it->copies; c; c = c->next)
        if (p >= (const char *)c->data && p < (const char *)c->data + (it->size ? it->size : 1))
            return true;
    return false;
}

/* The calling thread's copy of the item, made and initialised the first
 * time; caller holds r->lock. */
static void *copy_of(struct red_item *it)
{
    for (struct red_copy *c = it->copies; c; c = c->next)
        if (c->owner == &thread_key)
            return c->data;
    struct red_copy *c = malloc(sizeof *c);
    size_t size = (it->size + COPY_ALIGN - 1) & ~(size_t)(COPY_ALIGN - 1);
    void *data = aligned_alloc(COPY_ALIGN, size ? size : COPY_ALIGN);
    if (!c || !data)
        log_fatal("out of memory for a task reduction's private copy");
    memset(data, 0, size ? size : COPY_ALIGN);
    if (it->init) {
        if (it->orig)
            ((void (*)(void *, void *))it->init)(data, it->orig);
        else
            ((void (*)(void *))it->init)(data);
    }
    *c = (struct red_copy){.next = it->copies, .owner = &thread_key, .data = data};
    it->copies = c;
    return data;
}

void *__kmpc_task_reduction_get_th_data(int gtid, void *tskgrp, void *data)
{
    (void)gtid;
    struct taskgroup *g = tskgrp ? tskgrp : omp_taskgroup_current();
    for (; g; g = omp_taskgroup_outer(g)) {
        struct omp_taskred *r = *omp_taskgroup_reduction(g);
        if (!r)
            continue;
        pthread_mutex_lock(&r->lock);
        for (int i = 0; i < r->num; i++)
            if (names_item(&r->items[i], data)) {
                void *mine = copy_of(&r->items[i]);
                pthread_mutex_unlock(&r->lock);
                return mine;
            }
        pthread_mutex_unlock(&r->lock);
    }
    log_fatal("in_reduction: %p is no item of a task reduction of the enclosing taskgroups", data);
}

void omp_taskred_finish(struct omp_taskred *r)
{
    for (int i = 0; i < r->num; i++) {
        struct red_item *it = &r->items[i];
        while (it->copies) {
            struct red_copy *c = it->copies;
            it->copies = c->next;
            it->comb(it->shar, c->data);
            if (it->fini)
                it->fini(c->data);
            free(c->data);
            free(c);
        }
    }
    pthread_mutex_destroy(&r->lock);
    free(r);
}
