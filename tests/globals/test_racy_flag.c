/*
 * test_racy_flag — a flag published with a plain store and polled with
 * plain loads, no lock or barrier (as some SPLASH codes publish pixels or
 * queue lengths), works under --protocol sc with shared globals: the
 * master fills a global array, then raises a global flag; the workers spin
 * on the flag and must then see the whole array. Release consistency
 * (every other protocol) does not promise this; sc does.
 */
#include <stdio.h>

#include <dsm.h>

#define WORDS 4096

long data[WORDS];
volatile long flag;
long seen_wrong;

static void reader(void *arg)
{
    (void)arg;
    while (!flag)
        ;
    long wrong = 0;
    for (long i = 0; i < WORDS; i++)
        wrong += data[i] != i * i + flag;
    dsm_lock(1);
    seen_wrong += wrong;
    dsm_unlock(1);
}

int main(void)
{
    dsm_create(reader, NULL);
    for (long i = 0; i < WORDS; i++)
        data[i] = i * i + 5;
    flag = 5;
    dsm_wait_for_end();
    printf("racy flag: %ld wrong words seen on %d nodes: %s\n", seen_wrong, dsm_nodes(),
           seen_wrong ? "WRONG" : "ok");
    return seen_wrong != 0;
}
