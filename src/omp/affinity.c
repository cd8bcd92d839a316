/*
 * affinity.c — places, thread binding and the affinity format (OpenMP
 * 5.1 §2.6.2, §3.3, §6.4-§6.5, §6.14-§6.15) on a node.
 *
 * Places are a node's: each node is a process on its own machine (or, on
 * one host, beside the others), and OMP_PLACES names the processors of
 * that machine — `threads`, `cores`, `sockets`, `ll_caches`,
 * `numa_domains` (each with an optional count) or explicit lists
 * ({0,1},{2:4},{0}:4:2 ...), kept to the processors the process may run
 * on (a place left empty is dropped, as libomp drops it). Without
 * OMP_PLACES there is one place, every processor of the node, and nothing
 * is bound; OMP_PLACES without OMP_PROC_BIND binds (proc-bind-var true),
 * as libomp does. A team's threads on a node take places from the node's
 * partition as OMP_PROC_BIND or the proc_bind clause says (close, spread,
 * master/primary; true is spread) and are bound to them
 * (pthread_setaffinity_np): node 0's first from the master's place, every
 * other node's first from its partition's first place.
 *
 * The affinity format (OMP_AFFINITY_FORMAT, omp_set_affinity_format)
 * fields: %t %T %L %n %N %a as OpenMP says, %H the node's host, %P its
 * process id, %i the thread's (gettid), %A the processors the thread may
 * run on; `%0.8n`-style modifiers as libomp (0: pad with zeros, '.':
 * right-justify, then a width). The master's format reaches the other
 * nodes with its next region. OMP_DISPLAY_AFFINITY=true prints a thread's
 * line at a region's start when its level, team size, place or the format
 * changed since the line it printed last, as libomp does.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dsm.h"
#include "base/job.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/state.h"
#include "omp/kmpc.h"
#include "omp/omp_state.h"

/* libomp's default, so that a program's parsing of it works here too. */
#define DEFAULT_FORMAT "OMP: pid %P tid %i thread %n bound to OS proc set {%A}"
#define FORMAT_MAX 512
#define MAX_PLACES 4096

int omp_get_ancestor_thread_num(int level);

struct place {
    int  nprocs;
    int *procs;
};

static DSM_STATE struct {
    pthread_once_t once;
    cpu_set_t      avail;      /* what the process may run on, at its start */
    struct place  *places;
    int            nplaces;
    bool           explicit_places; /* OMP_PLACES was given */
    int            bind[8];    /* proc-bind-var, per nesting level */
    int            nbind;
    bool           display;    /* OMP_DISPLAY_AFFINITY */
    pthread_mutex_t format_lock;
    char           format[FORMAT_MAX];
    uint32_t       format_gen; /* changes with each omp_set_affinity_format */
    void          *published;  /* the master's shared copy (dsm_malloc) */
    uint32_t       published_gen;
} aff = {.once = PTHREAD_ONCE_INIT, .format_lock = PTHREAD_MUTEX_INITIALIZER};

/* What each thread printed last (OMP_DISPLAY_AFFINITY): not restored at a
 * region's end, as the thread's OpenMP state is. */
static __thread struct {
    bool     shown;
    int      level, nthreads, place, bind;
} shown;

/* ---- places ---------------------------------------------------------------- */

static void add_place(const cpu_set_t *set)
{
    cpu_set_t s;
    CPU_AND(&s, set, &aff.avail);
    int n = CPU_COUNT(&s);
    if (!n || aff.nplaces == MAX_PLACES)
        return; /* nothing of it here: dropped, as libomp drops it */
    struct place *p = realloc(aff.places, (size_t)(aff.nplaces + 1) * sizeof *p);
    if (!p)
        log_fatal("out of memory for OMP_PLACES");
    aff.places = p;
    p = &aff.places[aff.nplaces++];
    p->nprocs = 0;
    p->procs = malloc((size_t)n * sizeof *p->procs);
    if (!p->procs)
        log_fatal("out of memory for OMP_PLACES");
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &s))
            p->procs[p->nprocs++] = c;
}

/* A processor's group for an abstract name: its core, its socket, ... as
 * /sys says; -1 when it does not say. */
static long sys_long(const char *fmt, int cpu)
{
    char path[160];
    snprintf(path, sizeof path, fmt, cpu);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long v = -1;
    if (fscanf(f, "%ld", &v) != 1)
        v = -1;
    fclose(f);
    return v;
}

