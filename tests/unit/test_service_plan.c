/*
 * test_service_plan.c — when a node's service thread polls on a CPU of its
 * own (DSM_SERVICE_POLL, src/net/service.c): the node's share of the CPUs
 * it may run on against its application threads, and which CPU it takes.
 */
#include "check.h"
#include "net/net.h"
#include "net/transport.h"

static int cpus[64];

static void fill(int n, int first, int step)
{
    for (int i = 0; i < n; i++)
        cpus[i] = first + i * step;
}

static void test_auto_polls_only_beyond_the_application_threads(void)
{
    fill(16, 0, 1);
    /* This host's one node (of a job of 2) with 2 threads on 16 CPUs: 14 spare. */
    struct service_plan p = service_plan_make(cpus, 16, NET_SERVICE_POLL_AUTO, 2, 2, 1, 0);
    CHECK(p.polls);
    CHECK_EQ(p.node_cpus, 16);
    CHECK_EQ(p.cpu, 15);
    /* 2 nodes x 8 threads on 16 CPUs: none spare. */
    p = service_plan_make(cpus, 16, NET_SERVICE_POLL_AUTO, 8, 2, 2, 1);
    CHECK(!p.polls);
    CHECK_EQ(p.cpu, -1);
    /* 8 nodes x 1 thread on 16: two CPUs each, the second for the service thread. */
    for (int i = 0; i < 8; i++) {
        p = service_plan_make(cpus, 16, NET_SERVICE_POLL_AUTO, 1, 8, 8, i);
        CHECK(p.polls);
        CHECK_EQ(p.node_cpus, 2);
        CHECK_EQ(p.cpu, 2 * i + 1);
    }
    /* A job of one node: nobody to serve, sleep. */
    p = service_plan_make(cpus, 16, NET_SERVICE_POLL_AUTO, 1, 1, 1, 0);
    CHECK(!p.polls);
    /* 2 nodes on 2 CPUs (this development machine): sleep. */
    p = service_plan_make(cpus, 2, NET_SERVICE_POLL_AUTO, 1, 2, 2, 0);
    CHECK(!p.polls);
}

static void test_on_and_off_are_obeyed(void)
{
    fill(16, 0, 1);
    struct service_plan p = service_plan_make(cpus, 16, NET_SERVICE_POLL_OFF, 1, 2, 1, 0);
    CHECK(!p.polls);
    CHECK_EQ(p.cpu, -1);
    /* on without a CPU to spare: it polls, unpinned (it yields between polls). */
    p = service_plan_make(cpus, 2, NET_SERVICE_POLL_ON, 1, 2, 2, 1);
    CHECK(p.polls);
    CHECK_EQ(p.cpu, -1);
    p = service_plan_make(cpus, 16, NET_SERVICE_POLL_ON, 1, 2, 2, 1);
    CHECK(p.polls);
    CHECK_EQ(p.cpu, 15);
}

static void test_the_affinity_mask_names_the_cpu(void)
{
    /* A mask of the odd CPUs 1..31 (taskset), 2 nodes of 3 threads: 8 each. */
    fill(16, 1, 2);
    struct service_plan p = service_plan_make(cpus, 16, NET_SERVICE_POLL_AUTO, 3, 2, 2, 0);
    CHECK(p.polls);
    CHECK_EQ(p.cpu, 15);
    p = service_plan_make(cpus, 16, NET_SERVICE_POLL_AUTO, 3, 2, 2, 1);
    CHECK_EQ(p.cpu, 31);
    /* Fewer CPUs than nodes: a share of none, sleeping. */
    p = service_plan_make(cpus, 3, NET_SERVICE_POLL_AUTO, 1, 4, 4, 3);
    CHECK(!p.polls);
    CHECK_EQ(p.node_cpus, 0);
    /* A nonsense index is taken as the first node, never read past the mask. */
    p = service_plan_make(cpus, 4, NET_SERVICE_POLL_AUTO, 1, 2, 2, 7);
    CHECK_EQ(p.cpu, 3);
}

int main(void)
{
    test_auto_polls_only_beyond_the_application_threads();
    test_on_and_off_are_obeyed();
    test_the_affinity_mask_names_the_cpu();
    return check_report("test_service_plan");
}
