/*
 * boot_pmix.c — joining a job that Slurm (srun) or Open MPI (mpirun)
 * started, through PMIx.
 *
 * The resource manager's PMIx server gives each process its rank and the
 * job's size. Each node binds its socket (boot_pick_addr), publishes
 * "ip:port" under its rank, and node 0 publishes the job key and id too;
 * a fence with data collection makes all of it readable everywhere, and
 * each node reads every peer's address and node 0's key. PMIx is then
 * finalized: from there on the job is the DSM's own, as under dsmrun.
 *
 * Trust: the key travels through the PMIx server, so whoever the resource
 * manager lets read the job's PMIx data (the user's own processes, the
 * resource manager itself, root) can learn it. That is the trust MPI jobs
 * already place in the same channel; dsmrun's pipes and ssh stdin expose it
 * to no one.
 *
 * libpmix is loaded at run time (dlopen), only when PMIX_RANK and
 * PMIX_NAMESPACE say a PMIx server started us: a program linked with dsm
 * runs under dsmrun on machines without libpmix. The header is needed at
 * build time only, for the types; without it (no libpmix-dev) the build
 * leaves PMIx out and says so at startup under PMIx.
 *
 * Every node must map the executable at the same addresses, which dsmrun
 * arranges for its children; here the process re-executes itself once with
 * address-space randomisation turned off, before PMIx is touched.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/job.h"
#include "base/linkage.h"
#include "base/log.h"
#include "base/state.h"
#include "base/launch.h"
#include "runtime/bootstrap.h"

#define REEXEC_ENV "DSM_PMIX_REEXEC"   /* set across the one re-execution */

int boot_pmix_present(void)
{
    return getenv("PMIX_RANK") && getenv("PMIX_NAMESPACE");
}

#ifndef DSM_HAVE_PMIX

void boot_pmix(struct net_params *np, const struct dsm_config *cfg, int *argc, char ***argv)
{
    (void)np;
    (void)cfg;
    (void)argc;
    (void)argv;
    log_fatal("started by PMIx (srun or mpirun), but this dsm was built without PMIx "
              "(install libpmix-dev and rebuild), or start the program with dsmrun");
}

#else

/* argv as the kernel has it, for a program that passed none to
 * dsm_startup. Leaked: exec follows. */
