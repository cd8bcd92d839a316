/*
 * kmp_set_defaults.c — libomp's kmp_set_defaults("NAME=value"), which sets
 * libomp's own settings (KMP_*, OMP_*) while the program runs. dsm's
 * OpenMP settings are read once, at the start of the job, on every node:
 * a program that calls it fails to LINK, naming why (see omp_teams.c for
 * how: this file is its own member of libdsm-start.a). Set the variables
 * in the environment of dsmrun instead.
 */
extern void dsm_does_not_support_kmp_set_defaults__set_the_environment(void);

void kmp_set_defaults(const char *str)
{
    (void)str;
    dsm_does_not_support_kmp_set_defaults__set_the_environment();
}
