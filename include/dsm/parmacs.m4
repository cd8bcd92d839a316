divert(-1)
# dsm/parmacs.m4 — the PARMACS macros (SPLASH-2 and SPLASH-3) over dsm.
#
#   dsmcc -O2 -o fft fft.C && dsmrun -n 4 ./fft -p4
#
# dsmcc expands .C/.H sources through this file (m4 -s) and builds the
# program with shared globals and master-only start (dsm.h, dsm_main): main
# runs once, on the master; each process the program creates runs on a node
# of its own, so the program's process count must be the job's node count
# (dsmrun -n P), or the job ends with both numbers and the fix.
#
#   MAIN_ENV, EXTERN_ENV      declarations (dsm/parmacs.h)
#   MAIN_INITENV, MAIN_END    nothing to start (dsm_main did); exit(0)
#   CREATE(fn)                fn on the next node (SPLASH-2: one per call)
#   CREATE(fn, n)             fn on the n-1 other nodes, then here (SPLASH-3)
#   WAIT_FOR_END(...)         until every created process has returned
#   G_MALLOC, NU_MALLOC, G_FREE   dsm_malloc, dsm_free (any node, any time);
#       G_MALLOC and NU_MALLOC end in `;' as SPLASH's own macro files do (LU
#       and Cholesky rely on it), so `x = G_MALLOC(n);' is `x = ...;;'
#       (harmless); G_MALLOC_F and NU_MALLOC_F are the bare expression
#   LOCKDEC/LOCKINIT/LOCK/UNLOCK   dsm locks: a lock "variable" is an int id
#   ALOCKDEC(a, n)            an array of n lock ids, a[i] a lock like LOCKDEC's;
#       ALOCKINIT(a, n), ALOCK(a, i), AULOCK(a, i), AGETL(a, i) (the lock itself,
#       for CONDVARWAIT)
#   BARDEC/BARINIT/BARRIER(b, n)   dsm_barrier (n must be the node count)
#   PAUSEDEC/PAUSEINIT/SETPAUSE/CLEARPAUSE/WAITPAUSE/PAUSE/EVENT   a flag under
#       a lock and a condition variable (PAUSE waits for it and clears it)
#   CONDVARDEC/CONDVARINIT/CONDVARWAIT(cv, lock)/CONDVARSIGNAL/CONDVARBCAST
#   GSDEC/GSINIT/GETSUB(gs, s, max, P)   self-scheduled subscripts 0..max, then -1
#   MEMORY_FENCE, FENCE, STORE_FENCE, LOAD_FENCE, FULL_FENCE, RELEASE_FENCE,
#   ACQUIRE_FENCE             processor fences: they order this node's accesses
#       only; a program that publishes through racy flags needs dsmrun
#       --protocol sc
#   SPLASH3_ROI_BEGIN, SPLASH3_ROI_END   nothing (SPLASH-3's own file's choice)
#   PAGE_SIZE (from MAIN_ENV, EXTERN_ENV)   4096, as SPLASH-3 defines it (the
#       programs that define it again define the same); not the coherence unit
#       (dsm_page_size())
#   GET_PID(p)                this process's number: its node
#   CLOCK(t)                  microseconds, unsigned long
#   AUG_ON, AUG_OFF           nothing
#
# Lock, pause and condition "variables" hold dsm ids (ints): declare them in
# shared memory (G_MALLOC'd, or globals) like the data they protect.

