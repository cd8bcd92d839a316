/* A host `teams` region: dsm does not run teams, and the link says so
 * (src/start/omp_teams.c). */
#include <omp.h>
#include <stdio.h>

int main(void)
{
    int n = 0;
#pragma omp teams num_teams(2)
    n = omp_get_num_teams();
    printf("%d\n", n);
    return 0;
}