/* Reads a cpulist file ("0-3,8") into set; false when there is none. */
static bool sys_cpulist(const char *path, cpu_set_t *set)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[4096];
    bool ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!ok)
        return false;
    CPU_ZERO(set);
    for (char *p = line; *p && *p != '\n';) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p)
            return false;
        if (*end == '-')
            b = strtol(end + 1, &end, 10);
        for (long c = a; c <= b && c < CPU_SETSIZE; c++)
            if (c >= 0)
                CPU_SET((int)c, set);
        p = *end == ',' ? end + 1 : end;
    }
    return true;
}

/* The groups of an abstract place name: threads (each processor), cores,
 * sockets, ll_caches, numa_domains; at most `count` of them (0: all). */
static void abstract_places(const char *name, int count)
{
    bool seen[CPU_SETSIZE] = {false};
    for (int c = 0; c < CPU_SETSIZE && (!count || aff.nplaces < count); c++) {
        if (!CPU_ISSET(c, &aff.avail) || seen[c])
            continue;
        cpu_set_t set;
        CPU_ZERO(&set);
        bool found = false;
        char path[200];
        if (!strcmp(name, "cores")) {
            snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
            found = sys_cpulist(path, &set);
        } else if (!strcmp(name, "sockets")) {
            long pkg = sys_long("/sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
            if (pkg >= 0) {
                for (int d = 0; d < CPU_SETSIZE; d++)
                    if (CPU_ISSET(d, &aff.avail) &&
                        sys_long("/sys/devices/system/cpu/cpu%d/topology/physical_package_id", d) == pkg)
                        CPU_SET(d, &set);
                found = true;
            }
        } else if (!strcmp(name, "ll_caches")) {
            for (int idx = 9; idx >= 0 && !found; idx--) {
                snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/shared_cpu_list",
                         c, idx);
                found = sys_cpulist(path, &set);
            }
        } else if (!strcmp(name, "numa_domains")) {
            for (int node = 0; node < 1024 && !found; node++) {
                snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", node);
                cpu_set_t s;
                if (!sys_cpulist(path, &s)) {
                    if (node > 64)
                        break;
                    continue;
                }
                if (CPU_ISSET(c, &s))
                    set = s, found = true;
            }
        }
        if (!found) { /* threads, or a machine that does not say: the processor alone */
            CPU_ZERO(&set);
            CPU_SET(c, &set);
        }
        CPU_SET(c, &set);
        for (int d = 0; d < CPU_SETSIZE; d++)
            if (CPU_ISSET(d, &set))
                seen[d] = true;
        add_place(&set);
    }
}

static long parse_num(const char **s, const char *what)
{
    char *end;
    errno = 0;
    long v = strtol(*s, &end, 10);
    if (end == *s || errno)
        log_fatal("OMP_PLACES=%s: expected a number at \"%s\"", what, *s);
    *s = end;
    return v;
}

/* {res[:len[:stride]],...}: into set. */
static void parse_place(const char **s, cpu_set_t *set, const char *all)
{
    if (**s != '{')
        log_fatal("OMP_PLACES=%s: expected '{' at \"%s\"", all, *s);
    (*s)++;
    CPU_ZERO(set);
    for (;;) {
        bool exclude = **s == '!';
        if (exclude)
            (*s)++;
        long a = parse_num(s, all), len = 1, stride = 1;
        if (**s == ':') {
            (*s)++;
            len = parse_num(s, all);
            if (**s == ':') {
                (*s)++;
                stride = parse_num(s, all);
            }
        }
        if (len < 1 || len > CPU_SETSIZE)
            log_fatal("OMP_PLACES=%s: a length of %ld processors", all, len);
        for (long i = 0; i < len; i++) {
            long c = a + i * stride;
            if (c >= 0 && c < CPU_SETSIZE) {
                if (exclude)
                    CPU_CLR((int)c, set);
                else
                    CPU_SET((int)c, set);
            }
        }
        if (**s == ',') {
            (*s)++;
            continue;
        }
        if (**s == '}') {
            (*s)++;
            return;
        }
        log_fatal("OMP_PLACES=%s: expected ',' or '}' at \"%s\"", all, *s);
    }
}

