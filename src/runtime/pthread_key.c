/*
 * pthread_key.c — a dsmcc program's thread-specific data, the job's
 * (include/dsm/pthread.h; docs/unmodified-programs.md, "Thread-specific
 * data").
 *
 * A key is a name every thread of the program may use, whichever node it
 * runs on; the C library's keys are one process's (a key made on the
 * master would be EINVAL on another node, or another library's key
 * there). So a key is made in the job's table (runtime.h, struct
 * pthread_keys: shared memory under the dsm lock SYNC_PTHREAD_KEYS_ID),
 * which holds each live key and its destructor (a function's address is
 * the same on every node: dsmrun starts them without address-space
 * randomisation). A thread's values are its own, in private memory of its
 * node: an array indexed by the key's index, each value stored with the
 * key it was set for, so a value set for a deleted key is never returned
 * for the key made next at that index (POSIX: a new key holds NULL in every
 * thread). pthread_getspecific and pthread_setspecific thus take no lock
 * and send no message.
 *
 * At a thread's end (pthread_exit or its routine's return; main's
 * pthread_exit) the destructors of its non-NULL values run as POSIX says:
 * each value set to NULL and then its destructor called, in rounds while
 * values remain, at most PTHREAD_DESTRUCTOR_ITERATIONS. They run before
 * the thread's end is recorded, so a joiner sees what they wrote.
 *
 * In a job of one node, and in OpenMP programs, keys are the C library's;
 * a key of ours is told from one of the C library's by its tag, so
 * either works in either call at any time (exit handlers included).
 */
#include <dsm/pthread.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <threads.h>

#include "base/job.h"
#include "base/log.h"
#include "base/stack.h"
#include "sync/sync.h"
#include "runtime/runtime.h"

#define KEY_INDEX(k) ((k) & (PTHREAD_KEYS - 1))
#define KEY_GEN_MAX  ((1u << 20) - 1) /* bits 10 to 29 */

struct tsd_value {
    uint32_t key; /* the key it was set for */
    void    *value;
};

/* The calling thread's values: PTHREAD_KEYS of them, made at its first
 * pthread_setspecific of one of our keys. */
static __thread struct tsd_value *values;

static bool is_ours(pthread_key_t k) { return (k & 0xc0000000u) == PTHREAD_KEY_TAG; }

static struct pthread_keys *table(const char *call)
{
    struct pthread_keys *t = pthreads_keys();
    if (!t)
        log_fatal("%s on node %d by a thread dsm did not start: a program's threads are "
                  "created by main or by threads pthread_create started", call, job()->rank);
    return t;
}

struct key_args {
    pthread_key_t *key;
    void         (*destructor)(void *);
    int            ret;
};

static void create_call(void *p)
{
    struct key_args *a = p;
    struct pthread_keys *t = table("pthread_key_create");
    sync_pthread_lock(SYNC_PTHREAD_KEYS_ID);
    a->ret = EAGAIN; /* PTHREAD_KEYS_MAX live keys */
    for (uint32_t i = 0; i < PTHREAD_KEYS; i++) {
        if (t->key[i])
            continue;
        uint32_t gen = t->gen[i] < KEY_GEN_MAX ? t->gen[i] + 1 : 1;
        t->gen[i] = gen;
        t->key[i] = PTHREAD_KEY_TAG | gen << 10 | i;
        t->destructor[i] = (uint64_t)(uintptr_t)a->destructor;
        *a->key = t->key[i];
        a->ret = 0;
        break;
    }
    sync_pthread_unlock(SYNC_PTHREAD_KEYS_ID);
}

int dsm_pthread_key_create(pthread_key_t *key, void (*destructor)(void *))
{
    if (!sync_pthreads_on)
        return pthread_key_create(key, destructor);
    struct key_args a = {key, destructor, 0};
    stack_private(create_call, &a);
    return a.ret;
}

