/* libheap: the library's own allocator (src/base/libheap.c) — blocks of
 * every size hold what is written to them without overlapping, calloc
 * zeroes reused blocks, realloc keeps contents, alignments are kept, a
 * block the C library allocated is freed by it, the sort sorts and is
 * stable, a signal handler that allocates and frees while the
 * interrupted code is inside the allocator neither deadlocks nor corrupts
 * (the C library's malloc would deadlock there), and the blocks a thread
 * keeps for itself go back to the lists when it ends. */
#define DSM_LIBHEAP_ITSELF /* call libheap_* by name; malloc is the C library's */
#include "base/libheap.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/time.h>

#include "check.h"

static const size_t sizes[] = {0, 1, 15, 16, 17, 100, 128, 129, 160, 161, 1000, 4095, 4096,
                               8192, 65536, 131072, 131073, 1 << 20};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static void sizes_hold_their_bytes(void)
{
    unsigned char *p[NSIZES][4];
    for (size_t k = 0; k < 4; k++)
        for (size_t i = 0; i < NSIZES; i++) {
            p[i][k] = libheap_malloc(sizes[i]);
            CHECK(p[i][k] != NULL);
            CHECK(((uintptr_t)p[i][k] & 15) == 0);
            memset(p[i][k], (int)(i * 4 + k + 1), sizes[i]);
        }
    for (size_t k = 0; k < 4; k++)
        for (size_t i = 0; i < NSIZES; i++) {
            int whole = 1;
            for (size_t b = 0; b < sizes[i]; b++)
                whole &= p[i][k][b] == (unsigned char)(i * 4 + k + 1);
            CHECK(whole);
            libheap_free(p[i][k]);
        }
    libheap_free(NULL);
}

static void calloc_zeroes_reused_blocks(void)
{
    for (size_t i = 0; i < NSIZES; i++) {
        unsigned char *a = libheap_malloc(sizes[i]);
        memset(a, 0xab, sizes[i]);
        libheap_free(a);
        unsigned char *z = libheap_calloc(1, sizes[i]);
        int zero = 1;
        for (size_t b = 0; b < sizes[i]; b++)
            zero &= z[b] == 0;
        CHECK(zero);
        libheap_free(z);
    }
    CHECK(libheap_calloc(SIZE_MAX / 2, 4) == NULL);
}

static void realloc_keeps_contents(void)
{
    unsigned char *p = libheap_realloc(NULL, 10);
    for (int i = 0; i < 10; i++)
        p[i] = (unsigned char)i;
    size_t len = 10;
    for (size_t n = 11; n < 400000; n = n * 3 / 2 + 1) { /* grows through every kind */
        p = libheap_realloc(p, n);
        int kept = 1;
        for (size_t i = 0; i < len; i++)
            kept &= p[i] == (unsigned char)i;
        CHECK(kept);
        for (size_t i = len; i < n; i++)
            p[i] = (unsigned char)i;
        len = n;
    }
    for (size_t n = len; n > 5; n /= 3) { /* and shrinks */
        p = libheap_realloc(p, n);
        int kept = 1;
        for (size_t i = 0; i < n; i++)
            kept &= p[i] == (unsigned char)i;
        CHECK(kept);
    }
    libheap_free(p);
    char *s = libheap_strdup("a string of the library's");
    CHECK(strcmp(s, "a string of the library's") == 0);
    libheap_free(s);
}

static void alignments_kept(void)
{
    size_t aligns[] = {8, 16, 32, 64, 256, 4096, 8192, 65536};
    for (size_t a = 0; a < sizeof aligns / sizeof aligns[0]; a++)
        for (size_t i = 0; i < NSIZES; i++) {
            void *p = libheap_aligned_alloc(aligns[a], sizes[i]);
            CHECK(p && (uintptr_t)p % aligns[a] == 0);
            memset(p, 0x5a, sizes[i]);
            void *q = NULL;
            CHECK(libheap_posix_memalign(&q, aligns[a], sizes[i]) == 0);
            CHECK(q && (uintptr_t)q % aligns[a] == 0);
            memset(q, 0xa5, sizes[i]);
            q = libheap_realloc(q, sizes[i] + 100); /* realloc of an aligned block */
            CHECK(q != NULL);
            libheap_free(p);
            libheap_free(q);
        }
    void *p;
    CHECK(libheap_posix_memalign(&p, 24, 10) != 0);
}

static void c_library_blocks_go_back_to_it(void)
{
    for (size_t i = 0; i < NSIZES; i++) {
        char *p = malloc(sizes[i] + 1);
        memset(p, 'x', sizes[i] + 1);
        p = libheap_realloc(p, sizes[i] + 7);
        CHECK(p && p[sizes[i]] == 'x');
        libheap_free(p);
        libheap_free(malloc(sizes[i] + 1));
    }
}

struct pair {
    int key, order;
};

static int by_key(const void *a, const void *b)
{
    int x = ((const struct pair *)a)->key, y = ((const struct pair *)b)->key;
    return (x > y) - (x < y);
}

