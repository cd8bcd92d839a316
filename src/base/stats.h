/*
 * stats.h — every statistics counter of a node, defined once.
 *
 * The X-macro list below feeds the counter enum, the names printed by
 * `dsmrun --stats`, the JSON and the traces alike. Counters are process-wide
 * and updated with relaxed atomics: they are read only for reports. Each
 * counter is kept in STATS_SHARDS shards, read as their sum; a thread adds
 * to the shard its stack's address picks (threads' stacks lie megabytes
 * apart: no thread-local variable, whose lookup is a call in a shared
 * library and whose initial-exec form would keep the library from being
 * loaded by dlopen). One word that every thread of a node added to at
 * every OpenMP task moved between their caches at each add (BOTS uts on
 * one node of 2 threads: 15 % of the time in the task entry, 8 % now).
 */
#ifndef DSM_BASE_STATS_H
#define DSM_BASE_STATS_H
#include <stdatomic.h>
#include <stdint.h>

#define STATS_COUNTERS(X)                                                      \
    X(NET_DGRAMS_SENT,     "datagrams sent")                                   \
    X(NET_BYTES_SENT,      "datagram bytes sent")                              \
    X(NET_DGRAMS_RECV,     "datagrams received")                               \
    X(NET_BYTES_RECV,      "datagram bytes received")                          \
    X(NET_ACKS_SENT,       "pure acknowledgements sent")                       \
    X(NET_RETRANSMITS,     "datagrams retransmitted")                          \
    X(NET_FAST_RETRANSMITS,"of which triggered by selective ack")              \
    X(NET_TAIL_PROBES,     "of which tail-loss probes")                        \
    X(NET_LOSSY_COPIES,    "small datagrams sent twice (over 1 in 20 resent: loss, or a slow peer)") \
    X(NET_DUPS_DROPPED,    "duplicate datagrams dropped")                      \
    X(NET_OOO_BUFFERED,    "datagrams buffered out of order")                  \
    X(NET_FOREIGN_DROPPED, "foreign or malformed datagrams dropped")           \
    X(NET_AUTH_DROPPED,    "datagrams failing authentication dropped")         \
    X(NET_INJECT_LOST,     "datagrams dropped by loss injection")              \
    X(NET_INJECT_DUPED,    "datagrams duplicated by injection")                \
    X(NET_INJECT_REORDERED,"datagrams reordered by injection")                 \
    X(NET_INJECT_DELAYED,  "datagrams held by an emulated link's delay")       \
    X(NET_MSGS_SENT,       "transport messages sent")                          \
    X(NET_MSGS_RECV,       "transport messages delivered")                     \
    X(IPC_SMALL_SENT,      "ipc messages sent on the one-message path")        \
    X(IPC_LARGE_SENT,      "ipc messages sent by request/grant")               \
    X(IPC_PAGES_SENT,      "ipc out-of-line pages sent")                       \
    X(IPC_GRANTS_SENT,     "ipc grants sent")                                  \
    X(IPC_ACCEPTS_SENT,    "ipc message-accept notifications sent")            \
    X(IPC_FLOW_BLOCKS,     "ipc sends that waited for queue space")            \
    X(IPC_RPCS,            "ipc calls made")                                   \
    X(IPC_RIGHTS_SENT,     "ipc port rights sent in messages")                 \
    X(IPC_REFUSED,         "ipc messages refused (no right held, or an unknown port)") \
    X(IPC_PORTS_MOVED,     "ipc ports moved away with their receive right")    \
    X(IPC_FORWARDED,       "ipc messages forwarded after their port moved")    \
    X(IPC_NOTIFICATIONS,   "ipc notifications sent (no-senders, dead name, send-once)") \
    X(READ_FAULTS,         "read faults")                                      \
    X(WRITE_FAULTS,        "write faults")                                     \
    X(PAGES_FETCHED,       "pages fetched from their home")                    \
    X(PAGES_PULLED,        "of which refreshed at an acquire, without a fault") \
    X(PAGES_AHEAD,         "of which read ahead of a fault")                   \
    X(PAGES_WRITE_AHEAD,   "of which fetched ahead of a write fault")          \
    X(PAGES_GOT,           "of which read one-sided from the home's memory (UCX get)") \
    X(ONESIDE_RETRIES,     "one-sided reads that found the page changing and read again") \
    X(ONESIDE_ASKED,       "one-sided reads that asked the home instead (not published)") \
    X(FETCHES_IN_FLIGHT_MAX, "most fetches a fault waits for in flight at once (node-wide lock: 1)") \
    X(PAGES_SERVED,        "pages served to other nodes (as home)")            \
    X(CACHE_EVICTIONS,     "copies evicted at DSM_LOCAL_MEM")                  \
    X(CACHE_WRITEBACKS,    "of which written back first (dirty)")              \
    X(CACHE_SWEEPS,        "reference bits cleared by the clock hand")         \
    X(CACHE_REF_FAULTS,    "faults that only set a reference bit again")       \
    X(CACHE_RESIDENT_MAX,  "most copies resident at once (pages)")             \
    X(HOME_UNSNAPPED,      "home pages shared without a snapshot (at the limit)") \
    X(HOME_COMPARES,       "home pages compared with their snapshots at releases") \
    X(HOME_UNWRITTEN,      "home pages the kernel's write watch found unwritten (not compared)") \
    X(PROTECT_CALLS,       "protection changes of shared pages (mprotect calls; each interrupts the node's CPUs)") \
    X(PROTECT_PAGES,       "pages they changed (a run of pages is one call)")   \
    X(TWINS,               "twins made")                                       \
    X(DIFFS_CREATED,       "diffs created")                                    \
    X(DIFF_BYTES,          "diff bytes created")                               \
    X(DIFFS_APPLIED,       "diffs applied (as home)")                          \
    X(DIFFS_BEFORE_ARRIVAL, "diffs a barrier arrival followed unacknowledged")  \
    X(DIFFS_BESIDE_ASKS,    "diffs a flush's asks went beside, unacknowledged") \
    X(INVALIDATIONS,       "pages invalidated (write notices, invalidations)") \
    X(SC_WINDOW_HOLDS,     "sc: queues held until a writer's window ended (DSM_SC_WINDOW_US)") \
    X(SC_READS_TOGETHER,   "sc: reads started while others of the page were under way") \
    X(INTERVALS,           "intervals (releases that wrote something)")        \
    X(WRITE_NOTICES,       "write notices received")                           \
    X(INTERVALS_COLLECTED, "intervals dropped without a barrier (seen by every node)") \
    X(VT_EXCHANGES,        "timestamp exchanges asked for (collection without a barrier)") \
    X(DIFFS_COLLECTED,     "lrc: diffs dropped without a barrier (every node had asked)") \
    X(LRC_COVERS,          "lrc: faults that took the page whole from its latest writer, not diffs from each") \
    X(LRC_COVERS_REFUSED,  "lrc: of those asked, refused (its copy lacked writes wanted)") \
    X(LOCK_ACQUIRES,       "lock acquires")                                    \
    X(LOCK_REMOTE,         "of which needed another node")                     \
    X(LOCK_LOCAL_RELEASES, "releases of a lock this node took without a message") \
    X(LOCK_LOCAL_REL_MSGS, "messages this node sent in those releases")        \
    X(LOCK_KEPT_RELEASES,  "unlocks whose release stayed pending on the node") \
    X(LOCK_ASIDE_RELEASES, "pending releases run for another node's request")  \
    X(LOCK_HELPED_RELEASES, "pending releases the program ran itself (at a lock or unlock)") \
    X(LOCK_BUSY,           "tries (trylock) answered busy by another node")  \
    X(COND_SIGNALS_SKIPPED, "condition signals that sent nothing (no node had waited on it)") \
    X(BARRIERS,            "barriers")                                         \
    X(FLUSHES,             "flushes (OpenMP flush, dsm_flush)")                \
    X(QUIET_FLUSHES,       "flushes that asked nothing (nothing new here, nor heard of)") \
    X(FLUSH_NEWS,          "nodes told to ask again (a release after their flush's ask)") \
    X(ATOMICS,             "atomics on shared memory (each under its block's lock)") \
    X(ATOMICS_AT_HOME,     "of which performed at the page's home (page not written here)") \
    X(ATOMICS_WITH_GRANT,  "of which by the home as it granted the block's lock") \
    X(ATOMICS_RELAYED,     "of which by the home as it passed on a third node's grant") \
    X(ATOMICS_COPY_KEPT,   "of which replayed on this node's current copy, which stayed valid") \
    X(ATOMICS_SERVED,      "atomics performed here, as the page's home, for another node") \
    X(IMPLIED_FLUSHES,     "flushes a critical, lock or ordered entry pulled (another node flushed)") \
    X(CATCH_UPS,           "flushes a fault pulled (its copy was newer than the notices)") \
    X(PAGES_HIDDEN,        "home pages hidden until this node caught up (another node's diff)") \
    X(PAR_REGIONS,         "parallel regions run across nodes")                \
    X(PAR_LOOPS,           "worksharing loops")                                \
    X(PAR_CHUNKS,          "loop chunks taken from node 0 (dynamic, guided)")  \
    X(PAR_CHUNKS_STOLEN,   "of which from another node's pool (nonmonotonic)") \
    X(PAR_CRITICALS,       "critical sections entered")                        \
    X(PAR_REDUCTIONS,      "reductions combined")                              \
    X(PAR_TASKS_CREATED,   "OpenMP tasks created on this node (explicit and taskloop's)") \
    X(PAR_TASKS_DEFERRED,  "of which queued for the node's threads")          \
    X(PAR_TASKS_RUN,       "OpenMP tasks run on this node")                    \
    X(PAR_TASKS_OFFERED,   "OpenMP tasks put where other nodes can take them") \
    X(PAR_TASKS_STOLEN,    "OpenMP tasks taken from another node and run here") \
    X(PAR_TASKS_TAKEN_BACK, "of which descendants of this node's, taken while it waited") \
    X(PAR_TASK_KINDS_KEPT, "kinds of OpenMP task kept here: slower to move than to run elsewhere") \
    X(PAR_REPARTITIONS,    "profiled loops re-partitioned by measured speed")  \
    X(PAR_PROFILE_STOPS,   "profiled loops that stopped profiling (Fig. 4's stop rule)") \
    X(PAR_PROFILED_RUNS,   "executions of profiled loops timed")               \
    X(PAR_PROFILING,       "profiled loops still profiling (a level, not a count)") \
    X(MIGRATE_PAGES,       "pages given a new home for their remote faults")   \
    X(MIGRATE_HOMES,       "pages given a new home for their writes")          \
    X(MIGRATE_IN,          "pages received as their new home")                 \
    X(MIGRATE_FORWARDS,    "requests and diffs forwarded as a former home")    \
    X(MIGRATE_HELD,        "migration windows held while profiled loops settle") \
    X(MIGRATE_ROUNDS,      "barrier rounds run to move pages")                 \
    X(PTHREADS_RUN,        "program threads (pthread_create) run on this node") \
    X(SVC_POLLING,         "service thread polling on a CPU of its own (1; 0: it sleeps until a message comes)") \
    X(HOST_CPUS,           "CPUs this node's host gave the job (its affinity mask; a level)") \
    X(HOST_NODES,          "nodes of the job on this node's host (a level)") \
    X(T_READ_FAULT_NS,     "time in read faults (ns)")                         \
    X(T_WRITE_FAULT_NS,    "time in write faults (ns)")                        \
    X(T_BARRIER_NS,        "time in barriers (ns)")                            \
    X(T_LOCK_NS,           "time in lock, unlock, condition waits and flushes (ns)") \
    X(T_IDLE_NS,           "time idle: waiting for the master's work, or for its workers to end (ns)") \
    X(T_SERVICE_NS,        "time serving other nodes' requests (ns)")          \
    X(T_TWIN_NS,           "time making twins (ns)")                           \
    X(T_DIFF_NS,           "time creating diffs (ns)")                         \
    X(T_DIFF_SEND_NS,      "time sending diffs and waiting for their acks (ns)") \
    X(T_DIFF_APPLY_NS,     "time applying diffs (as home) (ns)")               \
    X(T_PAR_REGION_NS,     "time in parallel regions (ns)")                    \
    X(T_PAR_CHUNK_NS,      "time waiting for loop chunks (ns)")                \
    X(T_PAR_ORDERED_NS,    "time waiting for ordered turns (ns)")              \
    X(T_PAR_CRITICAL_NS,   "time entering critical sections (ns)")             \
    X(T_PAR_REDUCE_NS,     "time entering reductions (ns)")                    \
    X(T_MIGRATE_NS,        "time moving homes in migration rounds (ns)")       \
    X(T_TOTAL_NS,          "time from startup to finish (ns)")                 \
    X(T_STARTUP_NS,        "time from the job's launch to the end of dsm_startup (ns)")