static char **cmdline_argv(void)
{
    static DSM_STATE char buf[1 << 16];
    FILE *f = fopen("/proc/self/cmdline", "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    if (n == 0 || n == sizeof buf - 1)
        return NULL;
    buf[n] = 0;
    int count = 0;
    for (size_t i = 0; i < n; i++)
        count += buf[i] == 0;
    char **argv = calloc((size_t)count + 1, sizeof *argv);
    if (!argv)
        return NULL;
    char *p = buf;
    for (int i = 0; i < count; i++, p += strlen(p) + 1)
        argv[i] = p;
    return argv;
}

static void no_aslr(int *argc, char ***argv)
{
    int persona = personality(0xffffffff);
    if (persona < 0)
        log_fatal("cannot read the process personality: %s", strerror(errno));
    if (persona & ADDR_NO_RANDOMIZE)
        return;
    if (getenv(REEXEC_ENV))
        log_fatal("address-space randomisation is still on after re-executing; "
                  "start the program with setarch -R");
    if (personality((unsigned long)persona | ADDR_NO_RANDOMIZE) < 0)
        log_fatal("cannot turn off address-space randomisation: %s", strerror(errno));
    char **args = argv && *argv && argc && *argc > 0 ? *argv : cmdline_argv();
    if (!args)
        log_fatal("cannot find the program's arguments to re-execute it without "
                  "address-space randomisation");
    setenv(REEXEC_ENV, "1", 1);
    fflush(NULL);
    execv("/proc/self/exe", args);
    log_fatal("cannot re-execute the program without address-space randomisation: %s",
              strerror(errno));
}

#include <pmix.h>

/* The few PMIx functions used, found in libpmix at run time. */
static DSM_STATE struct {
    pmix_status_t (*init)(pmix_proc_t *, pmix_info_t *, size_t);
    pmix_status_t (*finalize)(const pmix_info_t *, size_t);
    pmix_status_t (*put)(pmix_scope_t, const char *, pmix_value_t *);
    pmix_status_t (*commit)(void);
    pmix_status_t (*fence)(const pmix_proc_t *, size_t, const pmix_info_t *, size_t);
    pmix_status_t (*get)(const pmix_proc_t *, const char *, const pmix_info_t *, size_t,
                         pmix_value_t **);
    const char *(*error_string)(pmix_status_t);
    void (*value_destruct)(pmix_value_t *);
} px;

/* A value PMIx_Get returned: its data freed by the library, the struct
 * itself as PMIX_VALUE_RELEASE does (libpmix allocates with malloc). */
static void value_free(pmix_value_t *v)
{
    if (!v)
        return;
    if (px.value_destruct)
        px.value_destruct(v);
    free(v);
}

static const char *pmix_err(pmix_status_t rc)
{
    return px.error_string ? px.error_string(rc) : "PMIx error";
}

static void load_pmix(void)
{
    static const char *const names[] = {"libpmix.so.2", "libpmix.so"};
    void *lib = NULL;
    if (linkage_program_is_static())
        log_fatal("started by PMIx (PMIX_RANK is set), and libpmix is loaded at run time, which needs "
                  "a dynamically linked program: this one is static; link it without -static, "
                  "or start it with dsmrun");
    /* RTLD_GLOBAL: libpmix's own plugins resolve its symbols. */
    for (size_t i = 0; !lib && i < sizeof names / sizeof names[0]; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
    if (!lib)
        log_fatal("started by PMIx (PMIX_RANK is set) but libpmix cannot be loaded: %s; "
                  "install libpmix2, or start the program with dsmrun", dlerror());
#define LOAD(field, sym)                                                            \
    do {                                                                            \
        *(void **)&px.field = dlsym(lib, sym);                                      \
        if (!px.field)                                                              \
            log_fatal("libpmix lacks %s; a PMIx of version 2 or later is needed", sym); \
    } while (0)
    LOAD(init, "PMIx_Init");
    LOAD(finalize, "PMIx_Finalize");
    LOAD(put, "PMIx_Put");
    LOAD(commit, "PMIx_Commit");
    LOAD(fence, "PMIx_Fence");
    LOAD(get, "PMIx_Get");
#undef LOAD
    *(void **)&px.error_string = dlsym(lib, "PMIx_Error_string");
    *(void **)&px.value_destruct = dlsym(lib, "PMIx_Value_destruct");
}

static void put_string(const char *key, const char *value)
{
    pmix_value_t v;
    memset(&v, 0, sizeof v);
    v.type = PMIX_STRING;
    v.data.string = (char *)value;
    pmix_status_t rc = px.put(PMIX_GLOBAL, key, &v);
    if (rc != PMIX_SUCCESS)
        log_fatal("PMIx_Put of %s failed: %s", key, pmix_err(rc));
}

/* A string value of rank's, copied into out. */
static void get_string(const pmix_proc_t *me, uint32_t rank, const char *key, char *out,
                       size_t len)
{
    pmix_proc_t who;
    memset(&who, 0, sizeof who);
    memcpy(who.nspace, me->nspace, sizeof who.nspace);
    who.rank = rank;
    pmix_value_t *v = NULL;
    pmix_status_t rc = px.get(&who, key, NULL, 0, &v);
    if (rc != PMIX_SUCCESS || !v)
        log_fatal("PMIx_Get of %s from node %u failed: %s", key, rank, pmix_err(rc));
    if (v->type != PMIX_STRING || !v->data.string || strlen(v->data.string) >= len)
        log_fatal("node %u published a bad %s through PMIx", rank, key);
    strcpy(out, v->data.string);
    value_free(v);
}

static uint32_t get_job_u32(const pmix_proc_t *me, const char *key, uint32_t fallback)
{
    pmix_proc_t job;
    memset(&job, 0, sizeof job);
    memcpy(job.nspace, me->nspace, sizeof job.nspace);
    job.rank = PMIX_RANK_WILDCARD;
    pmix_value_t *v = NULL;
    if (px.get(&job, key, NULL, 0, &v) != PMIX_SUCCESS || !v)
        return fallback;
    uint32_t x = v->type == PMIX_UINT32 ? v->data.uint32 : fallback;
    value_free(v);
    return x;
}

static void hex(char *out, const uint8_t *in, size_t len)
{
    for (size_t i = 0; i < len; i++)
        sprintf(out + 2 * i, "%02x", in[i]);
}

static void unhex(const char *in, uint8_t *out, size_t len, const char *what)
{
    for (size_t i = 0; i < len; i++) {
        unsigned b;
        if (sscanf(in + 2 * i, "%2x", &b) != 1)
            log_fatal("node 0 published a bad %s through PMIx", what);
        out[i] = (uint8_t)b;
    }
    if (strlen(in) != 2 * len)
        log_fatal("node 0 published a bad %s through PMIx", what);
}

/* Nodes started with different settings would misread each other's
 * messages (a UCX node's start message taken for a UDP node's, a page of
 * another size): under mpirun, which passes the environment to other hosts
 * only with -x, a setting given on the command line's host alone does
 * that. Checked against node 0's, named in one line. */
static void same_settings_as_node0(const pmix_proc_t *me, const char *mine)
{
    char theirs[2048], name[64], my_value[256], their_value[256];
    get_string(me, 0, "dsm.settings", theirs, sizeof theirs);
    if (config_job_wide_differ(mine, theirs, name, sizeof name, my_value, their_value,
                               sizeof my_value))
        log_fatal("this node runs with %s=%s where node 0 runs with %s=%s: every node of a job needs "
                  "the same dsm settings (mpirun passes the environment to other hosts only with -x: "
                  "mpirun -x %s ...; docs/hosts.md)", name, my_value, name, their_value, name);
}

void boot_pmix(struct net_params *np, const struct dsm_config *cfg, int *argc, char ***argv)
{
    no_aslr(argc, argv);
    unsetenv(REEXEC_ENV);
    load_pmix();

    pmix_proc_t me;
    memset(&me, 0, sizeof me);
    pmix_status_t rc = px.init(&me, NULL, 0);
    if (rc != PMIX_SUCCESS)
        log_fatal("PMIx_Init failed: %s; is the program started by srun or mpirun?",
                  pmix_err(rc));
    uint32_t nodes = get_job_u32(&me, PMIX_JOB_SIZE, 0);
    if (nodes < 1 || nodes > BOOT_MAX_NODES || me.rank >= nodes)
        log_fatal("PMIx gives rank %u of %u nodes; dsm runs 1 to %d", me.rank, nodes,
                  BOOT_MAX_NODES);
    job_init()->rank = (int)me.rank;
    job_init()->nodes = (int)nodes;
    log_set_rank(job_init()->rank);
    int all_local = get_job_u32(&me, PMIX_LOCAL_SIZE, 0) == nodes;

    char err[160];
    struct in_addr addr;
    if (boot_pick_addr(cfg->net_bind, all_local, &addr, err, sizeof err) < 0)
        log_fatal("%s", err);
    struct sockaddr_in self;
    np->fd = boot_bind(addr, &self);
    if (np->fd < 0) {
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &addr, ip, sizeof ip);
        log_fatal("cannot bind a UDP socket to %s: %s", ip, strerror(-np->fd));
    }
    /* Bound to the wildcard (DSM_NET_BIND=any or 0.0.0.0): it receives on
     * every interface, and the peers are told the address this node would
     * have bound by default, the one toward them. */
    struct in_addr published = self.sin_addr;
    if (addr.s_addr == htonl(INADDR_ANY) &&
        boot_pick_addr(NULL, all_local, &published, err, sizeof err) < 0)
        log_fatal("DSM_NET_BIND=%s: %s", cfg->net_bind, err);

    char line[64];
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &published, ip, sizeof ip);
    snprintf(line, sizeof line, "%s:%u", ip, ntohs(self.sin_port));
    put_string("dsm.addr", line);
    char settings[2048];
    if (config_job_wide(cfg, settings, sizeof settings) >= sizeof settings)
        log_fatal("the job-wide settings take more than %zu bytes", sizeof settings);
    put_string("dsm.settings", settings);
    if (job_init()->rank == 0) {
        char key_hex[2 * BOOT_KEY_BYTES + 1], job_hex[17];
        if (getrandom(np->key, sizeof np->key, 0) != sizeof np->key ||
            getrandom(&np->job_id, sizeof np->job_id, 0) != sizeof np->job_id)
            log_fatal("cannot get random bytes for the job key");
        hex(key_hex, np->key, sizeof np->key);
        snprintf(job_hex, sizeof job_hex, "%016llx", (unsigned long long)np->job_id);
        put_string("dsm.key", key_hex);
        put_string("dsm.job", job_hex);
    }
    if ((rc = px.commit()) != PMIX_SUCCESS)
        log_fatal("PMIx_Commit failed: %s", pmix_err(rc));
    pmix_info_t collect;
    memset(&collect, 0, sizeof collect);
    snprintf(collect.key, sizeof collect.key, "%s", PMIX_COLLECT_DATA);
    collect.value.type = PMIX_BOOL;
    collect.value.data.flag = true;
    if ((rc = px.fence(NULL, 0, &collect, 1)) != PMIX_SUCCESS)
        log_fatal("PMIx_Fence failed: %s", pmix_err(rc));

    struct sockaddr_in *peers = calloc(nodes, sizeof *peers);
    if (!peers)
        log_fatal("out of memory at startup");
    for (uint32_t r = 0; r < nodes; r++) {
        char a[64], host[INET_ADDRSTRLEN];
        unsigned port;
        int used = 0;
        get_string(&me, r, "dsm.addr", a, sizeof a);
        if (sscanf(a, "%15[0-9.]:%u%n", host, &port, &used) != 2 || a[used] || port < 1 ||
            port > 65535 || inet_pton(AF_INET, host, &peers[r].sin_addr) != 1)
            log_fatal("node %u published a bad address '%s' through PMIx", r, a);
        peers[r].sin_family = AF_INET;
        peers[r].sin_port = htons((uint16_t)port);
    }
    if (job_init()->rank != 0) {
        same_settings_as_node0(&me, settings);
        char key_hex[2 * BOOT_KEY_BYTES + 1], job_hex[17];
        uint8_t job[8];
        get_string(&me, 0, "dsm.key", key_hex, sizeof key_hex);
        get_string(&me, 0, "dsm.job", job_hex, sizeof job_hex);
        unhex(key_hex, np->key, sizeof np->key, "job key");
        unhex(job_hex, job, sizeof job, "job id");
        np->job_id = 0;
        for (int i = 0; i < 8; i++)
            np->job_id = np->job_id << 8 | job[i];
        explicit_bzero(key_hex, sizeof key_hex);
    }
    np->peers = peers;
    /* Everything PMIx had to give is read: the job goes on without it. */
    if ((rc = px.finalize(NULL, 0)) != PMIX_SUCCESS)
        log_fatal("PMIx_Finalize failed: %s", pmix_err(rc));
}
#endif