static void sort_sorts_stably(void)
{
    unsigned seed = 12345;
    for (size_t n = 0; n < 3000; n = n * 2 + 1) {
        struct pair *v = libheap_malloc((n + 1) * sizeof *v);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245 + 12345;
            v[i] = (struct pair){(int)(seed >> 16) % 50, (int)i};
        }
        libheap_qsort(v, n, sizeof *v, by_key);
        int sorted = 1;
        for (size_t i = 1; i < n; i++)
            sorted &= v[i - 1].key < v[i].key ||
                      (v[i - 1].key == v[i].key && v[i - 1].order < v[i].order);
        CHECK(sorted);
        libheap_free(v);
    }
}

/* The handler allocates and frees every size, and frees blocks the
 * interrupted loop allocated, wherever the loop was: inside a list's lock
 * too, and between two steps of draining what earlier handlers freed
 * there. A signal every 100 us, 5,000 of them: at every 500 us, 1,000
 * times, the drain's race (libheap.c, drain_deferred) crashed a run only
 * rarely (once in CI; never in 600 runs here); at this rate in most runs
 * before the fix (12 of 20 here). The count, not the time, ends it.
 *
 * Each signal is timed from the one before, as a periodic timer's are:
 * a handler slower than 100 us (mapping and unmapping while the loop is
 * inside) is followed by the next at once, and the frees they defer make
 * the drain long enough to be interrupted. But at most IN_A_ROW signals
 * come without a round of the loop between them: then the loop arms the
 * next. With a periodic timer the handler, slower than its period on a
 * loaded machine, was entered again on each return, and the loop never
 * reached its exit test (754,863 signals handled for the 5,000 planned,
 * at load 20); now it makes a round every IN_A_ROW signals, whatever the
 * load. */
#define SIGNALS  5000
#define IN_A_ROW 32
#define RING 64
static void *volatile ring[RING];
static volatile sig_atomic_t handled;
static volatile unsigned long rounds; /* the loop's */
static volatile sig_atomic_t armed;   /* the next signal is on its way */

static void arm_next_signal(void)
{
    struct itimerval once = {{0, 0}, {0, 100}};
    armed = 1;
    setitimer(ITIMER_REAL, &once, NULL);
}

static void on_alarm(int sig)
{
    (void)sig;
    static unsigned long rounds_seen;
    static unsigned in_a_row;
    if (rounds != rounds_seen) {
        rounds_seen = rounds;
        in_a_row = 0;
    }
    armed = 0;
    if (++in_a_row < IN_A_ROW && handled + 1 < SIGNALS)
        arm_next_signal();
    for (size_t i = 0; i < NSIZES; i++) {
        size_t n = sizes[i] > 4096 ? 8 : sizes[i]; /* the largest: touch a little */
        unsigned char *p = libheap_malloc(sizes[i]);
        if (!p)
            abort();
        memset(p, 0x11, n);
        libheap_free(p);
    }
    void *mine = ring[handled % RING];
    ring[handled % RING] = NULL;
    libheap_free(mine);
    handled++;
}

static void handler_inside_the_allocator(void)
{
    struct sigaction sa = {.sa_handler = on_alarm};
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    unsigned seed = 7;
    for (long round = 0; handled < SIGNALS && round < 200000000; round++) {
        rounds++;
        if (!armed)
            arm_next_signal();
        seed = seed * 1103515245 + 12345;
        size_t n = sizes[(seed >> 8) % 12]; /* listed sizes */
        unsigned char *p = libheap_malloc(n);
        memset(p, 0x22, n);
        int whole = 1;
        for (size_t b = 0; b < n; b++)
            whole &= p[b] == 0x22;
        if (!whole) {
            CHECK(whole);
            break;
        }
        unsigned slot = (seed >> 4) % RING;
        if (!ring[slot])
            ring[slot] = libheap_malloc(n + 1);
        libheap_free(p);
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    CHECK(handled >= SIGNALS);
    for (unsigned i = 0; i < RING; i++)
        libheap_free(ring[i]);
}

/* A thread frees 8 blocks of a size no other test uses into its own
 * cache and ends: the next 8 of that size taken here are those. */
#define CACHED 8
#define CACHED_SIZE 200
static void *free_into_own_cache(void *arg)
{
    void **blocks = arg;
    for (int i = 0; i < CACHED; i++)
        blocks[i] = libheap_malloc(CACHED_SIZE);
    for (int i = 0; i < CACHED; i++)
        libheap_free(blocks[i]);
    return NULL;
}

static void ended_threads_blocks_reused(void)
{
    void *theirs[CACHED], *mine[CACHED];
    pthread_t t;
    CHECK(pthread_create(&t, NULL, free_into_own_cache, theirs) == 0);
    pthread_join(t, NULL);
    int reused = 0;
    for (int i = 0; i < CACHED; i++) {
        mine[i] = libheap_malloc(CACHED_SIZE);
        for (int j = 0; j < CACHED; j++)
            reused += mine[i] == theirs[j];
    }
    CHECK(reused == CACHED);
    for (int i = 0; i < CACHED; i++)
        libheap_free(mine[i]);
}

int main(void)
{
    ended_threads_blocks_reused();
    sizes_hold_their_bytes();
    calloc_zeroes_reused_blocks();
    realloc_keeps_contents();
    alignments_kept();
    c_library_blocks_go_back_to_it();
    sort_sorts_stably();
    handler_inside_the_allocator();
    return check_report("test_libheap");
}
