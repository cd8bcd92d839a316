/*
 * omp_fortran.c — the Fortran entry points of the OpenMP API routines.
 *
 * A Fortran program reaches an omp_* routine two ways. Through flang's
 * omp_lib module or omp_lib.h, whose interfaces are bind(c): the C routine
 * itself (omp_api.c, omp_lock.c), arguments by value. Without them — an
 * implicit interface, `external omp_get_wtime`, `double precision
 * omp_get_wtime` as NPB declares it — the compiler calls the routine's
 * name with an underscore, every argument by reference (Fortran's
 * convention). libomp exports those names beside the C ones
 * (kmp_ftn_entry.h, its KMP_DEREF entry points); so does dsm, here, one for
 * every omp_* routine it implements. A Fortran LOGICAL result is an int
 * that is nonzero for .true., as the C routines return it.
 *
 * A Fortran lock variable is an integer(omp_lock_kind), 8 bytes: the
 * omp_lock_t of omp_lock.c, one pointer-sized word.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct omp_lock_t { void *_lk; } omp_lock_t;
typedef struct omp_nest_lock_t { void *_lk; } omp_nest_lock_t;
typedef int omp_sched_t;          /* omp_api.c's enum, an int */
typedef int omp_pause_resource_t; /* likewise */

/* The C routines (omp_api.c, omp_lock.c). */
int    omp_get_thread_num(void);
int    omp_get_num_threads(void);
int    omp_get_max_threads(void);
int    omp_get_num_procs(void);
int    omp_get_thread_limit(void);
int    omp_in_parallel(void);
int    omp_get_level(void);
int    omp_get_active_level(void);
int    omp_get_dynamic(void);
void   omp_set_dynamic(int on);
int    omp_get_nested(void);
void   omp_set_nested(int on);
int    omp_get_max_active_levels(void);
void   omp_set_max_active_levels(int levels);
int    omp_get_cancellation(void);
int    omp_get_num_teams(void);
int    omp_get_team_num(void);
int    omp_get_max_task_priority(void);
int    omp_get_supported_active_levels(void);
int    omp_pause_resource(omp_pause_resource_t kind, int device_num);
int    omp_pause_resource_all(omp_pause_resource_t kind);
int    omp_in_final(void);
int    omp_get_num_devices(void);
int    omp_get_device_num(void);
int    omp_is_initial_device(void);
int    omp_get_initial_device(void);
int    omp_get_default_device(void);
void   omp_set_default_device(int device);
int    omp_get_proc_bind(void);
void   omp_set_num_threads(int n);
int    omp_get_ancestor_thread_num(int level);
int    omp_get_team_size(int level);
void   omp_set_schedule(omp_sched_t kind, int chunk);
void   omp_get_schedule(omp_sched_t *kind, int *chunk);
double omp_get_wtime(void);
void   omp_fulfill_event(uintptr_t event);
double omp_get_wtick(void);
void   omp_init_lock(omp_lock_t *l);
void   omp_init_lock_with_hint(omp_lock_t *l, int hint);
void   omp_destroy_lock(omp_lock_t *l);
void   omp_set_lock(omp_lock_t *l);
void   omp_unset_lock(omp_lock_t *l);
int    omp_test_lock(omp_lock_t *l);
void   omp_init_nest_lock(omp_nest_lock_t *l);
void   omp_init_nest_lock_with_hint(omp_nest_lock_t *l, int hint);
void   omp_destroy_nest_lock(omp_nest_lock_t *l);
void   omp_set_nest_lock(omp_nest_lock_t *l);
void   omp_unset_nest_lock(omp_nest_lock_t *l);
int    omp_test_nest_lock(omp_nest_lock_t *l);
int    omp_get_num_places(void);
int    omp_get_place_num_procs(int place);
void   omp_get_place_proc_ids(int place, int *ids);
int    omp_get_place_num(void);
int    omp_get_partition_num_places(void);
void   omp_get_partition_place_nums(int *nums);
int    omp_control_tool(int command, int modifier, void *arg);
void   omp_set_affinity_format(const char *format);
size_t omp_get_affinity_format(char *buffer, size_t size);
void   omp_display_affinity(const char *format);
size_t omp_capture_affinity(char *buffer, size_t size, const char *format);

/* No argument: the same call under the Fortran name. */
#define FTN_GET(type, name) \
    type name##_(void);     \
    type name##_(void) { return name(); }
/* One integer argument, by reference. */
#define FTN_SET(name)           \
    void name##_(const int *a); \
    void name##_(const int *a) { name(*a); }
#define FTN_ASK(name)          \
    int name##_(const int *a); \
    int name##_(const int *a) { return name(*a); }
/* A lock variable, passed by reference as in C. */
#define FTN_LOCK(type, name) \
    void name##_(type *l);   \
    void name##_(type *l) { name(l); }
#define FTN_TEST(type, name) \
    int name##_(type *l);    \
    int name##_(type *l) { return name(l); }

FTN_GET(int, omp_get_thread_num)
FTN_GET(int, omp_get_num_threads)
FTN_GET(int, omp_get_max_threads)
FTN_GET(int, omp_get_num_procs)
FTN_GET(int, omp_get_thread_limit)
FTN_GET(int, omp_in_parallel)
FTN_GET(int, omp_get_level)
FTN_GET(int, omp_get_active_level)
FTN_GET(int, omp_get_dynamic)
FTN_GET(int, omp_get_nested)
FTN_GET(int, omp_get_max_active_levels)
FTN_GET(int, omp_get_cancellation)
FTN_GET(int, omp_get_num_teams)
FTN_GET(int, omp_get_team_num)
FTN_GET(int, omp_get_max_task_priority)
FTN_GET(int, omp_get_supported_active_levels)
FTN_GET(int, omp_in_final)
FTN_GET(int, omp_get_num_devices)
FTN_GET(int, omp_get_device_num)
FTN_GET(int, omp_is_initial_device)
FTN_GET(int, omp_get_initial_device)
FTN_GET(int, omp_get_default_device)
FTN_GET(int, omp_get_proc_bind)
FTN_GET(double, omp_get_wtime)
FTN_GET(double, omp_get_wtick)
FTN_GET(int, omp_get_num_places)
FTN_GET(int, omp_get_place_num)
FTN_GET(int, omp_get_partition_num_places)

