/*
 * test_copy_relocs — an SPMD program that asks for shared globals at start
 * (dsmrun --shared-globals) but cannot have them: built without -fPIC it
 * holds copies of libc's stdout and optind (copy relocations), or it links
 * libdsm statically. dsm_startup must refuse, naming the cause.
 */
#include <stdio.h>
#include <unistd.h>

#include <dsm.h>

int counter;

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    fprintf(stdout, "node %d: optind %d, counter %d\n", dsm_rank(), optind, counter);
    dsm_finish();
    return 0;
}
