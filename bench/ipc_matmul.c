/*
 * ipc_matmul — parallel matrix multiply C = A x B over dsm's port IPC.
 *
 * Node 0 owns A and B. Every other node fetches B once (one RPC whose reply
 * lands straight in its buffer), then asks node 0 for row blocks of A until
 * none are left (dynamic distribution, as seed 001 hands out Mandelbrot
 * tiles) and sends each block of C back as an out-of-line message. Node 0
 * checks C against a sequential multiply and prints the time of both.
 *   usage: dsmrun -n 4 ipc_matmul [n] [rows-per-task]
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "dsm.h"

enum { ASK_B = 1, ASK_TASK = 2 };

struct task_reply { int32_t first_row, rows; };

static int n = 1024, block = 16;
static double *A, *B, *C;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, long rc)
{
    fprintf(stderr, "ipc_matmul: node %d: %s failed (%ld)\n", dsm_rank(), what, rc);
    exit(1);
}

static void multiply_rows(const double *a, const double *b, double *c, int rows)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < n; j++)
            c[(size_t)i * n + j] = 0;
    for (int i = 0; i < rows; i++)
        for (int k = 0; k < n; k++) {
            double aik = a[(size_t)i * n + k];
            for (int j = 0; j < n; j++)
                c[(size_t)i * n + j] += aik * b[(size_t)k * n + j];
        }
}

static void *alloc_pages(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        die("mmap", -errno);
    return p;
}

/* Node 0's server: hands out B and row blocks of A, one request at a time. */
static int server_port, result_port;
static int next_row;

static void *serve(void *arg)
{
    int workers = *(int *)arg, done = 0;
    size_t rowbytes = (size_t)n * sizeof(double);
    while (done < workers) {
        struct dsm_msg m;
        int rc = dsm_msg_recv(server_port, &m, 120);
        if (rc)
            die("server receive", rc);
        int32_t ask;
        memcpy(&ask, m.data, sizeof ask);
        if (ask == ASK_B) {
            dsm_msg_reply(&m, B, (size_t)n * rowbytes);
        } else {
            struct task_reply t = {.first_row = next_row, .rows = 0};
            if (next_row < n) {
                t.rows = n - next_row < block ? n - next_row : block;
                next_row += t.rows;
            } else
                done++;
            /* Reply: the task header, then its rows of A. */
            size_t len = sizeof t + (size_t)t.rows * rowbytes;
            char *buf = malloc(len);
            memcpy(buf, &t, sizeof t);
            memcpy(buf + sizeof t, A + (size_t)t.first_row * n, (size_t)t.rows * rowbytes);
            dsm_msg_reply(&m, buf, len);
            free(buf);
        }
        dsm_msg_free(&m);
    }
    return NULL;
}

static void worker(void)
{
    dsm_port_ref srv, res;
    if (dsm_port_lookup(0, "matmul", 60, &srv) || dsm_port_lookup(0, "results", 60, &res))
        die("lookup", -1);
    size_t rowbytes = (size_t)n * sizeof(double);
    double *b = alloc_pages((size_t)n * rowbytes);
    int32_t ask = ASK_B;
    long got = dsm_msg_call(&srv, &ask, sizeof ask, b, (size_t)n * rowbytes, 120);
    if (got != (long)((size_t)n * rowbytes))
        die("fetching B", got);
    size_t cap = sizeof(struct task_reply) + (size_t)block * rowbytes;
    char *task = malloc(cap);
    if (!task)
        die("allocating the task buffer", -ENOMEM);
    double *c = alloc_pages((size_t)block * rowbytes);
    for (;;) {
        ask = ASK_TASK;
        got = dsm_msg_call(&srv, &ask, sizeof ask, task, cap, 120);
        if (got < (long)sizeof(struct task_reply))
            die("fetching a task", got);
        struct task_reply t;
        memcpy(&t, task, sizeof t);
        if (t.rows == 0)
            break;
        multiply_rows((double *)(task + sizeof t), b, c, t.rows);
        struct dsm_ool block_c = {.addr = c, .len = (size_t)t.rows * rowbytes};
        int rc = dsm_msg_send(&res, &t, sizeof t, &block_c, 1, 120, NULL);
        if (rc)
            die("sending a result", rc);
    }
    free(task);
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    if (argc > 1)
        n = atoi(argv[1]);
    if (argc > 2)
        block = atoi(argv[2]);
    if (n < 1 || n > 4096 || block < 1) {
        fprintf(stderr, "usage: ipc_matmul [n 1..4096] [rows-per-task >= 1]\n");
        return 2;
    }
    int me = dsm_rank(), nodes = dsm_nodes();
    if (nodes < 2) {
        fprintf(stderr, "ipc_matmul: run it on 2 or more nodes: dsmrun -n 4 ipc_matmul\n");
        return 2;
    }
    size_t bytes = (size_t)n * n * sizeof(double);
    if (me != 0) {
        worker();
        dsm_finish();
        return 0;
    }

    A = alloc_pages(bytes);
    B = alloc_pages(bytes);
    C = alloc_pages(bytes);
    for (size_t i = 0; i < (size_t)n * n; i++) {
        A[i] = (double)((i * 7) % 13) - 6.0;
        B[i] = (double)((i * 5) % 11) - 5.0;
    }
    server_port = dsm_port_create("matmul", 64);
    result_port = dsm_port_create("results", 64);
    int workers = nodes - 1;
    double t0 = now();
    pthread_t thread;
    pthread_create(&thread, NULL, serve, &workers);
    for (int rows = 0; rows < n;) {
        struct dsm_msg m;
        int rc = dsm_msg_recv(result_port, &m, 120);
        if (rc)
            die("receiving a result", rc);
        struct task_reply t;
        memcpy(&t, m.data, sizeof t);
        memcpy(C + (size_t)t.first_row * n, m.ool[0].addr, m.ool[0].len);
        rows += t.rows;
        dsm_msg_free(&m);
    }
    pthread_join(thread, NULL);
    double parallel = now() - t0;

    double *check = alloc_pages(bytes);
    t0 = now();
    multiply_rows(A, B, check, n);
    double sequential = now() - t0;
    double sum = 0;
    for (size_t i = 0; i < (size_t)n * n; i++) {
        if (C[i] != check[i]) {
            fprintf(stderr, "ipc_matmul: C[%zu] = %g, sequential %g: WRONG\n", i, C[i], check[i]);
            return 1;
        }
        sum += C[i];
    }
    printf("ipc_matmul: %dx%d matrix multiply on %d worker nodes, %d rows per task\n", n, n, workers, block);
    printf("ipc_matmul: result checksum %.0f, equal to the sequential multiply\n", sum);
    printf("ipc_matmul: parallel %.3f s, sequential %.3f s on one node, speedup %.2f\n",
           parallel, sequential, sequential / parallel);
    dsm_finish();
    return 0;
}