enum stats_counter {
#define STATS_ENUM(name, desc) STAT_##name,
    STATS_COUNTERS(STATS_ENUM)
#undef STATS_ENUM
    STAT_COUNT
};

#define STATS_SHARDS 16
struct stats_shard {
    _Atomic uint64_t c[STAT_COUNT];
} __attribute__((aligned(64)));
extern struct stats_shard stats_shards[STATS_SHARDS];

/* The shard of the calling thread: its stack's megabyte, hashed (the frame's
 * address: a local's would take a slot, with AddressSanitizer's red zones,
 * in every frame that counts, and 10,000 nested tasks must fit). */
static inline unsigned stats_shard(void)
{
    uint64_t mb = (uint64_t)(uintptr_t)__builtin_frame_address(0) >> 20;
    return (unsigned)((mb * 0x9e3779b97f4a7c15ull) >> 32) % STATS_SHARDS;
}

/* Messages and bytes sent, by message type (enum ipc_type; names from
 * ipc_type_name). */
#define STATS_MSG_TYPES 96
extern _Atomic uint64_t stats_msgs_by_type[STATS_MSG_TYPES];
extern _Atomic uint64_t stats_bytes_by_type[STATS_MSG_TYPES];

static inline void stats_msg(unsigned type, uint64_t bytes)
{
    if (type < STATS_MSG_TYPES) {
        atomic_fetch_add_explicit(&stats_msgs_by_type[type], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&stats_bytes_by_type[type], bytes, memory_order_relaxed);
    }
}
extern const char *const stats_names[STAT_COUNT];
extern const char *const stats_descriptions[STAT_COUNT];

