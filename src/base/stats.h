/*
 * stats.h — every statistics counter of a node, defined once.
 *
 * The X-macro list below feeds the counter enum, the names printed by
 * `dsmrun --stats`, the JSON and the traces alike. Counters are process-wide
 * and updated with relaxed atomics: they are read only for reports.
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
    X(NET_DUPS_DROPPED,    "duplicate datagrams dropped")                      \
    X(NET_OOO_BUFFERED,    "datagrams buffered out of order")                  \
    X(NET_FOREIGN_DROPPED, "foreign or malformed datagrams dropped")           \
    X(NET_AUTH_DROPPED,    "datagrams failing authentication dropped")         \
    X(NET_INJECT_LOST,     "datagrams dropped by loss injection")              \
    X(NET_INJECT_DUPED,    "datagrams duplicated by injection")                \
    X(NET_INJECT_REORDERED,"datagrams reordered by injection")                 \
    X(NET_MSGS_SENT,       "transport messages sent")                          \
    X(NET_MSGS_RECV,       "transport messages delivered")                     \
    X(IPC_SMALL_SENT,      "ipc messages sent on the one-message path")        \
    X(IPC_LARGE_SENT,      "ipc messages sent by request/grant")               \
    X(IPC_PAGES_SENT,      "ipc out-of-line pages sent")                       \
    X(IPC_GRANTS_SENT,     "ipc grants sent")                                  \
    X(IPC_ACCEPTS_SENT,    "ipc message-accept notifications sent")            \
    X(IPC_FLOW_BLOCKS,     "ipc sends that waited for queue space")            \
    X(IPC_RPCS,            "ipc calls made")

enum stats_counter {
#define STATS_ENUM(name, desc) STAT_##name,
    STATS_COUNTERS(STATS_ENUM)
#undef STATS_ENUM
    STAT_COUNT
};

extern _Atomic uint64_t stats_counters[STAT_COUNT];
extern const char *const stats_names[STAT_COUNT];
extern const char *const stats_descriptions[STAT_COUNT];

static inline void stats_add(enum stats_counter c, uint64_t n)
{
    atomic_fetch_add_explicit(&stats_counters[c], n, memory_order_relaxed);
}

static inline uint64_t stats_get(enum stats_counter c)
{
    return atomic_load_explicit(&stats_counters[c], memory_order_relaxed);
}
#endif
