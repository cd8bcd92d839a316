/*
 * stats_path.c — whether node 0 can write the statistics file that
 * --stats-json (DSM_STATS_JSON) names, checked before any node starts
 * (dsmrun.c check_settings; agent.c on node 0's host).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>

#include "launcher.h"
#include "runtime/settings.h"

/* Where the statistics will go (--stats-json or DSM_STATS_JSON): node 0
 * writes the file whole when the job ends (runtime/report.c), so a path
 * that cannot take it is said now, before any node starts, not after the
 * job has run and its statistics are lost. Nothing is created or changed
 * (runtime/settings.c). `what` names the setting ("--stats-json PATH"). */
int check_stats_json(const char *path, const char *what)
{
    char why[PATH_MAX + 128];
    if (settings_file_writable(path, why, sizeof why) == 0)
        return 0;
    fprintf(stderr, "dsmrun: %s: cannot write the statistics there: %s\n", what, why);
    return -EINVAL;
}
