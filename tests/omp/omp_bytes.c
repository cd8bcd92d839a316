/*
 * omp_bytes — every byte a race-free OpenMP program writes survives
 * (issue 54). In C every char, bool and struct member is a memory location
 * of its own; threads of different nodes writing neighbouring bytes of one
 * word race with nobody. Word diffs lost one of the writes (a bool array
 * set by a parallel for: the element where two nodes' blocks met inside a
 * word stayed false). Each part reads the array first, as real programs
 * do, so that every node holds a copy before the writes:
 *   - a bool array set by a block-scheduled loop, sizes around a word;
 *   - a char array written with schedule(static, 1): every byte's
 *     neighbours are other threads';
 *   - shorts with schedule(static, 3), and unaligned 4- and 8-byte values
 *     packed in a byte buffer, each thread its own;
 *   - struct members: the char of one struct and the short beside it
 *     written by different threads;
 *   - a breadth-first search on a ring-and-chords graph whose frontier and
 *     visited sets are bool arrays, against its sequential answer.
 * Prints "threads N" and "PASSED: 0 failed" when every check held.
 */
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed;

static void check(int ok, const char *what, long detail)
{
    if (!ok) {
        printf("FAILED: %s (%ld)\n", what, detail);
        failed++;
    }
}

static void bool_blocks(int n)
{
    bool *f = calloc((size_t)n, 1);
    long s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < n; i++)
        s += f[i];
#pragma omp parallel for
    for (int i = 0; i < n; i++)
        f[i] = true;
    long set = 0;
    for (int i = 0; i < n; i++)
        set += f[i];
    check(s == 0 && set == n, "bool array set by a parallel for", n - set);
    free(f);
}

static void chars_interleaved(int n, int rounds)
{
    unsigned char *c = calloc((size_t)n, 1);
    for (int r = 1; r <= rounds; r++) {
        long s = 0;
#pragma omp parallel for reduction(+ : s)
        for (int i = 0; i < n; i++)
            s += c[i];
#pragma omp parallel for schedule(static, 1)
        for (int i = 0; i < n; i++)
            c[i] = (unsigned char)(i * 7 + r);
        long bad = 0;
        for (int i = 0; i < n; i++)
            bad += c[i] != (unsigned char)(i * 7 + r);
        check(bad == 0, "chars written with schedule(static, 1)", bad);
    }
    free(c);
}

static void shorts_and_unaligned(int n)
{
    short *h = calloc((size_t)n, sizeof *h);
    unsigned char *buf = calloc((size_t)n * 13 + 16, 1);
    long s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < n; i++)
        s += h[i] + buf[i];
#pragma omp parallel for schedule(static, 3)
    for (int i = 0; i < n; i++) {
        h[i] = (short)(i * 3 + 1);
        /* record i: 4 bytes at 13i + 1 and 8 bytes at 13i + 5, unaligned */
        uint32_t a = (uint32_t)i * 2654435761u;
        uint64_t b = (uint64_t)i * 0x9E3779B97F4A7C15ull;
        memcpy(buf + (size_t)i * 13 + 1, &a, 4);
        memcpy(buf + (size_t)i * 13 + 5, &b, 8);
    }
    long bad = 0;
    for (int i = 0; i < n; i++) {
        uint32_t a;
        uint64_t b;
        memcpy(&a, buf + (size_t)i * 13 + 1, 4);
        memcpy(&b, buf + (size_t)i * 13 + 5, 8);
        bad += h[i] != (short)(i * 3 + 1) || a != (uint32_t)i * 2654435761u ||
               b != (uint64_t)i * 0x9E3779B97F4A7C15ull;
    }
    check(bad == 0, "shorts and unaligned 4- and 8-byte values", bad);
    free(h);
    free(buf);
}

struct member { char tag; short count; char flag; };

static void struct_members(int n)
{
    struct member *m = calloc((size_t)n, sizeof *m);
    long s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < n; i++)
        s += m[i].tag;
    /* tags by one schedule, counts and flags by another: one struct's
     * members go to different threads */
#pragma omp parallel
    {
#pragma omp for schedule(static, 1) nowait
        for (int i = 0; i < n; i++)
            m[i].tag = (char)('a' + i % 26);
#pragma omp for schedule(static, 2)
        for (int i = n - 1; i >= 0; i--) {
            m[i].count = (short)i;
            m[i].flag = (char)(i & 1);
        }
    }
    long bad = 0;
    for (int i = 0; i < n; i++)
        bad += m[i].tag != (char)('a' + i % 26) || m[i].count != (short)i || m[i].flag != (i & 1);
    check(bad == 0, "struct members written by different threads", bad);
    free(m);
}

/* Vertex v's edges go to v - 1, v + 1 and v + 37 (mod n); its in-edges
 * come from v + 1, v - 1 and v - 37. */
static int neighbour(int v, int k, int n)
{
    int d = k == 0 ? n - 1 : k == 1 ? 1 : 37;
    return (v + d) % n;
}

static int in_neighbour(int v, int k, int n)
{
    int d = k == 0 ? 1 : k == 1 ? n - 1 : n - 37;
    return (v + d) % n;
}

static void bfs(int n)
{
    bool *frontier = calloc((size_t)n, 1), *next = calloc((size_t)n, 1);
    bool *visited = calloc((size_t)n, 1);
    int *depth = malloc((size_t)n * sizeof *depth), *want = malloc((size_t)n * sizeof *want);
    /* the sequential answer */
    int *queue = malloc((size_t)n * sizeof *queue), head = 0, tail = 0;
    for (int v = 0; v < n; v++)
        want[v] = -1;
    want[0] = 0;
    queue[tail++] = 0;
    while (head < tail) {
        int v = queue[head++];
        for (int k = 0; k < 3; k++) {
            int u = neighbour(v, k, n);
            if (want[u] < 0) {
                want[u] = want[v] + 1;
                queue[tail++] = u;
            }
        }
    }
    for (int v = 0; v < n; v++)
        depth[v] = -1;
    frontier[0] = visited[0] = true;
    depth[0] = 0;
    for (int level = 0;; level++) {
        int more = 0;
        /* pull: each vertex looks at where its in-edges come from, and
         * writes only itself */
#pragma omp parallel for reduction(| : more)
        for (int v = 0; v < n; v++) {
            next[v] = false;
            if (visited[v])
                continue;
            for (int k = 0; k < 3; k++)
                if (frontier[in_neighbour(v, k, n)]) {
                    next[v] = true;
                    more = 1;
                    break;
                }
        }
#pragma omp parallel for
        for (int v = 0; v < n; v++) {
            frontier[v] = next[v];
            if (next[v]) {
                visited[v] = true;
                depth[v] = level + 1;
            }
        }
        if (!more)
            break;
    }
    long bad = 0;
    for (int v = 0; v < n; v++)
        bad += depth[v] != want[v];
    check(bad == 0, "breadth-first search over bool frontier and visited sets", bad);
    free(frontier);
    free(next);
    free(visited);
    free(depth);
    free(want);
    free(queue);
}

int main(void)
{
    int threads = 0;
#pragma omp parallel
#pragma omp master
    threads = omp_get_num_threads();
    printf("threads %d\n", threads);
    static const int sizes[] = {1002, 1001, 1003, 4099, 100000};
    for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        bool_blocks(sizes[k]);
    chars_interleaved(20000, 3);
    shorts_and_unaligned(5000);
    struct_members(3001);
    bfs(5003);
    printf("%s: %d failed\n", failed ? "FAILED" : "PASSED", failed);
    return failed != 0;
}
