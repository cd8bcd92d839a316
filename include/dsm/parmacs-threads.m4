divert(-1)
# dsm/parmacs-threads.m4 — the PARMACS macros on POSIX threads in one
# process: the hardware shared-memory baseline for a program built with
# dsm/parmacs.m4 (dsmcc --threads uses it). Same macros, same meaning;
# CREATE starts a thread, GET_PID is the creation order (master 0).

define(MAIN_ENV, `
#define PARMACS_THREADS_MAIN
#include <dsm/parmacs-threads.h>
#define PAGE_SIZE 4096
')
define(EXTERN_ENV, `
#include <dsm/parmacs-threads.h>
#define PAGE_SIZE 4096
')
define(MAIN_INITENV, `{;}')
define(MAIN_END, `{exit(0);}')

define(CREATE, `ifelse(`$2', `',
  `parmacs_create((void (*)(void))($1));',
  `parmacs_create_all((void (*)(void))($1), (int)($2));')')
define(WAIT_FOR_END, `parmacs_wait_for_end();')

define(G_MALLOC, `calloc(1, $1);')
define(NU_MALLOC, `calloc(1, $1);')
define(G_MALLOC_F, `calloc(1, $1)')
define(NU_MALLOC_F, `calloc(1, $1)')
define(G_FREE, `free($1)')

define(LOCKDEC, `pthread_mutex_t $1;')
define(LOCKINIT, `pthread_mutex_init(&($1), NULL);')
define(LOCK, `pthread_mutex_lock(&($1));')
define(UNLOCK, `pthread_mutex_unlock(&($1));')
define(ALOCKDEC, `pthread_mutex_t $1[$2];')
define(ALOCKINIT, `{for (int alock_i_ = 0; alock_i_ < ($2); alock_i_++) pthread_mutex_init(&($1)[alock_i_], NULL);}')
define(ALOCK, `pthread_mutex_lock(&($1)[$2]);')
define(AULOCK, `pthread_mutex_unlock(&($1)[$2]);')
define(AGETL, `(($1)[$2])')

define(BARDEC, `struct parmacs_barrier $1;')
define(BARINIT, `parmacs_barrier_init(&($1));')
define(BARRIER, `parmacs_barrier(&($1), (unsigned)($2));')

define(PAUSEDEC, `struct parmacs_pause $1;')
define(PAUSEINIT, `{pthread_mutex_init(&($1).m, NULL); pthread_cond_init(&($1).c, NULL); ($1).flag = 0;}')
define(SETPAUSE, `{pthread_mutex_lock(&($1).m); ($1).flag = 1; pthread_cond_broadcast(&($1).c); pthread_mutex_unlock(&($1).m);}')
define(CLEARPAUSE, `{pthread_mutex_lock(&($1).m); ($1).flag = 0; pthread_mutex_unlock(&($1).m);}')
define(WAITPAUSE, `{pthread_mutex_lock(&($1).m); while (!($1).flag) pthread_cond_wait(&($1).c, &($1).m); pthread_mutex_unlock(&($1).m);}')
define(PAUSE, `{pthread_mutex_lock(&($1).m); while (!($1).flag) pthread_cond_wait(&($1).c, &($1).m); ($1).flag = 0; pthread_mutex_unlock(&($1).m);}')
define(EVENT, `')

define(CONDVARDEC, `pthread_cond_t $1;')
define(CONDVARINIT, `pthread_cond_init(&($1), NULL);')
define(CONDVARWAIT, `pthread_cond_wait(&($1), &($2));')
define(CONDVARSIGNAL, `pthread_cond_signal(&($1));')
define(CONDVARBCAST, `pthread_cond_broadcast(&($1));')

define(GSDEC, `struct parmacs_gs $1;')
define(GSINIT, `{pthread_mutex_init(&($1).m, NULL); ($1).sub = 0;}')
define(GETSUB, `{pthread_mutex_lock(&($1).m); if (($1).sub <= ($3)) ($2) = ($1).sub++; else { ($2) = -1; ($1).sub = 0; } pthread_mutex_unlock(&($1).m);}')

define(MEMORY_FENCE, `__sync_synchronize();')
define(FENCE, `__sync_synchronize();')
define(FULL_FENCE, `__sync_synchronize();')
define(STORE_FENCE, `__sync_synchronize();')
define(LOAD_FENCE, `__sync_synchronize();')
define(RELEASE_FENCE, `__atomic_thread_fence(__ATOMIC_RELEASE);')
define(ACQUIRE_FENCE, `__atomic_thread_fence(__ATOMIC_ACQUIRE);')

define(SPLASH3_ROI_BEGIN, `')
define(SPLASH3_ROI_END, `')

define(GET_PID, `($1) = parmacs_pid;')
define(CLOCK, `{struct timeval clock_tv_; gettimeofday(&clock_tv_, NULL); ($1) = (unsigned long)(clock_tv_.tv_usec + clock_tv_.tv_sec * 1000000);}')
define(AUG_ON, `')
define(AUG_OFF, `')

undefine(`len')undefine(`index')undefine(`substr')undefine(`format')undefine(`eval')
undefine(`incr')undefine(`decr')undefine(`shift')undefine(`translit')
undefine(`regexp')undefine(`patsubst')undefine(`unix')undefine(`__unix__')undefine(`__gnu__')
divert(0)dnl
