/*
 * omp_teams.c — the teams construct on the host (OpenMP 5.1 §2.7): a
 * league of teams whose initial threads each run the region, with
 * omp_get_team_num/omp_get_num_teams, thread_limit, a reduction across
 * the teams, critical and atomic across them (in a parallel region of
 * each team), distribute (and
 * dist_schedule) dividing a loop over the teams, and teams distribute
 * parallel for, and target regions run on the host (no device). Built with dsmcc (teams spread over the nodes) and with
 * clang on libomp (the reference). Prints "PASSED: 0 failed" when every
 * check passed.
 */
#include <omp.h>
#include <stdio.h>

#define N 1000
#define TEAMS 4

static int failed;
static int owner[N];     /* which team ran iteration i */
static int runs[N];      /* how many times iteration i ran */
static int seen_num[TEAMS], seen_count[TEAMS], seen_level[TEAMS], seen_limit[TEAMS];
static int seen_in_parallel[TEAMS], seen_inner_team[TEAMS];

static void check(int ok, const char *what)
{
    if (!ok) {
        failed++;
        printf("FAILED: %s\n", what);
    }
}

static void league_and_its_icvs(void)
{
    long sum = 0;
    int crit = 0, atom = 0;
    for (int k = 0; k < TEAMS; k++)
        seen_num[k] = seen_count[k] = seen_level[k] = seen_limit[k] = seen_inner_team[k] = -1;
#pragma omp teams num_teams(TEAMS) thread_limit(2) reduction(+ : sum)
    {
        int k = omp_get_team_num();
        seen_num[k] = k;
        seen_count[k] = omp_get_num_teams();
        seen_level[k] = omp_get_level();
        seen_limit[k] = omp_get_thread_limit();
        seen_in_parallel[k] = omp_in_parallel();
        sum += k + 1;
#pragma omp parallel
        {
            /* a region inside a team belongs to it: its team number stays;
             * critical and atomic (allowed here, not in teams itself) act
             * across the teams */
#pragma omp master
            {
                seen_inner_team[k] = omp_get_team_num() == k && omp_get_level() == 1;
#pragma omp critical
                crit += k + 1;
#pragma omp atomic
                atom += 10 * (k + 1);
            }
        }
    }
    /* OpenMP 5.0 lets a runtime make fewer teams than num_teams asks
     * (libomp makes at most one per core); dsm makes them all. */
    int nt = seen_count[0];
    check(nt >= 1 && nt <= TEAMS, "omp_get_num_teams() is at most the num_teams clause");
    for (int k = 0; k < nt; k++) {
        check(seen_num[k] == k, "each team ran the region once, with its number");
        check(seen_count[k] == nt, "every team sees the same omp_get_num_teams()");
        check(seen_level[k] == 0, "a teams region is at level 0");
        check(seen_limit[k] == 2, "omp_get_thread_limit() is the thread_limit clause");
        check(seen_in_parallel[k] == 0, "a teams region is not a parallel region");
        check(seen_inner_team[k] == 1, "a parallel region in a team keeps its team number");
    }
    for (int k = nt; k < TEAMS; k++)
        check(seen_num[k] == -1, "no team numbered beyond omp_get_num_teams()");
    int want = nt * (nt + 1) / 2;
    check(sum == want, "reduction(+) across the teams");
    check(crit == want, "critical across the teams");
    check(atom == 10 * want, "atomic across the teams");
    check(omp_get_num_teams() == 1 && omp_get_team_num() == 0, "outside teams: one team, number 0");
}

static void distribute_divides_by_team(void)
{
    int nt = 0;
    for (int i = 0; i < N; i++)
        owner[i] = -1, runs[i] = 0;
#pragma omp teams distribute num_teams(TEAMS)
    for (int i = 0; i < N; i++) {
        owner[i] = omp_get_team_num();
        runs[i]++;
        if (i == 0)
            nt = omp_get_num_teams();
    }
    int ok = nt >= 1;
    int block = (N + nt - 1) / nt;
    for (int i = 0; i < N && ok; i++)
        ok &= runs[i] == 1 && owner[i] == i / block; /* static blocks, in team order */
    check(ok, "distribute: every iteration once, in blocks by team");

    for (int i = 0; i < N; i++)
        owner[i] = -1, runs[i] = 0;
#pragma omp teams distribute num_teams(TEAMS) dist_schedule(static, 7)
    for (int i = 0; i < N; i++) {
        if (i == 0)
            nt = omp_get_num_teams();
        owner[i] = omp_get_team_num();
        runs[i]++;
    }
    ok = 1;
    for (int i = 0; i < N; i++)
        ok &= runs[i] == 1 && owner[i] == (i / 7) % nt;
    check(ok, "distribute dist_schedule(static, 7): chunks round-robin by team");
}

static void distribute_parallel_for_reduces(void)
{
    long sum = 0;
    for (int i = 0; i < N; i++)
        runs[i] = 0;
#pragma omp teams distribute parallel for num_teams(TEAMS) reduction(+ : sum)
    for (int i = 0; i < N; i++) {
        sum += i;
#pragma omp atomic
        runs[i]++;
    }
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok &= runs[i] == 1;
    check(ok, "teams distribute parallel for: every iteration once");
    check(sum == (long)N * (N - 1) / 2, "teams distribute parallel for reduction(+)");
}

/* Without a device (no -fopenmp-targets), target regions run on the host:
 * `target teams ...` is a host teams region, `target nowait` a task. */
static void target_runs_on_the_host(void)
{
    long sum = 0;
    int x = 0, y = 0;
#pragma omp target teams distribute parallel for map(tofrom : sum) reduction(+ : sum)
    for (int i = 0; i < N; i++)
        sum += i;
    check(sum == (long)N * (N - 1) / 2, "target teams distribute parallel for reduction(+)");
#pragma omp target nowait map(tofrom : x) depend(out : x)
    x = 5;
#pragma omp task depend(in : x) shared(x, y)
    y = x + 1;
#pragma omp taskwait
    check(x == 5 && y == 6, "target nowait and a task that depends on it");
    check(omp_is_initial_device() == 1, "the program runs on the initial device");
}

int main(void)
{
    league_and_its_icvs();
    target_runs_on_the_host();
    distribute_divides_by_team();
    distribute_parallel_for_reduces();
    printf("teams %d\n", TEAMS);
    printf("PASSED: %d failed\n", failed);
    return failed != 0;
}
