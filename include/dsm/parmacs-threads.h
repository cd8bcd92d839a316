/*
 * dsm/parmacs-threads.h — the PARMACS macros' baseline on POSIX threads in
 * one process (dsm/parmacs-threads.m4, dsmcc --threads): the same source,
 * hardware shared memory. MAIN_ENV includes it with PARMACS_THREADS_MAIN
 * defined, which makes the definitions; EXTERN_ENV, the declarations.
 */
#ifndef DSM_PARMACS_THREADS_H
#define DSM_PARMACS_THREADS_H
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

struct parmacs_barrier { pthread_mutex_t m; pthread_cond_t c; unsigned count, gen; };
struct parmacs_pause   { pthread_mutex_t m; pthread_cond_t c; int flag; };
struct parmacs_gs      { pthread_mutex_t m; long sub; };

extern __thread int parmacs_pid;
void parmacs_create(void (*fn)(void));
void parmacs_create_all(void (*fn)(void), int procs);
void parmacs_wait_for_end(void);
void parmacs_barrier_init(struct parmacs_barrier *b);
void parmacs_barrier(struct parmacs_barrier *b, unsigned procs);

#ifdef PARMACS_THREADS_MAIN
#define PARMACS_MAX_THREADS 1024
__thread int parmacs_pid;
static pthread_t parmacs_threads[PARMACS_MAX_THREADS];
static int parmacs_nthreads;

struct parmacs_start { void (*fn)(void); int pid; };

static void *parmacs_run(void *arg)
{
    struct parmacs_start s = *(struct parmacs_start *)arg;
    free(arg);
    parmacs_pid = s.pid;
    s.fn();
    return NULL;
}

void parmacs_create(void (*fn)(void))
{
    struct parmacs_start *s = malloc(sizeof *s);
    if (!s || parmacs_nthreads == PARMACS_MAX_THREADS) {
        fprintf(stderr, "parmacs: too many threads\n");
        exit(1);
    }
    s->fn = fn;
    s->pid = parmacs_nthreads + 1;
    if (pthread_create(&parmacs_threads[parmacs_nthreads], NULL, parmacs_run, s)) {
        fprintf(stderr, "parmacs: cannot create a thread\n");
        exit(1);
    }
    parmacs_nthreads++;
}

void parmacs_create_all(void (*fn)(void), int procs)
{
    for (int i = 1; i < procs; i++)
        parmacs_create(fn);
    fn();
}

void parmacs_wait_for_end(void)
{
    for (int i = 0; i < parmacs_nthreads; i++)
        pthread_join(parmacs_threads[i], NULL);
    parmacs_nthreads = 0;
}

void parmacs_barrier_init(struct parmacs_barrier *b)
{
    pthread_mutex_init(&b->m, NULL);
    pthread_cond_init(&b->c, NULL);
    b->count = b->gen = 0;
}

void parmacs_barrier(struct parmacs_barrier *b, unsigned procs)
{
    pthread_mutex_lock(&b->m);
    unsigned gen = b->gen;
    if (++b->count == procs) {
        b->count = 0;
        b->gen++;
        pthread_cond_broadcast(&b->c);
    } else {
        while (gen == b->gen)
            pthread_cond_wait(&b->c, &b->m);
    }
    pthread_mutex_unlock(&b->m);
}
#endif
#endif