# MAIN_ENV includes <stdio.h> and <stdlib.h>, as SPLASH-3's own macro file
# does: SPLASH-2 programs that call atof or malloc without declaring them
# (Ocean) would otherwise get int-returning implicit declarations, silently
# wrong on 64 bits; the few that declare calloc or srandom K&R style
# (SPLASH-2 Volrend, Water-spatial) stop at compile time instead.
define(MAIN_ENV, `
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <dsm/parmacs.h>
#define PAGE_SIZE 4096
')
define(EXTERN_ENV, `MAIN_ENV')
define(MAIN_INITENV, `{dsm_parmacs_init();}')
define(MAIN_END, `{exit(0);}')

define(CREATE, `ifelse(`$2', `',
  `dsm_parmacs_create((void (*)(void *))($1));',
  `dsm_parmacs_create_all((void (*)(void *))($1), (int)($2));')')
define(WAIT_FOR_END, `dsm_parmacs_wait_for_end();')

define(G_MALLOC, `dsm_malloc($1);')
define(NU_MALLOC, `dsm_malloc($1);')
define(G_MALLOC_F, `dsm_malloc($1)')
define(NU_MALLOC_F, `dsm_malloc($1)')
define(G_FREE, `dsm_free($1)')

define(LOCKDEC, `int $1;')
define(LOCKINIT, `{($1) = dsm_parmacs_ids(1);}')
define(LOCK, `dsm_lock($1);')
define(UNLOCK, `dsm_unlock($1);')
define(ALOCKDEC, `int $1[$2];')
define(ALOCKINIT, `{int alock_first_ = dsm_parmacs_ids($2); for (int alock_i_ = 0; alock_i_ < ($2); alock_i_++) ($1)[alock_i_] = alock_first_ + alock_i_;}')
define(ALOCK, `dsm_lock(($1)[$2]);')
define(AULOCK, `dsm_unlock(($1)[$2]);')
define(AGETL, `(($1)[$2])')

define(BARDEC, `int $1;')
define(BARINIT, `{($1) = 0;}')
# The empty asm after the call keeps a barrier that ends a function from
# being a tail call: its return address, the sharing profile's site of the
# barrier (docs/profile.md), stays in the function that calls BARRIER
# (Barnes's maketree ends in one). It emits no instruction.
define(BARRIER, `{dsm_parmacs_barrier((int)($2)); __asm__ __volatile__("");}')

define(PAUSEDEC, `struct { int lock, cond, flag; } $1;')
define(PAUSEINIT, `{($1).lock = dsm_parmacs_ids(1); ($1).cond = dsm_parmacs_ids(1); ($1).flag = 0;}')
define(SETPAUSE, `{dsm_lock(($1).lock); ($1).flag = 1; dsm_cond_broadcast(($1).cond); dsm_unlock(($1).lock);}')
define(CLEARPAUSE, `{dsm_lock(($1).lock); ($1).flag = 0; dsm_unlock(($1).lock);}')
define(WAITPAUSE, `{dsm_lock(($1).lock); while (!($1).flag) dsm_cond_wait(($1).cond, ($1).lock); dsm_unlock(($1).lock);}')
define(PAUSE, `{dsm_lock(($1).lock); while (!($1).flag) dsm_cond_wait(($1).cond, ($1).lock); ($1).flag = 0; dsm_unlock(($1).lock);}')
define(EVENT, `')

define(CONDVARDEC, `int $1;')
define(CONDVARINIT, `{($1) = dsm_parmacs_ids(1);}')
define(CONDVARWAIT, `dsm_cond_wait($1, $2);')
define(CONDVARSIGNAL, `dsm_cond_signal($1);')
define(CONDVARBCAST, `dsm_cond_broadcast($1);')

define(GSDEC, `struct { int lock; long sub; } $1;')
define(GSINIT, `{($1).lock = dsm_parmacs_ids(1); ($1).sub = 0;}')
define(GETSUB, `{dsm_lock(($1).lock); if (($1).sub <= ($3)) ($2) = ($1).sub++; else { ($2) = -1; ($1).sub = 0; } dsm_unlock(($1).lock);}')

define(MEMORY_FENCE, `__sync_synchronize();')
define(FENCE, `__sync_synchronize();')
define(FULL_FENCE, `__sync_synchronize();')
define(STORE_FENCE, `__sync_synchronize();')
define(LOAD_FENCE, `__sync_synchronize();')
define(RELEASE_FENCE, `__atomic_thread_fence(__ATOMIC_RELEASE);')
define(ACQUIRE_FENCE, `__atomic_thread_fence(__ATOMIC_ACQUIRE);')

define(SPLASH3_ROI_BEGIN, `')
define(SPLASH3_ROI_END, `')

define(GET_PID, `($1) = dsm_rank();')
define(CLOCK, `{struct timeval clock_tv_; gettimeofday(&clock_tv_, NULL); ($1) = (unsigned long)(clock_tv_.tv_usec + clock_tv_.tv_sec * 1000000);}')
define(AUG_ON, `')
define(AUG_OFF, `')

# m4's own words that C programs use as names (SPLASH's makefiles run m4
# -Ulen -Uindex for the same reason). `include' stays: SPLASH Radiosity's
# sources include their headers with it, and C's #include is an m4 comment.
undefine(`len')undefine(`index')undefine(`substr')undefine(`format')undefine(`eval')
undefine(`incr')undefine(`decr')undefine(`shift')undefine(`translit')
undefine(`regexp')undefine(`patsubst')undefine(`unix')undefine(`__unix__')undefine(`__gnu__')
divert(0)dnl