static void parse_places(const char *v)
{
    while (isspace((unsigned char)*v))
        v++;
    const char *names[] = {"threads", "cores", "sockets", "ll_caches", "numa_domains"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        if (!strncasecmp(v, names[i], n)) {
            const char *s = v + n;
            int count = 0;
            if (*s == '(') {
                s++;
                count = (int)parse_num(&s, v);
                if (*s++ != ')' || count < 1)
                    log_fatal("OMP_PLACES=%s: expected %s(count), count >= 1", v, names[i]);
            }
            while (isspace((unsigned char)*s))
                s++;
            if (*s)
                log_fatal("OMP_PLACES=%s: unexpected \"%s\"", v, s);
            abstract_places(names[i], count);
            return;
        }
    }
    const char *s = v;
    while (*s) {
        bool exclude = *s == '!';
        if (exclude)
            s++;
        cpu_set_t set;
        parse_place(&s, &set, v);
        long num = 1, stride = 1;
        if (*s == ':') {
            s++;
            num = parse_num(&s, v);
            if (*s == ':') {
                s++;
                stride = parse_num(&s, v);
            }
        }
        if (num < 1 || num > MAX_PLACES)
            log_fatal("OMP_PLACES=%s: %ld places in an interval", v, num);
        for (long k = 0; k < num && !exclude; k++) {
            cpu_set_t shifted;
            CPU_ZERO(&shifted);
            for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &set) && c + k * stride >= 0 && c + k * stride < CPU_SETSIZE)
                    CPU_SET((int)(c + k * stride), &shifted);
            add_place(&shifted);
        }
        while (isspace((unsigned char)*s))
            s++;
        if (*s == ',')
            s++;
        else if (*s)
            log_fatal("OMP_PLACES=%s: expected ',' at \"%s\"", v, s);
    }
}

static int parse_bind_one(const char *v, size_t n)
{
    static const struct { const char *name; int value; } kinds[] = {
        {"false", 0}, {"true", 1}, {"master", 2}, {"primary", 2}, {"close", 3}, {"spread", 4}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strlen(kinds[i].name) == n && !strncasecmp(kinds[i].name, v, n))
            return kinds[i].value;
    return -1;
}

static void init_once(void)
{
    if (sched_getaffinity(0, sizeof aff.avail, &aff.avail)) {
        CPU_ZERO(&aff.avail);
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        for (long c = 0; c < n && c < CPU_SETSIZE; c++)
            CPU_SET((int)c, &aff.avail);
    }
    const char *bind = getenv("OMP_PROC_BIND");
    if (bind && *bind) {
        for (const char *p = bind; *p;) {
            while (*p == ' ')
                p++;
            size_t n = strcspn(p, ", ");
            int b = parse_bind_one(p, n);
            if (b < 0 || (b <= 1 && aff.nbind > 0) || aff.nbind == 8)
                log_fatal("OMP_PROC_BIND=%s: expected true, false, or a list of primary, master, "
                          "close and spread", bind);
            aff.bind[aff.nbind++] = b;
            p += n;
            while (*p == ' ' || *p == ',')
                p++;
        }
    }
    const char *places = getenv("OMP_PLACES");
    if (places && *places) {
        parse_places(places);
        aff.explicit_places = true;
        if (!aff.nplaces)
            log_warn("OMP_PLACES=%s names no processor this node may run on: one place, "
                     "all of them", places);
        if (!aff.nbind) /* places without OMP_PROC_BIND bind, as libomp */
            aff.bind[aff.nbind++] = 1;
    } else if (aff.nbind && aff.bind[0] != 0) {
        abstract_places("cores", 0); /* binding without places: cores, as libomp */
    }
    if (!aff.nplaces)
        add_place(&aff.avail);
    if (!aff.nbind)
        aff.bind[aff.nbind++] = 0;
    const char *d = getenv("OMP_DISPLAY_AFFINITY");
    if (d && *d) {
        if (!strcasecmp(d, "true") || !strcmp(d, "1"))
            aff.display = true;
        else if (strcasecmp(d, "false") && strcmp(d, "0"))
            log_fatal("OMP_DISPLAY_AFFINITY=%s: expected true or false", d);
    }
    const char *f = getenv("OMP_AFFINITY_FORMAT");
    snprintf(aff.format, sizeof aff.format, "%s", f && *f ? f : DEFAULT_FORMAT);
}

static void ready(void) { pthread_once(&aff.once, init_once); }

static void bind_to(int place);

