/*
 * liveness.c — how long a silent peer is given before it counts as dead.
 *
 * DSM_PEER_TIMEOUT is the silence allowed on a machine that gives each of
 * its runnable threads a fair turn often (transport.c already stretches it
 * where this job alone crowds the CPUs). A peer on this host also shares
 * the CPUs with everything else that runs here: where the host's run queue
 * holds more than FREE_PER_CPU runnable threads a CPU (the threshold of
 * transport.c's own rule for a job's nodes), every thread's turn comes
 * that much more seldom, and a live node's answer takes that much longer.
 * Measured (make test beside six other test suites, 256-node ones among
 * them, on 2 CPUs at load 114-175): live nodes of 4- and 8-node jobs went
 * unanswered for 10 to 32 s, and 12 jobs of 1,904 were ended as dead. So
 * the silence allowed a co-located peer grows in proportion to the load
 * beyond that. A stopped or hung peer is still found, later; a peer on
 * another host gets no more time (its host's load is not known here, and
 * our own starvation is covered by reading the socket dry first).
 *
 * The load is the larger of the one-minute average and the runnable
 * threads now (/proc/loadavg), read at most every LOAD_EVERY_NS: it is
 * asked for only once a peer is already past the base timeout.
 */
#include "net/transport.h"

#include <stdio.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/state.h"

#define FREE_PER_CPU   16.0   /* runnable threads a CPU before answers slow (transport.c: 16 nodes) */
#define LOAD_EVERY_NS  (100 * 1000000ull)

static double host_load(void)
{
    static DSM_STATE _Atomic uint64_t read_ns;
    static DSM_STATE _Atomic double last;
    uint64_t now = clock_ns();
    if (now - atomic_load_explicit(&read_ns, memory_order_relaxed) < LOAD_EVERY_NS)
        return atomic_load_explicit(&last, memory_order_relaxed);
    double avg = 0, running = 0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf %*f %*f %lf", &avg, &running) != 2)
            avg = running = 0;
        fclose(f);
    }
    double load = avg > running ? avg : running;
    atomic_store_explicit(&last, load, memory_order_relaxed);
    atomic_store_explicit(&read_ns, now, memory_order_relaxed);
    return load;
}

uint64_t net_silence_allowed_ns(uint64_t base_ns, bool same_host)
{
    if (!same_host || !base_ns)
        return base_ns;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    double per_cpu = host_load() / (double)(cpus > 0 ? cpus : 1);
    if (per_cpu <= FREE_PER_CPU)
        return base_ns;
    return (uint64_t)((double)base_ns * (per_cpu / FREE_PER_CPU));
}
