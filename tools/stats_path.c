/*
 * stats_path.c — whether node 0 can write the statistics file that
 * --stats-json (DSM_STATS_JSON) names, checked before any node starts
 * (dsmrun.c check_settings; agent.c on node 0's host).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "launcher.h"

/* File systems whose files are the kernel's interfaces (/proc/version),
 * not files that keep what is written to them. */
static bool kernel_interface_fs(const char *path)
{
    static const unsigned long magic[] = {PROC_SUPER_MAGIC, SYSFS_MAGIC, CGROUP_SUPER_MAGIC,
                                          CGROUP2_SUPER_MAGIC, DEBUGFS_MAGIC, TRACEFS_MAGIC,
                                          SECURITYFS_MAGIC, BPF_FS_MAGIC};
    struct statfs fs;
    if (statfs(path, &fs) < 0)
        return false;
    for (size_t i = 0; i < sizeof magic / sizeof magic[0]; i++)
        if ((unsigned long)fs.f_type == magic[i])
            return true;
    return false;
}

/* Where the statistics will go (--stats-json or DSM_STATS_JSON): node 0
 * writes the file whole when the job ends (runtime/report.c), so a path
 * that cannot take it is said now, before any node starts, not after the
 * job has run and its statistics are lost. Nothing is created or changed:
 * an existing file is opened without truncation, a new one's directory is
 * checked. `what` names the setting ("--stats-json PATH"). */
int check_stats_json(const char *path, const char *what)
{
    struct stat st;
    const char *why = NULL;
    char dir[PATH_MAX];
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            why = "it is a directory";
        else if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
            why = "it is not a file";
        else if (S_ISREG(st.st_mode) && kernel_interface_fs(path))
            why = "it is a kernel interface (/proc, /sys), not a file that keeps what is written";
        else {
            /* O_NONBLOCK: a FIFO without a reader yet (ENXIO) is no error. */
            int fd = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
            if (fd >= 0)
                close(fd);
            else if (errno != ENXIO)
                why = strerror(errno);
        }
    } else if (errno != ENOENT) {
        why = strerror(errno);
    } else {
        /* A new file: its directory must exist and take new files. */
        const char *slash = strrchr(path, '/');
        if (!slash)
            snprintf(dir, sizeof dir, ".");
        else if (slash == path)
            snprintf(dir, sizeof dir, "/");
        else
            snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
        static char line[PATH_MAX + 128];
        if (stat(dir, &st) < 0) {
            snprintf(line, sizeof line, "its directory %s does not exist", dir);
            why = line;
        } else if (!S_ISDIR(st.st_mode)) {
            snprintf(line, sizeof line, "%s is not a directory", dir);
            why = line;
        } else if (kernel_interface_fs(dir)) {
            snprintf(line, sizeof line, "%s is a kernel interface (/proc, /sys), where no file "
                     "can be created", dir);
            why = line;
        } else if (access(dir, W_OK | X_OK) < 0) {
            snprintf(line, sizeof line, "cannot create a file in %s: %s", dir, strerror(errno));
            why = line;
        }
    }
    if (!why)
        return 0;
    fprintf(stderr, "dsmrun: %s: cannot write the statistics there: %s\n", what, why);
    return -EINVAL;
}