void omp_affinity_init_icvs(struct omp_thread *t)
{
    ready();
    t->icv.nbind = aff.nbind;
    memcpy(t->icv.bind, aff.bind, sizeof t->icv.bind);
    t->place = -1;
    t->part_first = 0;
    t->part_count = aff.nplaces;
    /* A node's first thread, binding on: its partition's first place from
     * the start, as libomp binds its initial thread. */
    if (aff.bind[0] != 0 && smp_index() == 0) {
        bind_to(0);
        t->place = 0;
    }
}

int omp_affinity_num_places(void)
{
    ready();
    return aff.nplaces;
}

/* The place whose processors are exactly the thread's; -1: none. */
static int place_of_mask(void)
{
    cpu_set_t set;
    if (pthread_getaffinity_np(pthread_self(), sizeof set, &set))
        return -1;
    for (int i = 0; i < aff.nplaces; i++) {
        cpu_set_t p;
        CPU_ZERO(&p);
        for (int j = 0; j < aff.places[i].nprocs; j++)
            CPU_SET(aff.places[i].procs[j], &p);
        if (CPU_EQUAL(&p, &set))
            return i;
    }
    return -1;
}

static void bind_to(int place)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int j = 0; j < aff.places[place].nprocs; j++)
        CPU_SET(aff.places[place].procs[j], &set);
    int err = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (err)
        log_warn("cannot bind a thread to place %d: %s", place, strerror(err));
}

/* A thread enters a region as the k-th of the node's `count` threads of
 * the team: its place, partition and binding as the region's binding
 * says (OpenMP 5.1 §2.6.2). The region's description carries the master's
 * place and partition. */
void omp_affinity_enter(struct omp_thread *t, int bind, int master_place, int part_first,
                        int part_count, int k, int count)
{
    ready();
    int P = aff.nplaces;
    if (part_first < 0 || part_first >= P || part_count < 1 || part_first + part_count > P)
        part_first = 0, part_count = P; /* another node's partition: the whole node */
    /* this node's first thread: node 0's from the master's place */
    int first = master_place >= part_first && master_place < part_first + part_count
                    ? master_place - part_first : 0;
    t->part_first = part_first;
    t->part_count = part_count;
    if (bind == 0) { /* false: threads stay where they are */
        t->place = place_of_mask();
        return;
    }
    int place;
    if (bind == 2) { /* master (primary): every thread on the master's place */
        place = part_first + first;
    } else if (bind == 3 || count > part_count) { /* close, or more threads than places */
        int pos = count <= part_count ? k : (int)((long)k * part_count / count);
        place = part_first + (first + pos) % part_count;
        if (count > part_count && bind != 3) /* spread of more threads: one place each */
            t->part_first = place, t->part_count = 1;
    } else { /* spread (and true): count subpartitions, each thread the first of its own */
        int lo = (int)((long)k * part_count / count), hi = (int)((long)(k + 1) * part_count / count);
        place = part_first + (first + lo) % part_count;
        t->part_first = place;
        t->part_count = hi - lo;
        if (t->part_first + t->part_count > part_first + part_count) /* wrapped: keep it whole */
            t->part_first = part_first + (first + lo) % part_count, t->part_count = 1;
    }
    if (t->place != place)
        bind_to(place);
    t->place = place;
}

/* ---- the place API ------------------------------------------------------- */

int omp_get_num_places(void) { return omp_affinity_num_places(); }

int omp_get_place_num_procs(int place)
{
    ready();
    return place >= 0 && place < aff.nplaces ? aff.places[place].nprocs : 0;
}

void omp_get_place_proc_ids(int place, int *ids)
{
    ready();
    if (place < 0 || place >= aff.nplaces || !ids)
        return;
    memcpy(ids, aff.places[place].procs, (size_t)aff.places[place].nprocs * sizeof *ids);
}

int omp_affinity_place_num(void)
{
    struct omp_thread *t = omp_self();
    ready();
    return t->place >= 0 ? t->place : place_of_mask();
}

int omp_get_place_num(void) { return omp_affinity_place_num(); }

int omp_get_partition_num_places(void)
{
    struct omp_thread *t = omp_self();
    ready();
    return t->part_count > 0 ? t->part_count : aff.nplaces;
}

