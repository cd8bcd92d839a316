/*
 * wrap_libc.c — libdsm-start.a: the program's calls on the C library's
 * process-wide state (dsmcc links with -Wl,--wrap= for each,
 * tools/dsmcc.in): the random number generators and the settings a
 * program changes after its start. Each goes to libdsm's
 * (include/dsm/pthread.h), which makes them the job's in a pthreads
 * program on several nodes and calls the C library's otherwise. rand_r is
 * not among them: its state is the caller's.
 */
#include <dsm/pthread.h>

int __wrap_rand(void);
int __wrap_rand(void) { return dsm_rand(); }

void __wrap_srand(unsigned seed);
void __wrap_srand(unsigned seed) { dsm_srand(seed); }

long __wrap_random(void);
long __wrap_random(void) { return dsm_random(); }

void __wrap_srandom(unsigned seed);
void __wrap_srandom(unsigned seed) { dsm_srandom(seed); }

char *__wrap_initstate(unsigned seed, char *buf, size_t n);
char *__wrap_initstate(unsigned seed, char *buf, size_t n) { return dsm_initstate(seed, buf, n); }

char *__wrap_setstate(char *buf);
char *__wrap_setstate(char *buf) { return dsm_setstate(buf); }

double __wrap_drand48(void);
double __wrap_drand48(void) { return dsm_drand48(); }

double __wrap_erand48(unsigned short xsubi[3]);
double __wrap_erand48(unsigned short xsubi[3]) { return dsm_erand48(xsubi); }

long __wrap_lrand48(void);
long __wrap_lrand48(void) { return dsm_lrand48(); }

long __wrap_nrand48(unsigned short xsubi[3]);
long __wrap_nrand48(unsigned short xsubi[3]) { return dsm_nrand48(xsubi); }

long __wrap_mrand48(void);
long __wrap_mrand48(void) { return dsm_mrand48(); }

long __wrap_jrand48(unsigned short xsubi[3]);
long __wrap_jrand48(unsigned short xsubi[3]) { return dsm_jrand48(xsubi); }

void __wrap_srand48(long seed);
void __wrap_srand48(long seed) { dsm_srand48(seed); }

unsigned short *__wrap_seed48(unsigned short seed[3]);
unsigned short *__wrap_seed48(unsigned short seed[3]) { return dsm_seed48(seed); }

void __wrap_lcong48(unsigned short param[7]);
void __wrap_lcong48(unsigned short param[7]) { dsm_lcong48(param); }

int __wrap_chdir(const char *path);
int __wrap_chdir(const char *path) { return dsm_chdir(path); }

int __wrap_fchdir(int fd);
int __wrap_fchdir(int fd) { return dsm_fchdir(fd); }

mode_t __wrap_umask(mode_t mask);
mode_t __wrap_umask(mode_t mask) { return dsm_umask(mask); }

int __wrap_setenv(const char *name, const char *value, int overwrite);
int __wrap_setenv(const char *name, const char *value, int overwrite) { return dsm_setenv(name, value, overwrite); }

int __wrap_unsetenv(const char *name);
int __wrap_unsetenv(const char *name) { return dsm_unsetenv(name); }

int __wrap_putenv(char *string);
int __wrap_putenv(char *string) { return dsm_putenv(string); }

int __wrap_clearenv(void);
int __wrap_clearenv(void) { return dsm_clearenv(); }

char *__wrap_setlocale(int category, const char *locale);
char *__wrap_setlocale(int category, const char *locale) { return dsm_setlocale(category, locale); }
