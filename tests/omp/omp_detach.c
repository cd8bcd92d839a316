/*
 * omp_detach.c — detachable tasks (task detach(event), omp_fulfill_event;
 * src/omp/task.c): a detached task completes only once its routine has
 * returned and its event is fulfilled, so
 *   - a task that depends on it does not run before the fulfilment, and
 *     the thread that created them goes on meanwhile;
 *   - taskwait and a taskgroup's end wait for it, also when the event is
 *     fulfilled by a thread the program created (no OpenMP thread);
 *   - an event fulfilled by a later task lets its dependents run.
 * Run in the sequential part and in a region's single on every node.
 * Built with dsmcc and with clang on libomp (the reference). Prints
 * "PASSED: 0 failed" when every check passed.
 */
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static int failed;

static void check(int ok, const char *what)
{
    if (!ok) {
#pragma omp critical
        failed++;
        printf("FAILED: %s\n", what);
    }
}

/* A thread the program created fulfils the event after a while. It
 * touches no variable of the program: the handle comes by value. */
static void *fulfil_later(void *arg)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    omp_fulfill_event((omp_event_handle_t)(uintptr_t)arg);
    return NULL;
}

static void dependents_wait_for_the_event(void)
{
    omp_event_handle_t ev = (omp_event_handle_t)0; /* detach(ev) sets it */
    int x = 0, body_ran = 0, dependent_ran = 0, fulfilled = 0, saw_fulfilled = 0;
#pragma omp task detach(ev) depend(out : x) shared(body_ran, x)
    {
        x = 1;
        body_ran = 1;
    }
#pragma omp task depend(in : x) shared(dependent_ran, fulfilled, saw_fulfilled, x)
    {
        dependent_ran = 1;
        saw_fulfilled = fulfilled && x == 1;
    }
    /* The detached task may or may not have run its body yet; either way
     * it is not complete, so its dependent has not run. */
    check(dependent_ran == 0, "a task ran before the detached task it depends on completed");
    fulfilled = 1;
#pragma omp flush
    omp_fulfill_event(ev);
#pragma omp taskwait
    check(body_ran == 1, "taskwait returned before the detached task's body ran");
    check(dependent_ran == 1 && saw_fulfilled == 1,
          "the dependent task did not run after the fulfilment");
}

static void taskwait_waits_for_a_created_thread(void)
{
    omp_event_handle_t ev = (omp_event_handle_t)0; /* detach(ev) sets it */
    int body_ran = 0, dependent_ran = 0, x = 0;
    pthread_t th;
#pragma omp task detach(ev) depend(out : x) shared(body_ran)
    body_ran = 1;
#pragma omp task depend(in : x) shared(dependent_ran)
    dependent_ran = 1;
    pthread_create(&th, NULL, fulfil_later, (void *)(uintptr_t)ev);
#pragma omp taskwait
    check(body_ran == 1 && dependent_ran == 1,
          "taskwait returned before the event a created thread fulfils");
    pthread_join(th, NULL);
}

static void taskgroup_waits_and_a_task_fulfils(void)
{
    int order[3] = {0, 0, 0}, next = 1, x = 0;
#pragma omp taskgroup
    {
        omp_event_handle_t ev = (omp_event_handle_t)0; /* detach(ev) sets it */
#pragma omp task detach(ev) depend(out : x) shared(order, next)
        order[0] = next++;
#pragma omp task depend(in : x) shared(order, next)
        order[2] = next++;
#pragma omp task firstprivate(ev) shared(order, next)
        { /* no dependence: free to run, and it completes the first */
            order[1] = 1;
            omp_fulfill_event(ev);
        }
    }
    check(order[0] >= 1 && order[1] == 1 && order[2] > order[0],
          "taskgroup: the dependent task ran before the detached one completed, or not at all");
}

int main(void)
{
    dependents_wait_for_the_event();
    taskwait_waits_for_a_created_thread();
    taskgroup_waits_and_a_task_fulfils();
    int team = 0;
#pragma omp parallel
    {
#pragma omp single
        {
            team = omp_get_num_threads();
            dependents_wait_for_the_event();
            taskgroup_waits_and_a_task_fulfils();
        }
    }
    printf("threads %d\n", team);
    printf("PASSED: %d failed\n", failed);
    return failed != 0;
}
