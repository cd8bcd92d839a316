/*
 * teams.c — the teams construct on the host (OpenMP 5.1 §2.7): a league
 * of teams, each of one initial thread that runs the teams region.
 *
 * The league is laid over the nodes as a parallel region's team is
 * (team_layout.c): n teams give ceil(n / nodes) initial threads on a node,
 * node-major, so team k's initial thread is thread k of a region whose
 * description says `league` (region.c, region_enter): there it is thread
 * 0 of a team of one, at level 0, and omp_get_team_num() is k. What a teams
 * region may hold binds to the league: `distribute` divides its loop by
 * team (loop.c), a reduction merges the teams' values under a lock
 * (team_sync.c), and a `parallel` inside is a team of one for each initial
 * thread (dsm starts a region's team from the master only; OpenMP lets a
 * runtime give fewer threads than asked).
 */
#include <stdint.h>
#include <stdarg.h>

#include "base/job.h"
#include "base/log.h"
#include "omp/kmpc.h"
#include "omp/omp_state.h"

void __kmpc_push_num_teams(ident_t *loc, kmp_int32 gtid, kmp_int32 num_teams,
                           kmp_int32 num_threads)
{
    (void)loc, (void)gtid;
    if (num_teams < 0 || num_threads < 0)
        log_fatal("teams num_teams(%d) thread_limit(%d): the numbers must be positive", num_teams,
                  num_threads);
    struct omp_thread *t = omp_self();
    t->pushed_teams = num_teams; /* 0: no num_teams clause */
    t->pushed_team_threads = num_threads;
}

/* OpenMP 5.1's num_teams(lower: upper): any number in the range. dsm
 * gives its default (nteams-var, else one team per node) moved into it. */
void __kmpc_push_num_teams_51(ident_t *loc, kmp_int32 gtid, kmp_int32 lb, kmp_int32 ub,
                              kmp_int32 num_threads)
{
    if (lb < 0 || ub < lb)
        log_fatal("teams num_teams(%d: %d): the bounds must be positive and in order", lb, ub);
    struct omp_thread *t = omp_self();
    int n = t->icv.nteams > 0 ? t->icv.nteams : job()->nodes;
    if (ub > 0 && n > ub)
        n = ub;
    if (n < lb)
        n = lb;
    __kmpc_push_num_teams(loc, gtid, n, num_threads);
}

void __kmpc_fork_teams(ident_t *loc, kmp_int32 argc, kmpc_micro microtask, ...)
{
    (void)loc;
    struct omp_thread *t = omp_self();
    uint64_t args[OMP_MAX_ARGS];
    va_list ap;
    va_start(ap, microtask);
    omp_take_args("an OpenMP teams region", argc, ap, args);
    va_end(ap);
    int n = t->pushed_teams ? t->pushed_teams : t->icv.nteams > 0 ? t->icv.nteams : job()->nodes;
    int limit = t->pushed_team_threads ? t->pushed_team_threads : t->icv.teams_thread_limit;
    t->pushed_teams = t->pushed_team_threads = 0;
    /* OpenMP 5.1: a host teams region is not nested in any other region. */
    if (t->level > 0 || t->num_teams > 1)
        log_fatal("a teams construct inside a parallel or teams region: OpenMP allows a host "
                  "teams region only outside every other region");
    if (n > omp_thread_limit(t))
        log_fatal("teams num_teams(%d): %d nodes run at most %d initial threads (dsmrun "
                  "--threads T gives T per node)",
                  n, job()->nodes, omp_thread_limit(t));
    omp_fork(t, n, true, limit, (void *)microtask, argc, args, n, __builtin_return_address(0),
             __builtin_frame_address(0));
}

int omp_get_num_teams(void) { return omp_self()->num_teams; }
int omp_get_team_num(void) { return omp_self()->team_num; }
