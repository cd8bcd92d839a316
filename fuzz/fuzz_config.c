/*
 * fuzz_config.c — the configuration parser (src/base/config.c) on any
 * value of any setting: the input's first byte picks the setting, the rest
 * is its value. A value is taken or refused with a message naming the
 * setting; never anything else, and a taken one lies within the setting's
 * range (checked here for the ones the transport relies on; a datagram of
 * 0 is "auto": the interface's MTU).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"

static const char *const names[] = {
    "DSM_PEER_TIMEOUT", "DSM_NET_LOSS", "DSM_NET_DUP", "DSM_NET_REORDER", "DSM_NET_DELAY_US",
    "DSM_NET_SEED", "DSM_NET_DATAGRAM", "DSM_NET_WINDOW", "DSM_NET_AUTH", "DSM_NET_SPIN_US",
    "DSM_IPC_WINDOW", "DSM_IPC_INLINE_MAX", "DSM_REGION_SIZE", "DSM_REGION_BASE",
    "DSM_PAGE_SIZE", "DSM_HOME", "DSM_PROTOCOL", "DSM_LRC_GC_NOTICES", "DSM_STATS",
    "DSM_STATS_JSON", "DSM_NET_BIND", "DSM_SHARED_GLOBALS", "DSM_TRACE", "DSM_OMP_STATIC",
    "DSM_PROFILED_GAIN", "DSM_BARRIER_FANOUT", "DSM_MIGRATE_PAGES", "DSM_MIGRATE_HOMES",
    "DSM_MIGRATE_PERIOD", "DSM_MIGRATE_MAX", "DSM_LOCAL_MEM", "DSM_REPLACEMENT", "DSM_HOME_DIR",
    "DSM_NO_SUCH_SETTING",
};
#define NNAMES (sizeof names / sizeof names[0])

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *name = names[data[0] % NNAMES];
    char *v = malloc(size); /* the value, terminated: as getenv gives it */
    memcpy(v, data + 1, size - 1);
    v[size - 1] = 0;
    struct dsm_config cfg;
    config_defaults(&cfg);
    char err[256] = "";
    int rc = config_set(&cfg, name, v, err, sizeof err);
    if (rc != 0 && (!err[0] || !strstr(err, name)))
        abort(); /* refused without saying which setting */
    if (rc == 0 && err[0])
        abort();
    if (!(cfg.net_loss >= 0 && cfg.net_loss <= 0.9) || cfg.net_window < 4 || cfg.net_window > 64 ||
        (cfg.net_datagram != 0 && (cfg.net_datagram < 1024 || cfg.net_datagram > 65000)) ||
        !(cfg.peer_timeout_s >= 0.2 && cfg.peer_timeout_s <= 3600))
        abort();
    free(v);
    return 0;
}
