#include "base/stats.h"
#include "base/state.h"

DSM_STATE struct stats_shard stats_shards[STATS_SHARDS];
DSM_STATE _Atomic uint64_t stats_msgs_by_type[STATS_MSG_TYPES];
DSM_STATE _Atomic uint64_t stats_bytes_by_type[STATS_MSG_TYPES];

const char *const stats_names[STAT_COUNT] = {
#define STATS_NAME(name, desc) #name,
    STATS_COUNTERS(STATS_NAME)
#undef STATS_NAME
};

const char *const stats_descriptions[STAT_COUNT] = {
#define STATS_DESC(name, desc) desc,
    STATS_COUNTERS(STATS_DESC)
#undef STATS_DESC
};
