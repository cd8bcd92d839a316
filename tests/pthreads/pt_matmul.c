/*
 * pt_matmul — an ordinary pthreads program: C = A x B, N x N doubles,
 * rows split among THREADS threads. Each thread's work (its first row,
 * row count and the sum of its rows of C) lies in an array of main's
 * locals that main hands to the threads, and each returns its row count
 * as its value (by return, or by pthread_exit), which pthread_join
 * collects. main checks C against its
 * own product and prints a checksum, the same whatever runs it.
 *
 *   pt_matmul THREADS [N]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct work {
    long index, first, rows, n;
    const double *a, *b;
    double *c;
    double sum;
};

static void *multiply(void *arg)
{
    struct work *w = arg;
    long n = w->n;
    w->sum = 0;
    for (long i = w->first; i < w->first + w->rows; i++)
        for (long j = 0; j < n; j++) {
            double s = 0;
            for (long k = 0; k < n; k++)
                s += w->a[i * n + k] * w->b[k * n + j];
            w->c[i * n + j] = s;
            w->sum += s;
        }
    if (w->index % 2)
        pthread_exit((void *)w->rows); /* the same value, the other way out */
    return (void *)w->rows;
}

int main(int argc, char **argv)
{
    long threads = argc > 1 ? atol(argv[1]) : 4;
    long n = argc > 2 ? atol(argv[2]) : 160;
    if (threads < 1 || threads > 64 || n < threads)
        return 2;
    double *a = malloc(n * n * sizeof *a), *b = malloc(n * n * sizeof *b);
    double *c = malloc(n * n * sizeof *c);
    for (long i = 0; i < n * n; i++) {
        a[i] = (double)(i % 17) - 8;
        b[i] = (double)(i % 13) * 0.5 - 3;
    }
    struct work work[64]; /* main's locals, handed to every thread */
    pthread_t th[64];
    for (long t = 0; t < threads; t++) {
        work[t] = (struct work){.index = t, .first = n * t / threads, .rows = n * (t + 1) / threads - n * t / threads,
                                .n = n, .a = a, .b = b, .c = c};
        if (pthread_create(&th[t], NULL, multiply, &work[t]))
            return 3;
    }
    long rows = 0;
    double sum = 0;
    for (long t = 0; t < threads; t++) {
        void *value;
        pthread_join(th[t], &value);
        rows += (long)value;
        sum += work[t].sum;
    }
    long wrong = 0;
    double check = 0;
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++) {
            double s = 0;
            for (long k = 0; k < n; k++)
                s += a[i * n + k] * b[k * n + j];
            wrong += s != c[i * n + j];
            check += s;
        }
    printf("matmul %ld x %ld by %ld threads: %ld rows returned, checksum %.1f, sums %.1f, %ld wrong: %s\n",
           n, n, threads, rows, check, sum, wrong, wrong || rows != n || sum != check ? "WRONG" : "ok");
    free(a);
    free(b);
    free(c);
    return wrong != 0;
}