static inline void stats_add(enum stats_counter c, uint64_t n)
{
    atomic_fetch_add_explicit(&stats_shards[stats_shard()].c[c], n, memory_order_relaxed);
}

/* Raises a high-water mark (a counter that holds a maximum: kept in shard
 * 0 alone, so that the sum is it). */
static inline void stats_max(enum stats_counter c, uint64_t v)
{
    _Atomic uint64_t *w = &stats_shards[0].c[c];
    uint64_t old = atomic_load_explicit(w, memory_order_relaxed);
    while (v > old && !atomic_compare_exchange_weak_explicit(w, &old, v, memory_order_relaxed,
                                                             memory_order_relaxed)) {
    }
}

/* Sets a counter to v (a state, or a report's reset). */
static inline void stats_set(enum stats_counter c, uint64_t v)
{
    for (unsigned s = 1; s < STATS_SHARDS; s++)
        atomic_store_explicit(&stats_shards[s].c[c], 0, memory_order_relaxed);
    atomic_store_explicit(&stats_shards[0].c[c], v, memory_order_relaxed);
}

static inline uint64_t stats_get(enum stats_counter c)
{
    uint64_t sum = 0;
    for (unsigned s = 0; s < STATS_SHARDS; s++)
        sum += atomic_load_explicit(&stats_shards[s].c[c], memory_order_relaxed);
    return sum;
}
#endif
