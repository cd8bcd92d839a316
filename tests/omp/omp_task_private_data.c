/*
 * omp_task_private_data.c — a task's private variables reached by its
 * children through shared pointers (src/omp/task.c, may_offer).
 *
 * BOTS floorplan's shape: a task copies the board it was given into a
 * `private` variable of its own (clang keeps that in the task's data
 * block, as it keeps an untied task's locals), changes it, and hands its
 * children a pointer to it as a shared variable. Once the cut-off by time
 * has seen a kind of task finish quickly it keeps the next ones home,
 * their blocks in the node's own memory; a child of such a task that
 * another node took would read that board where the other node has
 * nothing (floorplan crashed so on 2 nodes, "outside the shared region").
 *
 * Here the master first makes 64 quick tasks of one kind (the cut-off
 * learns it is quick), then, each round, one more of that kind, which
 * makes 8 slower children (5 ms each: a kind worth moving) that read its
 * private board through a shared pointer. Each child's sum of the board
 * is checked, and a search of the same shape (a floorplan in miniature)
 * is checked against its serial answer.
 * Prints "PASSED: 0 failed".
 */
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CELLS 256
#define CHILDREN 8
#define WIDTH 3
#define DEPTH 6

typedef unsigned char board_t[CELLS];

static board_t start; /* a global: shared */
static int failed;

static unsigned long board_sum(const unsigned char *b)
{
    unsigned long s = 0;
    for (int i = 0; i < CELLS; i++)
        s = s * 31 + b[i];
    return s;
}

/* A task of one kind: quick (`mark` < 0), or the one that hands its board on. */
static void quick_or_parent(int mark)
{
    board_t mine;
#pragma omp task private(mine) firstprivate(mark)
    {
        memcpy(mine, start, CELLS);
        if (mark >= 0) {
            mine[mark] ^= 0x5a;
            unsigned char *board = mine;
            unsigned long want = board_sum(mine), got[CHILDREN];
            for (int c = 0; c < CHILDREN; c++) {
#pragma omp task shared(board, got) firstprivate(c)
                {
                    usleep(5000);
                    got[c] = board_sum(board);
                }
            }
#pragma omp taskwait
            for (int c = 0; c < CHILDREN; c++)
                if (got[c] != want) {
                    printf("FAILED: child %d read %lu, not %lu\n", c, got[c], want);
#pragma omp atomic
                    failed++;
                }
        }
    }
}

static unsigned long search_serial(const unsigned char *given, int level)
{
    if (level == DEPTH)
        return board_sum(given);
    unsigned long sum = 0;
    for (int i = 0; i < WIDTH; i++) {
        board_t mine;
        memcpy(mine, given, CELLS);
        mine[(level * WIDTH + i) % CELLS] += (unsigned char)(level + i + 1);
        sum += search_serial(mine, level + 1);
    }
    return sum;
}

static unsigned long search(const unsigned char *given, int level)
{
    if (level == DEPTH)
        return board_sum(given);
    unsigned long sum = 0;
    for (int i = 0; i < WIDTH; i++) {
        board_t mine;
#pragma omp task untied private(mine) firstprivate(i, level) shared(given, sum)
        {
            memcpy(mine, given, CELLS);
            mine[(level * WIDTH + i) % CELLS] += (unsigned char)(level + i + 1);
            unsigned long s = search(mine, level + 1);
#pragma omp atomic
            sum += s;
        }
    }
#pragma omp taskwait
    return sum;
}

int main(void)
{
    for (int i = 0; i < CELLS; i++)
        start[i] = (unsigned char)(i * 7);
    unsigned long want = search_serial(start, 0), got = 0;
#pragma omp parallel
#pragma omp single
    {
        for (int i = 0; i < 64; i++)
            quick_or_parent(-1);
#pragma omp taskwait
        for (int round = 0; round < 4; round++) {
            quick_or_parent(round);
#pragma omp taskwait
        }
        got = search(start, 0);
    }
    if (got != want) {
        printf("FAILED: the search's checksum is %lu, not %lu\n", got, want);
        failed++;
    }
    printf("%s: %d failed\n", failed ? "FAILED" : "PASSED", failed);
    return failed != 0;
}
