// Every node adds into shared counters through C++'s atomics and OpenMP's
// atomic in a .cpp: dsmc++ compiles them through LLVM's instrumentation,
// so each sum is exact across nodes (a hardware atomic on one node's copy
// of the page would lose the other nodes' adds).
#include <atomic>
#include <cstdio>
#include <omp.h>

static std::atomic<long> counter{0};
static std::atomic<int> ticket{0};
static long omp_sum;
static double omp_fsum;
static int seen[4096];

int main()
{
    // Enough for the nodes to overlap (500 passed by luck on old code).
    // 2,000 as in Fortran's: each add is a lock hand-over between nodes,
    // and 5,000 took up to 220 s under erc at load 70 (docs/testing.md).
    const int per = 2000;
    int threads = 1;
#pragma omp parallel
    {
#pragma omp single
        threads = omp_get_num_threads();
        for (int i = 0; i < per; i++) {
            counter.fetch_add(1);
            int t = ticket++;
            if (t < 4096)
                seen[t] = 1;
#pragma omp atomic
            omp_sum += 2;
#pragma omp atomic
            omp_fsum += 0.5;
        }
    }
    long n = (long)threads * per;
    int unique = 0;
    for (int t = 0; t < 4096; t++)
        unique += seen[t];
    bool ok = counter.load() == n && ticket.load() == n && omp_sum == 2 * n &&
              omp_fsum == 0.5 * (double)n && unique == (n < 4096 ? n : 4096);
    std::printf("counter %ld ticket %d omp %ld %.1f unique %d of %ld\n", counter.load(),
                ticket.load(), omp_sum, omp_fsum, unique, n);
    std::printf("c++ atomics: %s on %d threads\n", ok ? "ok" : "WRONG", threads);
    return ok ? 0 : 1;
}
