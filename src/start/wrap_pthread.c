/*
 * wrap_pthread.c — libdsm-start.a: the program's pthread_create (dsmcc
 * links with -Wl,--wrap=pthread_create). Threads stay on the node that
 * creates them; dsm only says so when that leaves nodes idle
 * (dsm_program_thread_created, dsm.h), and the thread starts as usual.
 */
#include <dsm.h>
#include <pthread.h>

int __real_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                          void *(*start)(void *), void *arg);

int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                          void *(*start)(void *), void *arg)
{
    dsm_program_thread_created();
    return __real_pthread_create(thread, attr, start, arg);
}
