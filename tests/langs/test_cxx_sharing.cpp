// test_cxx_sharing.cpp — what a C++ OpenMP program built with dsmc++ shares
// across nodes (docs/unmodified-programs.md). Static initializers run on
// every node before main: the blocks they allocate (malloc, new, a global
// std::vector's, a std::string's) must be shared memory holding what the
// MASTER's initializers wrote — each node writes its own pid, and every
// thread must read the master's — even when the master's initializers
// allocate more than a worker's. Then what main allocates (new, the
// standard library's containers, std::string's buffer, make_shared) is read
// by every thread, and an exception thrown and caught on a worker links and
// works (libstdc++'s personality routine). Exits non-zero naming what failed.
#include <omp.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

static const int N = 50000;

static double *g_malloc = static_cast<double *>(malloc(N * sizeof(double)));
static long *g_new = new long[N];
static std::vector<int> g_vector(N);
static std::string g_string(3000, '?');

struct Shape {
    virtual ~Shape() = default;
    virtual int sides() const = 0;
};
struct Square : Shape {
    int sides() const override { return 4; }
};
static Shape *g_shape = new Square;

// Node-dependent sizes: the master's initializers allocate 3 MiB where a
// worker's allocate one byte (DSM_RANK: dsmrun's). The master's blocks are
// the ones that count; a worker takes pages beyond its own.
static const size_t BIG = 3u << 20;
static char *g_big = [] {
    const char *rank = getenv("DSM_RANK");
    bool master = !rank || !strcmp(rank, "0");
    char *p = static_cast<char *>(malloc(master ? BIG : 1));
    memset(p, master ? 'm' : 'w', master ? BIG : 1);
    return p;
}();

// Runs on every node before main: node-dependent contents (the pid), so
// that the master's are told apart from a worker's.
struct Fill {
    Fill()
    {
        long me = getpid();
        for (int i = 0; i < N; i++) {
            g_malloc[i] = static_cast<double>(me);
            g_new[i] = me;
            g_vector[i] = static_cast<int>(me);
        }
        g_string.assign(3000, static_cast<char>('a' + me % 26));
    }
} fill;

static int fails;
static void fail(const char *what, long bad)
{
    if (bad) {
        printf("not shared: %s (%ld wrong)\n", what, bad);
        fails++;
    }
}

int main()
{
    const long master = getpid();
    const int nt = omp_get_max_threads();
    long bad_malloc = 0, bad_new = 0, bad_vector = 0, bad_string = 0, bad_shape = 0;
#pragma omp parallel for reduction(+ : bad_malloc, bad_new, bad_vector, bad_string, bad_shape)
    for (int i = 0; i < N; i++) {
        bad_malloc += g_malloc[i] != static_cast<double>(master);
        bad_new += g_new[i] != master;
        bad_vector += g_vector[i] != static_cast<int>(master);
        bad_shape += g_shape->sides() != 4;
    }
#pragma omp parallel reduction(+ : bad_string)
    for (int i = 0; i < 3000; i++) /* the whole string on every thread */
        bad_string += g_string[i] != static_cast<char>('a' + master % 26);
    long bad_big = 0;
#pragma omp parallel reduction(+ : bad_big)
    for (size_t i = 0; i < BIG; i += 4096) /* every page on every thread */
        bad_big += g_big[i] != 'm' || g_big[BIG - 1 - i] != 'm';
    fail("the master's larger static-initializer block", bad_big);
    fail("a static initializer's malloc", bad_malloc);
    fail("a static initializer's new[]", bad_new);
    fail("a global std::vector", bad_vector);
    fail("a global std::string", bad_string);
    fail("a static initializer's new object", bad_shape);

    // main's allocations, filled by every thread, read by the master.
    std::vector<double> v(N);
    double *a = new double[N];
#pragma omp parallel for
    for (int i = 0; i < N; i++) {
        v[i] = i;
        a[i] = 2.0 * i;
    }
    long bad_v = 0, bad_a = 0;
    for (int i = 0; i < N; i++) {
        bad_v += v[i] != i;
        bad_a += a[i] != 2.0 * i;
    }
    fail("a std::vector of main", bad_v);
    fail("main's new[]", bad_a);
    delete[] a;

    // The master's, read by every thread.
    std::string s(5000, 'x');
    s += std::to_string(123456789);
    std::map<int, int> m;
    for (int i = 0; i < 1000; i++)
        m[i] = 3 * i;
    auto sp = std::make_shared<std::array<int, 1000>>();
    (*sp)[999] = 7;
    long bad_s = 0, bad_m = 0, bad_sp = 0, caught = 0;
#pragma omp parallel reduction(+ : bad_s, bad_m, bad_sp, caught)
    {
        for (size_t i = 0; i < 5000; i++)
            bad_s += s[i] != 'x';
        bad_s += s.substr(5000) != "123456789";
        for (int i = 0; i < 1000; i++)
            bad_m += m.at(i) != 3 * i;
        bad_sp += (*sp)[999] != 7;
        try {
            throw std::runtime_error("on every thread");
        } catch (const std::runtime_error &e) {
            caught += std::string(e.what()) == "on every thread";
        }
    }
    fail("main's std::string", bad_s);
    fail("main's std::map", bad_m);
    fail("main's std::make_shared", bad_sp);
    fail("an exception caught on every thread", nt - caught);
    if (fails)
        return 1;
    printf("c++ sharing: ok on %d threads\n", nt);
    return 0;
}
