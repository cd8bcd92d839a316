/*
 * par.c — the three builds behind par.h: PAR_DSM, PAR_THREADS or PAR_SEQ,
 * chosen by the compile definition (CMake's dsm_app() sets it).
 */
#include "par.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(PAR_DSM)
#include "dsm.h"
#elif !defined(PAR_THREADS) && !defined(PAR_SEQ)
#error "build par.c with one of PAR_DSM, PAR_THREADS, PAR_SEQ"
#endif

double par_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void par_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s[%d]: ", par_mode(), par_id());
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stdout);
    exit(1);
}

static __attribute__((unused)) void *zeroed_pages(size_t size)
{
    void *p = NULL;
    size_t rounded = (size + 4095) & ~(size_t)4095;
    if (posix_memalign(&p, 4096, rounded ? rounded : 4096))
        par_die("out of memory allocating %zu bytes", size);
    memset(p, 0, rounded);
    return p;
}

#if defined(PAR_DSM)
/* ---- one process per DSM node ----------------------------------------- */

/* With dsmrun --threads T (SMP nodes) every node runs par_main on T
 * threads: ids are the job's thread ids, node-major. */
const char *par_mode(void) { return "dsm"; }
int par_id(void) { return dsm_thread_id(); }
int par_n(void) { return dsm_thread_count(); }

void *par_alloc_home(size_t size, enum par_home home)
{
    static const enum dsm_home map[] = {
        [PAR_HOME_DEFAULT] = DSM_HOME_DEFAULT, [PAR_HOME_BLOCK] = DSM_HOME_BLOCK,
        [PAR_HOME_CYCLIC] = DSM_HOME_CYCLIC, [PAR_HOME_FIRST_TOUCH] = DSM_HOME_FIRST_TOUCH};
    void *p = NULL;
    if (dsm_rank() == 0)
        p = dsm_malloc_home(size, map[home]);
    dsm_bcast(&p, sizeof p, 0);
    return p;
}
void par_bcast(void *buf, size_t len, int root) { dsm_bcast(buf, len, root); }
void par_barrier(void) { dsm_barrier(); }
void par_lock(int id) { dsm_lock(id); }
void par_unlock(int id) { dsm_unlock(id); }
/* The statistics are the node's: its first thread resets and freezes them
 * (between the barriers around the timed section). */
static void stats_reset(void)
{
    if (dsm_thread_id() % dsm_node_threads() == 0)
        dsm_stats_reset();
}
static void stats_freeze(void)
{
    if (dsm_thread_id() % dsm_node_threads() == 0)
        dsm_stats_freeze();
}

/* The master's arguments, in shared memory for the other threads: argv
 * itself lives in each process's own stack. */
struct shared_args {
    int argc;
    char text[]; /* argc strings, each ended by its NUL */
};

static void run_threads(void *arg)
{
    const struct shared_args *a = arg;
    char **argv = calloc((size_t)a->argc + 1, sizeof *argv);
    const char *s = a->text;
    if (!argv)
        par_die("out of memory");
    for (int i = 0; i < a->argc; i++, s += strlen(s) + 1)
        if (!(argv[i] = strdup(s)))
            par_die("out of memory");
    int rc = par_main(a->argc, argv);
    if (rc != 0) { /* as a process of its own would: the node ends with rc */
        fflush(stdout);
        exit(rc);
    }
}

int main(int argc, char **argv)
{
    const char *threads = getenv("DSM_THREADS");
    if (!threads || atoi(threads) <= 1) { /* one process per node: SPMD */
        dsm_startup(&argc, &argv);
        int rc = par_main(argc, argv);
        fflush(stdout);
        dsm_finish();
        return rc;
    }
    /* T threads per node: fork style (dsm.h), the master's caller one of them. */
    if (dsm_startup_fork(&argc, &argv) != 0)
        return 1;
    size_t len = 0;
    for (int i = 0; i < argc; i++)
        len += strlen(argv[i]) + 1;
    struct shared_args *a = dsm_malloc(sizeof *a + len);
    a->argc = argc;
    char *t = a->text;
    for (int i = 0; i < argc; i++)
        t = stpcpy(t, argv[i]) + 1;
    dsm_create(run_threads, a);
    int rc = par_main(argc, argv);
    dsm_wait_for_end();
    fflush(stdout);
    dsm_finish();
    return rc;
}

#elif defined(PAR_THREADS)
/* ---- P threads in one process ----------------------------------------- */

#define PAR_MAX_LOCKS 4096

static __thread int my_id;
static int nthreads = 1;
static pthread_barrier_t bar;
static pthread_mutex_t locks[PAR_MAX_LOCKS];
static void *slot; /* a pointer handed from one thread to the others */

const char *par_mode(void) { return "threads"; }
int par_id(void) { return my_id; }
int par_n(void) { return nthreads; }

void par_barrier(void) { pthread_barrier_wait(&bar); }