void omp_get_partition_place_nums(int *nums)
{
    struct omp_thread *t = omp_self();
    ready();
    int n = t->part_count > 0 ? t->part_count : aff.nplaces;
    for (int i = 0; nums && i < n; i++)
        nums[i] = (t->part_count > 0 ? t->part_first : 0) + i;
}

/* bind-var's first value: false 0, true 1, master/primary 2, close 3,
 * spread 4 (omp_proc_bind_t). */
int omp_get_proc_bind(void)
{
    struct omp_thread *t = omp_self();
    return t->icv.nbind > 0 ? t->icv.bind[0] : 0;
}

/* ---- the affinity format --------------------------------------------------- */

static void thread_affinity(char *out, size_t len)
{
    cpu_set_t set;
    out[0] = '\0';
    if (pthread_getaffinity_np(pthread_self(), sizeof set, &set)) {
        snprintf(out, len, "undefined");
        return;
    }
    size_t at = 0;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &set))
            continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set))
            e++;
        int w;
        if (e - c >= 2)
            w = snprintf(out + at, len - at, "%s%d-%d", at ? "," : "", c, e);
        else if (e > c)
            w = snprintf(out + at, len - at, "%s%d,%d", at ? "," : "", c, e);
        else
            w = snprintf(out + at, len - at, "%s%d", at ? "," : "", c);
        if (w < 0 || (size_t)w >= len - at)
            return;
        at += (size_t)w;
        c = e;
    }
}

struct out { char *buf; size_t size, len; };

static void put(struct out *o, const char *s)
{
    for (; *s; s++, o->len++)
        if (o->len + 1 < o->size)
            o->buf[o->len] = *s;
}

/* Fills buf (size bytes, always terminated when size > 0) from the
 * format, for the calling thread; returns the length of the whole. */
static size_t capture(const char *format, char *buf, size_t size)
{
    static const struct { char letter; const char *name; } fields[] = {
        {'t', "team_num"}, {'T', "num_teams"}, {'L', "nesting_level"}, {'n', "thread_num"},
        {'N', "num_threads"}, {'a', "ancestor_tnum"}, {'H', "host"}, {'P', "process_id"},
        {'i', "native_thread_id"}, {'A', "thread_affinity"}};
    struct omp_thread *t = omp_self();
    struct out o = {buf, size, 0};
    for (const char *p = format; *p;) {
        if (*p != '%') {
            char c[2] = {*p++, 0};
            put(&o, c);
            continue;
        }
        p++;
        if (*p == '%') {
            put(&o, "%");
            p++;
            continue;
        }
        bool zeros = false, right = false;
        int width = 0;
        if (*p == '0')
            zeros = true, p++;
        if (*p == '.')
            right = true, p++;
        while (isdigit((unsigned char)*p))
            width = width * 10 + (*p++ - '0');
        char letter = 0;
        if (*p == '{') {
            const char *end = strchr(p, '}');
            for (size_t i = 0; end && i < sizeof fields / sizeof fields[0]; i++)
                if (strlen(fields[i].name) == (size_t)(end - p - 1) &&
                    !strncmp(fields[i].name, p + 1, (size_t)(end - p - 1)))
                    letter = fields[i].letter;
            p = end ? end + 1 : p + strlen(p);
        } else if (*p) {
            letter = *p++;
        }
        char value[1024];
        long num = 0;
        bool is_num = true;
        switch (letter) {
        case 't': num = t->team_num; break;
        case 'T': num = t->num_teams; break;
        case 'L': num = t->level; break;
        case 'n': num = t->tid; break;
        case 'N': num = t->nthreads; break;
        case 'a': num = omp_get_ancestor_thread_num(t->level - 1); break;
        case 'P': num = getpid(); break;
        case 'i': num = (long)syscall(SYS_gettid); break;
        case 'H':
            is_num = false;
            if (gethostname(value, sizeof value))
                snprintf(value, sizeof value, "undefined");
            value[sizeof value - 1] = '\0';
            break;
        case 'A': is_num = false; thread_affinity(value, sizeof value); break;
        default: is_num = false; snprintf(value, sizeof value, "undefined"); break;
        }
        char spec[32], field[1100];
        if (is_num) {
            snprintf(spec, sizeof spec, "%%%s%s%dld", zeros ? "0" : "", right ? "" : "-", width);
            snprintf(field, sizeof field, spec, num);
        } else {
            snprintf(spec, sizeof spec, "%%%s%ds", right ? "" : "-", width);
            snprintf(field, sizeof field, spec, value);
        }
        put(&o, field);
    }
    if (size)
        buf[o.len < size ? o.len : size - 1] = '\0';
    return o.len;
}

