// pt_cpus_cxx — std::thread::hardware_concurrency() (libstdc++: get_nprocs)
// agrees with sysconf(_SC_NPROCESSORS_ONLN) (issue 55, point 2).
//
//   pt_cpus_cxx          prints "hardware_concurrency N" and "ok"
#include <cstdio>
#include <thread>
#include <unistd.h>

int main()
{
    unsigned hc = std::thread::hardware_concurrency();
    long onln = sysconf(_SC_NPROCESSORS_ONLN);
    std::printf("hardware_concurrency %u, sysconf %ld\npt_cpus_cxx: %s\n", hc, onln,
                (long)hc == onln ? "ok" : "FAILED");
    return (long)hc != onln;
}
