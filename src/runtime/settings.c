/*
 * settings.c — the settings' meaning, checked before anything uses them
 * (settings.h). Each check calls the code that will use the value, or asks
 * the kernel the question that code will ask, so that the rules are
 * written once: the home file's O_TMPFILE (mem/region.c), the schedule's
 * parser (parallel/schedule.c), the address picker (boot_net.c).
 */
#include "runtime/settings.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "coherence/coherence.h"
#include "parallel/schedule.h"
#include "runtime/bootstrap.h"

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

int settings_file_writable(const char *path, char *why, size_t whylen)
{
    struct stat st;
    char dir[PATH_MAX];
    why[0] = 0;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            snprintf(why, whylen, "it is a directory");
        else if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
            snprintf(why, whylen, "it is not a file");
        else if (S_ISREG(st.st_mode) && kernel_interface_fs(path))
            snprintf(why, whylen, "it is a kernel interface (/proc, /sys), not a file that keeps "
                     "what is written");
        else {
            /* O_NONBLOCK: a FIFO without a reader yet (ENXIO) is no error. */
            int fd = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
            if (fd >= 0)
                close(fd);
            else if (errno != ENXIO)
                snprintf(why, whylen, "%s", strerror(errno));
        }
    } else if (errno != ENOENT) {
        snprintf(why, whylen, "%s", strerror(errno));
    } else {
        /* A new file: its directory must exist and take new files. */
        const char *slash = strrchr(path, '/');
        if (!slash)
            snprintf(dir, sizeof dir, ".");
        else if (slash == path)
            snprintf(dir, sizeof dir, "/");
        else
            snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
        if (stat(dir, &st) < 0)
            snprintf(why, whylen, "its directory %s does not exist", dir);
        else if (!S_ISDIR(st.st_mode))
            snprintf(why, whylen, "%s is not a directory", dir);
        else if (kernel_interface_fs(dir))
            snprintf(why, whylen, "%s is a kernel interface (/proc, /sys), where no file can be "
                     "created", dir);
        else if (access(dir, W_OK | X_OK) < 0)
            snprintf(why, whylen, "cannot create a file in %s: %s", dir, strerror(errno));
    }
    return why[0] ? -EINVAL : 0;
}

/* DSM_HOME_DIR: the home file is an unlinked O_TMPFILE there (mem/region.c);
 * making one and closing it leaves nothing behind. */
static int check_home_dir(const char *dir, char *err, size_t errlen)
{
    struct stat st;
    if (stat(dir, &st) < 0) {
        snprintf(err, errlen, "DSM_HOME_DIR=%s: cannot create the home file there: %s", dir,
                 strerror(errno));
        return -EINVAL;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "DSM_HOME_DIR=%s: not a directory", dir);
        return -EINVAL;
    }
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "DSM_HOME_DIR=%s: cannot create the home file there: %s", dir,
                 strerror(errno));
        return -EINVAL;
    }
    close(fd);
    return 0;
}

/* DSM_TRACE and DSM_PROFILE: each node writes FILE.<rank>; node 0's says
 * for all (a job's nodes on this host share its directory). */
static int check_rank_file(const char *name, const char *what, const char *path, char *err,
                           size_t errlen)
{
    char file[PATH_MAX], why[PATH_MAX + 128];
    if (snprintf(file, sizeof file, "%s.0", path) >= (int)sizeof file) {
        snprintf(err, errlen, "%s=%.64s...: longer than a path may be", name, path);
        return -EINVAL;
    }
    if (settings_file_writable(file, why, sizeof why) == 0)
        return 0;
    snprintf(err, errlen, "%s=%s: cannot write the %s %s: %s", name, path, what, file, why);
    return -EINVAL;
}

int settings_check(const struct dsm_config *cfg, bool here, char *err, size_t errlen)
{
    if (cfg->omp_static) {
        struct sched_spec spec;
        char why[256];
        if (sched_parse_static(cfg->omp_static, &spec, why, sizeof why)) {
            snprintf(err, errlen, "DSM_OMP_STATIC=%s", why);
            return -EINVAL;
        }
    }
    /* SMP nodes (docs/design.md): the protocol says whether it acts per
     * node under concurrent threads. */
    char name[32];
    config_protocol_name(cfg, name, sizeof name);
    if (cfg->threads > 1 && !coherence_can(name, COHERENCE_NODE_THREADS)) {
        snprintf(err, errlen, "DSM_THREADS=%lld (dsmrun --threads) needs the hlrc protocol; "
                 "%s runs one thread per node", (long long)cfg->threads, name);
        return -EINVAL;
    }
    if (!here)
        return 0;
    if (cfg->home_dir && check_home_dir(cfg->home_dir, err, errlen))
        return -EINVAL;
    if (cfg->trace && check_rank_file("DSM_TRACE", "trace", cfg->trace, err, errlen))
        return -EINVAL;
    if (cfg->profile && check_rank_file("DSM_PROFILE", "profile", cfg->profile, err, errlen))
        return -EINVAL;
    if (cfg->net_bind) {
        struct in_addr addr;
        if (boot_pick_addr(cfg->net_bind, 0, &addr, err, errlen) < 0)
            return -EINVAL;
    }
    return 0;
}
