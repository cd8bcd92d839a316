/*
 * linkage.h — how the program was linked, for the parts of dsm that load a
 * library at run time (UCX, src/net/ucx.c; PMIx, src/runtime/boot_pmix.c).
 *
 * A fully static program (cc -static ... libdsm.a) has no dynamic linker:
 * glibc's static dlopen then loads a second C library beside the program's
 * own, and UCX loaded so crashed in its first call (a null pointer in
 * node 0). Those paths refuse a static program in one line instead.
 */
#ifndef DSM_BASE_LINKAGE_H
#define DSM_BASE_LINKAGE_H
#include <stdbool.h>

/* True when the executable has no program interpreter (PT_INTERP): linked
 * with -static or -static-pie. A dynamic program run as `ld.so prog` still
 * names its interpreter, so it is not taken for a static one. */
bool linkage_program_is_static(void);

#endif