static void delete_call(void *p)
{
    struct key_args *a = p;
    struct pthread_keys *t = table("pthread_key_delete");
    pthread_key_t k = *a->key;
    sync_pthread_lock(SYNC_PTHREAD_KEYS_ID);
    uint32_t i = KEY_INDEX(k);
    a->ret = t->key[i] == k ? 0 : EINVAL;
    if (!a->ret)
        t->key[i] = 0;
    sync_pthread_unlock(SYNC_PTHREAD_KEYS_ID);
}

int dsm_pthread_key_delete(pthread_key_t key)
{
    if (!is_ours(key))
        return pthread_key_delete(key);
    if (!sync_pthreads_on) /* after the job: the key stays, as its values do */
        return 0;
    struct key_args a = {&key, NULL, 0};
    stack_private(delete_call, &a);
    return a.ret;
}

void *dsm_pthread_getspecific(pthread_key_t key)
{
    if (!is_ours(key))
        return pthread_getspecific(key);
    const struct tsd_value *v = values ? &values[KEY_INDEX(key)] : NULL;
    return v && v->key == key ? v->value : NULL;
}

int dsm_pthread_setspecific(pthread_key_t key, const void *value)
{
    if (!is_ours(key))
        return pthread_setspecific(key, value);
    if (!values && !(values = calloc(PTHREAD_KEYS, sizeof *values)))
        return ENOMEM;
    values[KEY_INDEX(key)] = (struct tsd_value){key, (void *)value};
    return 0;
}

/* ---- a thread's end ------------------------------------------------------ */

struct exit_round {
    uint32_t n;
    uint32_t index[PTHREAD_KEYS];
    void   (*destructor[PTHREAD_KEYS])(void *);
};

/* The destructors of the keys at r->index that are still live for the
 * key each value was set for (NULL: none, or the key was deleted). */
static void destructors_call(void *p)
{
    struct exit_round *r = p;
    struct pthread_keys *t = pthreads_keys();
    if (!t) {
        r->n = 0;
        return;
    }
    sync_pthread_lock(SYNC_PTHREAD_KEYS_ID);
    for (uint32_t j = 0; j < r->n; j++) {
        uint32_t i = r->index[j];
        r->destructor[j] = t->key[i] == values[i].key ? (void (*)(void *))(uintptr_t)t->destructor[i] : NULL;
    }
    sync_pthread_unlock(SYNC_PTHREAD_KEYS_ID);
}

void pthread_keys_exit(void)
{
    if (!values)
        return;
    static __thread struct exit_round *r;
    if (!r && !(r = malloc(sizeof *r)))
        log_fatal("out of memory at a thread's end");
    for (int round = 0; round < PTHREAD_DESTRUCTOR_ITERATIONS; round++) {
        r->n = 0;
        for (uint32_t i = 0; i < PTHREAD_KEYS; i++)
            if (values[i].value)
                r->index[r->n++] = i;
        if (!r->n)
            break;
        if (sync_pthreads_on)
            stack_private(destructors_call, r);
        else
            r->n = 0; /* after the job: the table is gone with it */
        for (uint32_t j = 0; j < r->n; j++) {
            struct tsd_value *v = &values[r->index[j]];
            void *value = v->value;
            v->value = NULL;
            if (r->destructor[j])
                r->destructor[j](value);
        }
    }
    free(values);
    values = NULL;
    free(r);
    r = NULL;
}

/* ---- C11's names for the same ------------------------------------------- */

int dsm_tss_create(tss_t *key, tss_dtor_t destructor)
{
    if (!sync_pthreads_on)
        return tss_create(key, destructor);
    pthread_key_t k;
    if (dsm_pthread_key_create(&k, destructor))
        return thrd_error;
    *key = k;
    return thrd_success;
}

void dsm_tss_delete(tss_t key)
{
    if (!is_ours(key))
        tss_delete(key);
    else
        dsm_pthread_key_delete(key);
}

void *dsm_tss_get(tss_t key) { return is_ours(key) ? dsm_pthread_getspecific(key) : tss_get(key); }

int dsm_tss_set(tss_t key, void *value)
{
    if (!is_ours(key))
        return tss_set(key, value);
    return dsm_pthread_setspecific(key, value) ? thrd_error : thrd_success;
}