FTN_SET(omp_set_dynamic)
FTN_SET(omp_set_nested)
FTN_SET(omp_set_max_active_levels)
FTN_SET(omp_set_default_device)
FTN_SET(omp_set_num_threads)
FTN_ASK(omp_get_ancestor_thread_num)
FTN_ASK(omp_get_team_size)
FTN_ASK(omp_pause_resource_all)
FTN_ASK(omp_get_place_num_procs)

void omp_get_place_proc_ids_(const int *place, int *ids);
void omp_get_place_proc_ids_(const int *place, int *ids) { omp_get_place_proc_ids(*place, ids); }
void omp_get_partition_place_nums_(int *nums);
void omp_get_partition_place_nums_(int *nums) { omp_get_partition_place_nums(nums); }
/* Fortran's omp_control_tool has no third argument. */
int omp_control_tool_(const int *command, const int *modifier);
int omp_control_tool_(const int *command, const int *modifier)
{
    return omp_control_tool(*command, *modifier, NULL);
}

int omp_pause_resource_(const int *kind, const int *device_num);
int omp_pause_resource_(const int *kind, const int *device_num)
{
    return omp_pause_resource(*kind, *device_num);
}

void omp_set_schedule_(const int *kind, const int *chunk);
void omp_set_schedule_(const int *kind, const int *chunk) { omp_set_schedule(*kind, *chunk); }
/* integer(kind=omp_event_handle_kind): the handle, by reference. */
void omp_fulfill_event_(const uintptr_t *event);
void omp_fulfill_event_(const uintptr_t *event) { omp_fulfill_event(*event); }
void omp_get_schedule_(int *kind, int *chunk);
void omp_get_schedule_(int *kind, int *chunk) { omp_get_schedule(kind, chunk); }

FTN_LOCK(omp_lock_t, omp_init_lock)
FTN_LOCK(omp_lock_t, omp_destroy_lock)
FTN_LOCK(omp_lock_t, omp_set_lock)
FTN_LOCK(omp_lock_t, omp_unset_lock)
FTN_TEST(omp_lock_t, omp_test_lock)
FTN_LOCK(omp_nest_lock_t, omp_init_nest_lock)
FTN_LOCK(omp_nest_lock_t, omp_destroy_nest_lock)
FTN_LOCK(omp_nest_lock_t, omp_set_nest_lock)
FTN_LOCK(omp_nest_lock_t, omp_unset_nest_lock)
FTN_TEST(omp_nest_lock_t, omp_test_nest_lock)

void omp_init_lock_with_hint_(omp_lock_t *l, const int *hint);
void omp_init_lock_with_hint_(omp_lock_t *l, const int *hint) { omp_init_lock_with_hint(l, *hint); }
void omp_init_nest_lock_with_hint_(omp_nest_lock_t *l, const int *hint);
void omp_init_nest_lock_with_hint_(omp_nest_lock_t *l, const int *hint)
{
    omp_init_nest_lock_with_hint(l, *hint);
}

/* The affinity format's routines take and give Fortran strings: the
 * characters and, after every other argument, their length (no NUL); a
 * string given back is padded with blanks, as libomp's. A format of length
 * 0 is the affinity-format-var's, as NULL is in C. */
static char *c_string(const char *chars, size_t len)
{
    char *s = malloc(len + 1);
    if (s) {
        memcpy(s, chars, len);
        s[len] = '\0';
    }
    return s;
}

static void fortran_string(char *buffer, size_t size, const char *s)
{
    size_t n = strlen(s);
    memcpy(buffer, s, n < size ? n : size);
    if (n < size)
        memset(buffer + n, ' ', size - n);
}

void omp_set_affinity_format_(const char *format, size_t len);
void omp_set_affinity_format_(const char *format, size_t len)
{
    char *c = c_string(format, len);
    if (c)
        omp_set_affinity_format(c);
    free(c);
}

size_t omp_get_affinity_format_(char *buffer, size_t size);
size_t omp_get_affinity_format_(char *buffer, size_t size)
{
    size_t n = omp_get_affinity_format(NULL, 0);
    char *c = malloc(n + 1);
    if (c && buffer && size) {
        omp_get_affinity_format(c, n + 1);
        fortran_string(buffer, size, c);
    }
    free(c);
    return n;
}

void omp_display_affinity_(const char *format, size_t len);
void omp_display_affinity_(const char *format, size_t len)
{
    char *c = c_string(format, len);
    omp_display_affinity(c && *c ? c : NULL);
    free(c);
}

size_t omp_capture_affinity_(char *buffer, const char *format, size_t size, size_t len);
size_t omp_capture_affinity_(char *buffer, const char *format, size_t size, size_t len)
{
    char *c = c_string(format, len);
    const char *f = c && *c ? c : NULL;
    size_t n = omp_capture_affinity(NULL, 0, f);
    char *out = malloc(n + 1);
    if (out && buffer && size) {
        omp_capture_affinity(out, n + 1, f);
        fortran_string(buffer, size, out);
    }
    free(out);
    free(c);
    return n;
}
