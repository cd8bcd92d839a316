/*
 * omp_teams.c — `teams` outside a target region, which dsm does not run:
 * a program that uses it fails to LINK, naming why, rather than running
 * wrongly. This file is a member of libdsm-start.a of its own: the linker
 * takes it only for a program that calls __kmpc_fork_teams or
 * __kmpc_push_num_teams, and then finds the symbol below undefined, so
 * the link error reads "undefined reference to
 * `dsm_does_not_support_omp_teams__use_parallel'".
 */
extern void dsm_does_not_support_omp_teams__use_parallel(void);

void __kmpc_fork_teams(void *loc, int argc, void *microtask, ...)
{
    (void)loc, (void)argc, (void)microtask;
    dsm_does_not_support_omp_teams__use_parallel();
}

void __kmpc_push_num_teams(void *loc, int gtid, int num_teams, int num_threads)
{
    (void)loc, (void)gtid, (void)num_teams, (void)num_threads;
    dsm_does_not_support_omp_teams__use_parallel();
}

void __kmpc_push_num_teams_51(void *loc, int gtid, int lb, int ub, int num_threads)
{
    (void)loc, (void)gtid, (void)lb, (void)ub, (void)num_threads;
    dsm_does_not_support_omp_teams__use_parallel();
}
