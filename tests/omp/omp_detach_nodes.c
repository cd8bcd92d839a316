/*
 * omp_detach_nodes.c — events fulfilled on another node than their
 * task's (task detach(event), omp_fulfill_event; src/omp/task.c). A team
 * of two threads, one a node: one thread makes a detached task and a task
 * that depends on it, and hands the event's handle to the other through
 * a shared variable (a flush, then a flag); the other writes a value and
 * fulfils the event. The two are the team's first and last threads, on
 * the first and last node (with several threads a node too). The maker's taskwait returns once the event is
 * fulfilled, and the dependent task, which runs only then, sees the
 * value. Both ways: thread 0 (node 0, the master's shared stack) makes
 * and the last fulfils, then the last (its node's private stack) makes
 * and thread 0 fulfils. On the code before, the fulfilment ended the job
 * ("omp_fulfill_event(...): not an event of a task of this node").
 *
 * Then the detached tasks themselves leave their node: the master (in a
 * `master`, so that the others take its tasks at the barrier after it)
 * makes 4 detached tasks, each with a dependent task, and waits (bounded,
 * running no task) until their bodies have run — so other threads ran
 * them, on other nodes with one thread a node. The even ones fulfil their
 * own event in their body (a record of node 0's, fulfilled where the task
 * runs); the master fulfils the odd ones once their bodies are done. Each
 * dependent task must see the value written before its fulfilment. On the
 * code before, detached tasks never left their node: the master ran each
 * at once and the bodies' nodes said so.
 *
 * With the argument "twice" the fulfiller fulfils the first event twice:
 * the second names no event still to be fulfilled, and the job ends with
 * that one line (checked by its test).
 *
 * Every wait is bounded: a failure is a check that fails, never a hang.
 * Prints "events fulfilled on another node: 2" and "PASSED: 0 failed".
 */
#include <dsm.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "handoff.h"

static omp_event_handle_t handle_box[2]; /* round r's handle, written by its maker */
static int have_handle[2];               /* set after a flush once handle_box[r] is written */
static int payload[2];                   /* written by the fulfiller before it fulfils */
static int body_node[2], maker_node[2], dependent_saw[2], fulfilled_on[2], dependent_ran_early[2];
static int fulfilled[2];

static void make_and_wait(int round)
{
    omp_event_handle_t ev = (omp_event_handle_t)0; /* detach(ev) sets it */
    int x = 0;
#pragma omp task detach(ev) depend(out : x) firstprivate(round)
    body_node[round] = dsm_rank();
#pragma omp task depend(in : x) firstprivate(round)
    {
        dependent_saw[round] = payload[round];
        dependent_ran_early[round] = !read_int(&fulfilled[round]);
    }
    handle_box[round] = ev;
#pragma omp flush
#pragma omp atomic write
    have_handle[round] = 1;
    maker_node[round] = dsm_rank();
#pragma omp taskwait
    if (dependent_ran_early[round] || dependent_saw[round] != 1000 + round)
        fail("the dependent task ran before the fulfilment, or did not see the fulfiller's write",
             round);
}

static void fulfil(int round, int twice)
{
    if (!await_flag(&have_handle[round], "the handle never came", round))
        return;
#pragma omp flush
    omp_event_handle_t ev = handle_box[round];
    payload[round] = 1000 + round;
    fulfilled_on[round] = dsm_rank();
#pragma omp atomic write
    fulfilled[round] = 1;
    omp_fulfill_event(ev);
    if (twice)
        omp_fulfill_event(ev); /* ends the job: no event still to be fulfilled */
}

#define MOVED 4
static int moved_thread[MOVED], moved_node[MOVED], moved_done[MOVED], moved_payload[MOVED];
static int moved_saw[MOVED];

/* The master's part of the last phase (above). */
static void detached_tasks_leave(void)
{
    int deps[MOVED]; /* on the master's stack: the dependences' addresses */
    omp_event_handle_t events[MOVED];
    for (int i = 0; i < MOVED; i++) {
        omp_event_handle_t ev = (omp_event_handle_t)0;
#pragma omp task detach(ev) depend(out : deps[i]) firstprivate(i)
        {
            moved_thread[i] = omp_get_thread_num();
            moved_node[i] = dsm_rank();
            if (i % 2 == 0) {
                moved_payload[i] = 2000 + i;
                omp_fulfill_event(ev); /* its own event, from where it runs */
            }
#pragma omp atomic write
            moved_done[i] = 1;
        }
#pragma omp task depend(in : deps[i]) firstprivate(i)
        moved_saw[i] = moved_payload[i];
        events[i] = ev;
    }
    for (int i = 0; i < MOVED; i++) {
        if (!await_flag(&moved_done[i], "a detached task's body never ran on another thread", i))
            return; /* its event unfulfilled: the job's limit ends it */
        if (i % 2 == 1) {
#pragma omp flush
            moved_payload[i] = 2000 + i;
            omp_fulfill_event(events[i]);
        }
    }
#pragma omp taskwait
    int others = 0, elsewhere = 0;
    for (int i = 0; i < MOVED; i++) {
        others += moved_thread[i] != 0;
        if (moved_thread[i] == 0)
            fail("the master ran a detached task it was waiting for", i);
        if (moved_saw[i] != 2000 + i)
            fail("a dependent task ran before the detached task's fulfilment", i);
        elsewhere += moved_node[i] != dsm_rank();
    }
    if (omp_get_num_threads() == dsm_nodes() && elsewhere != MOVED)
        fail("a detached task stayed on its node with no other thread there", elsewhere);
    printf("detached tasks run by other threads: %d, on other nodes: %d\n", others, elsewhere);
}

int main(int argc, char **argv)
{
    int twice = argc > 1 && strcmp(argv[1], "twice") == 0;
    int team = 0;
#pragma omp parallel
    {
#pragma omp master
        team = omp_get_num_threads();
        handoff_rounds(make_and_wait, fulfil, twice);
        if (!twice && omp_get_num_threads() > 1) {
#pragma omp master
            detached_tasks_leave();
#pragma omp barrier
        }
    }
    int across = 0;
    for (int r = 0; r < 2; r++)
        across += fulfilled_on[r] != maker_node[r];
    if (team < 2 || across != 2)
        fail("the events were not fulfilled on another node than their tasks'", across);
    printf("events fulfilled on another node: %d\n", across);
    printf("PASSED: %d failed\n", failed);
    return failed != 0;
}