static void format_copy(char *out, size_t len)
{
    ready();
    pthread_mutex_lock(&aff.format_lock);
    snprintf(out, len, "%s", aff.format);
    pthread_mutex_unlock(&aff.format_lock);
}

void omp_set_affinity_format(const char *format)
{
    ready();
    pthread_mutex_lock(&aff.format_lock);
    snprintf(aff.format, sizeof aff.format, "%s", format ? format : "");
    aff.format_gen++;
    pthread_mutex_unlock(&aff.format_lock);
}

size_t omp_get_affinity_format(char *buffer, size_t size)
{
    char f[FORMAT_MAX];
    format_copy(f, sizeof f);
    if (buffer && size) {
        snprintf(buffer, size, "%s", f);
    }
    return strlen(f);
}

void omp_display_affinity(const char *format)
{
    char f[FORMAT_MAX], line[2048];
    if (format && *format)
        snprintf(f, sizeof f, "%s", format);
    else
        format_copy(f, sizeof f);
    capture(f, line, sizeof line);
    printf("%s\n", line);
}

size_t omp_capture_affinity(char *buffer, size_t size, const char *format)
{
    char f[FORMAT_MAX];
    if (format && *format)
        snprintf(f, sizeof f, "%s", format);
    else
        format_copy(f, sizeof f);
    return capture(f, buffer, buffer ? size : 0);
}

/* The ompc_ forms: what omp.h names the routines by under some compilers. */
void ompc_set_affinity_format(const char *format) { omp_set_affinity_format(format); }
size_t ompc_get_affinity_format(char *buffer, size_t size)
{
    return omp_get_affinity_format(buffer, size);
}
void ompc_display_affinity(const char *format) { omp_display_affinity(format); }
size_t ompc_capture_affinity(char *buffer, size_t size, const char *format)
{
    return omp_capture_affinity(buffer, size, format);
}

/* At the master, before a region: the format other nodes need, if it
 * changed since the last region (a copy in shared memory; the previous
 * copy is no longer read once the previous region has ended). */
void omp_affinity_publish(uint64_t *fmt, uint32_t *gen)
{
    ready();
    pthread_mutex_lock(&aff.format_lock);
    if (aff.published_gen != aff.format_gen || !aff.published) {
        size_t n = strlen(aff.format) + 1;
        char *copy = dsm_malloc(n);
        if (!copy)
            log_fatal("no shared memory for the affinity format");
        memcpy(copy, aff.format, n);
        if (aff.published)
            dsm_free(aff.published);
        aff.published = copy;
        aff.published_gen = aff.format_gen;
    }
    *fmt = (uint64_t)(uintptr_t)aff.published;
    *gen = aff.published_gen;
    pthread_mutex_unlock(&aff.format_lock);
}

/* On another node, at a region's start: the master's format. */
void omp_affinity_take(uint64_t fmt, uint32_t gen)
{
    ready();
    if (!fmt || job()->rank == 0)
        return;
    pthread_mutex_lock(&aff.format_lock);
    if (gen != aff.format_gen) {
        snprintf(aff.format, sizeof aff.format, "%s", (const char *)(uintptr_t)fmt);
        aff.format_gen = gen;
    }
    pthread_mutex_unlock(&aff.format_lock);
}

/* OMP_DISPLAY_AFFINITY: at a region's start (or a serialized one's), the
 * thread's line when its level, team size, place or the region's binding
 * changed since it last printed one (libomp shows the whole team again
 * when a region binds otherwise; a new format alone shows nothing). */
void omp_affinity_display(struct omp_thread *t, int bind)
{
    ready();
    if (!aff.display)
        return;
    pthread_mutex_lock(&aff.format_lock);
    uint32_t gen = aff.format_gen;
    pthread_mutex_unlock(&aff.format_lock);
    (void)gen; /* a new format alone prints nothing, as libomp */
    if (shown.shown && shown.level == t->level && shown.nthreads == t->nthreads &&
        shown.place == t->place && shown.bind == bind)
        return;
    shown.shown = true;
    shown.level = t->level;
    shown.nthreads = t->nthreads;
    shown.place = t->place;
    shown.bind = bind;
    omp_display_affinity(NULL);
}
