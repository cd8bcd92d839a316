/*
 * plain.c — a program not built for dsm: no dsm_startup, no libdsm. Under
 * dsmrun each copy would run on its own, unaware of the others; dsmrun
 * must say so once and fail the job (dsmrun.c, node_ended).
 */
#include <stdio.h>

int main(void)
{
    printf("a plain program's copy\n");
    return 0;
}
