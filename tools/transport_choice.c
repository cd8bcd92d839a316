/*
 * transport_choice.c — DSM_NET=auto, the default: the transport chosen once
 * for the whole job, by dsmrun, before any node starts.
 *
 * As Open MPI chooses: shared memory between the processes of one host.
 * Over UCX's shared memory a barrier, a lock and a page fetch between
 * nodes of one host cost a fifth to a half of UDP's over loopback
 * (docs/performance.md); UDP runs everywhere. So a job whose nodes all
 * run on this host runs over UCX, told to use its shared-memory
 * transports only (UCX_TLS=self,sm, unless the user set UCX_TLS: then
 * nothing listens on the network for a job that needs no network), when
 * UCX starts here — asked as for DSM_NET=ucx, in a child (ucx_check.c).
 * It runs over UDP when UCX does not load or cannot start (silently, as
 * the user asked for nothing: with a warning naming the cause when one
 * of the user's UCX_* settings is why), for one node (nothing to send), when faults are
 * injected (UDP's), and for a program that cannot load UCX (a fully
 * static one, or anything that is not a dynamically linked ELF program:
 * dsmrun cannot tell what a script will run).
 *
 * Across hosts every node would have to find the same UCX and the same
 * device, and nothing asks them before they start: such a job, and one a
 * launcher other than dsmrun starts (srun, mpirun), runs over UDP under
 * auto (net.h: a node given auto runs UDP). DSM_NET=ucx chooses UCX there.
 */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launcher.h"
#include "base/config.h"
#include "net/net.h"

#define AUTO_TLS     "self,sm"
#define AUTO_UCX_TLS "UCX_TLS=" AUTO_TLS

/* Whether PATH is an ELF program with a program interpreter: one that the
 * dynamic linker loads, and that can therefore load libucp. */
static bool loads_libraries(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    Elf64_Ehdr eh;
    bool dynamic = false;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
        eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr)) {
        for (unsigned i = 0; i < eh.e_phnum && !dynamic; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) !=
                (ssize_t)sizeof ph)
                break;
            dynamic = ph.p_type == PT_INTERP;
        }
    }
    close(fd);
    return dynamic;
}

/* Whether the nodes will see UCX_TLS: the environment, or --env. */
static bool tls_given(const char *const *over, int n)
{
    for (int i = 0; i < n; i++)
        if (!strncmp(over[i], "UCX_TLS=", 8))
            return true;
    return getenv("UCX_TLS") != NULL;
}

bool choose_ucx(const struct options *o, const struct dsm_config *cfg, const char *const *over,
                int n, bool *set_tls)
{
    *set_tls = false;
    if (cfg->net_transport != NET_TRANSPORT_AUTO || !net_ucx_built() || o->hosts || o->hostfile ||
        o->nodes < 2 || cfg->net_loss || cfg->net_dup || cfg->net_reorder || cfg->net_delay_us)
        return false;
    char path[PATH_MAX];
    if (find_program(o->prog_argv[0], path, sizeof path) != 0 || !loads_libraries(path))
        return false;
    bool given = tls_given(over, n);
    const char **with = calloc((size_t)n + 2, sizeof *with);
    if (!with)
        return false;
    memcpy(with, over, (size_t)n * sizeof *with);
    int k = n;
    with[k++] = "DSM_NET=ucx";
    if (!given)
        with[k++] = AUTO_UCX_TLS;
    char err[1024], warn[1024];
    int r = net_check_ucx_settings(with, k, err, sizeof err, warn, sizeof warn);
    free(with);
    if (r < 0) {
        /* A UCX_* setting of the user's is why (not UCX absent): said, and
         * the job runs. */
        if (strncmp(err, "DSM_NET=", 8))
            fprintf(stderr, "dsmrun: warning: DSM_NET=auto: %s; the job runs over UDP\n", err);
        return false;
    }
    if (given) /* UCX's own warnings about the user's UCX_TLS */
        say_warnings(warn);
    *set_tls = !given;
    return true;
}

int export_transport(const struct launcher *l)
{
    if (!l->auto_ucx)
        return 0;
    if (setenv("DSM_NET", "ucx", 1) < 0)
        return -1;
    return l->auto_ucx_tls && setenv("UCX_TLS", AUTO_TLS, 1) < 0 ? -1 : 0;
}