void *par_alloc_home(size_t size, enum par_home home)
{
    (void)home;
    if (my_id == 0)
        slot = zeroed_pages(size);
    par_barrier();
    void *p = slot;
    par_barrier(); /* nobody reads slot once the next call may set it */
    return p;
}

void par_bcast(void *buf, size_t len, int root)
{
    if (my_id == root)
        slot = buf;
    par_barrier();
    if (my_id != root)
        memcpy(buf, slot, len);
    par_barrier();
}

static pthread_mutex_t *lock_of(int id)
{
    if (id < 0 || id >= PAR_MAX_LOCKS)
        par_die("lock id %d out of range 0..%d", id, PAR_MAX_LOCKS - 1);
    return &locks[id];
}
void par_lock(int id) { pthread_mutex_lock(lock_of(id)); }
void par_unlock(int id) { pthread_mutex_unlock(lock_of(id)); }
static void stats_reset(void) {}
static void stats_freeze(void) {}

struct thread_arg { int id, argc, rc; char **argv; };

static void *thread_main(void *p)
{
    struct thread_arg *a = p;
    my_id = a->id;
    a->rc = par_main(a->argc, a->argv);
    return NULL;
}

int main(int argc, char **argv)
{
    /* -p P (or PAR_THREADS=P) threads; removed from argv. */
    const char *env = getenv("PAR_THREADS");
    if (env)
        nthreads = atoi(env);
    int out = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-p") && i + 1 < argc)
            nthreads = atoi(argv[++i]);
        else
            argv[out++] = argv[i];
    }
    argv[out] = NULL;
    argc = out;
    if (nthreads < 1 || nthreads > 1024) {
        fprintf(stderr, "%s: -p wants 1..1024 threads\n", argv[0]);
        return 2;
    }
    pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
    for (int i = 0; i < PAR_MAX_LOCKS; i++)
        pthread_mutex_init(&locks[i], NULL);
    struct thread_arg *a = calloc((size_t)nthreads, sizeof *a);
    pthread_t *t = calloc((size_t)nthreads, sizeof *t);
    if (!a || !t)
        return 1;
    for (int i = 0; i < nthreads; i++) {
        a[i] = (struct thread_arg){.id = i, .argc = argc, .argv = argv};
        if (i && pthread_create(&t[i], NULL, thread_main, &a[i]))
            par_die("cannot start thread %d: %s", i, strerror(errno));
    }
    thread_main(&a[0]);
    int rc = a[0].rc;
    for (int i = 1; i < nthreads; i++) {
        pthread_join(t[i], NULL);
        if (a[i].rc && !rc)
            rc = a[i].rc;
    }
    return rc;
}

#else
/* ---- one process, one thread ------------------------------------------ */

const char *par_mode(void) { return "seq"; }
int par_id(void) { return 0; }
int par_n(void) { return 1; }
void *par_alloc_home(size_t size, enum par_home home) { (void)home; return zeroed_pages(size); }
void par_bcast(void *buf, size_t len, int root) { (void)buf; (void)len; (void)root; }
void par_barrier(void) {}
void par_lock(int id) { (void)id; }
void par_unlock(int id) { (void)id; }
static void stats_reset(void) {}
static void stats_freeze(void) {}

int main(int argc, char **argv) { return par_main(argc, argv); }
#endif

/* ---- common to all three ---------------------------------------------- */

void *par_alloc(size_t size) { return par_alloc_home(size, PAR_HOME_DEFAULT); }

static __thread double timer_t0;

void par_timer_start(void)
{
    par_barrier();
    stats_reset();
    timer_t0 = par_now();
}

double par_timer_stop(void)
{
    par_barrier();
    double s = par_now() - timer_t0;
    stats_freeze();
    par_bcast(&s, sizeof s, 0);
    return s;
}

int par_report(const char *app, const char *size, double seconds, bool ok, const char *extra)
{
    int *oks = par_alloc((size_t)par_n() * sizeof *oks);
    oks[par_id()] = ok ? 1 : 0;
    par_barrier();
    bool all = true;
    for (int i = 0; i < par_n(); i++)
        all = all && oks[i];
    if (par_id() == 0) {
        printf("RESULT app=%s mode=%s procs=%d size=%s time=%.6f check=%s%s%s\n", app, par_mode(),
               par_n(), size, seconds, all ? "ok" : "FAIL", extra && *extra ? " " : "",
               extra ? extra : "");
        fflush(stdout);
    }
    par_barrier();
    return all ? 0 : 1;
}

int par_parse_args(int argc, char **argv, const struct arg_option *table, void (*usage)(FILE *f))
{
    return args_read(argc, argv, table, usage, par_id() == 0);
}

int par_bad_args(void (*usage)(FILE *f), const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return args_bad(usage, par_id() == 0, "%s", why);
}

const char *const par_size_words[] = {"test", "quick", "full", NULL};
const char *const par_size_words_large[] = {"test", "quick", "full", "large", NULL};
