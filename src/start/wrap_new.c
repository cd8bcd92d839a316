/*
 * wrap_new.c — libdsm-start.a: C++'s operator new and delete in the
 * shared-memory model: the block comes from the program's shared heap, as
 * its malloc does (wrap_malloc.c; before the start, the pre-start heap, so
 * a static initializer's `new` is shared too).
 *
 * They replace the standard library's (C++ lets a program replace them),
 * rather than wrap the program's references as -Wl,--wrap does malloc's:
 * much of the standard library's allocation happens inside libstdc++.so's
 * compiled code — std::string's buffer (basic_string<char> is instantiated
 * there), std::locale, streams' buffers — and a std::string the master
 * builds must be readable on every node as its std::vector is. The
 * executable's definitions are exported (libstdc++.so refers to them), so
 * every operator new in the process is this one. dsmc++ pulls this object
 * in by a name of its own (-Wl,--undefined=dsm_cxx_new_replaced): by
 * _Znwm, a shared library that defines it and comes first in the link
 * (the sanitizers' runtime) would satisfy the reference instead, and the
 * object would stay out. A C program never has it.
 *
 * Written in C with the Itanium C++ ABI's names (x86-64 and AArch64:
 * size_t is unsigned long, "m"; std::align_val_t is a size_t), so that
 * libdsm-start needs no C++ compiler. A failed allocation runs the
 * new-handler as the standard says, then throws std::bad_alloc through
 * libstdc++ (the nothrow forms return NULL instead).
 */
#include <stddef.h>

void *__wrap_malloc(size_t size); /* wrap_malloc.c */
void  __wrap_free(void *p);
int   __wrap_posix_memalign(void **out, size_t align, size_t size);

/* libstdc++: std::get_new_handler() and std::__throw_bad_alloc(). */
typedef void (*new_handler)(void);
new_handler _ZSt15get_new_handlerv(void);
__attribute__((noreturn)) void _ZSt17__throw_bad_allocv(void);

/* What dsmc++ names to link this object (above). */
const int dsm_cxx_new_replaced = 1;

/* One allocation, with the new-handler's retries; NULL only if nothrow. */
static void *allocate(size_t size, size_t align, int nothrow)
{
    if (!size)
        size = 1;
    for (;;) {
        void *p = NULL;
        if (align <= 16)
            p = __wrap_malloc(size);
        else if (__wrap_posix_memalign(&p, align, size) != 0)
            p = NULL;
        if (p)
            return p;
        new_handler h = _ZSt15get_new_handlerv();
        if (!h) {
            if (nothrow)
                return NULL;
            _ZSt17__throw_bad_allocv();
        }
        h(); /* may make room, throw, or end the program */
    }
}

/* operator new(size_t), new[](size_t) */
void *_Znwm(size_t n);
void *_Znam(size_t n);
void *_Znwm(size_t n) { return allocate(n, 0, 0); }
void *_Znam(size_t n) { return allocate(n, 0, 0); }
/* (size_t, const std::nothrow_t &) */
void *_ZnwmRKSt9nothrow_t(size_t n, const void *nt);
void *_ZnamRKSt9nothrow_t(size_t n, const void *nt);
void *_ZnwmRKSt9nothrow_t(size_t n, const void *nt) { (void)nt; return allocate(n, 0, 1); }
void *_ZnamRKSt9nothrow_t(size_t n, const void *nt) { (void)nt; return allocate(n, 0, 1); }
/* (size_t, std::align_val_t) */
void *_ZnwmSt11align_val_t(size_t n, size_t al);
void *_ZnamSt11align_val_t(size_t n, size_t al);
void *_ZnwmSt11align_val_t(size_t n, size_t al) { return allocate(n, al, 0); }
void *_ZnamSt11align_val_t(size_t n, size_t al) { return allocate(n, al, 0); }
/* (size_t, std::align_val_t, const std::nothrow_t &) */
void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt);
void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt);
void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt)
{
    (void)nt;
    return allocate(n, al, 1);
}
void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt)
{
    (void)nt;
    return allocate(n, al, 1);
}

/* Every delete: the block goes back to whichever allocator owns it. */
#define DELETE(name, ...)                \
    void name(void *p, ##__VA_ARGS__); \
    void name(void *p, ##__VA_ARGS__) { __wrap_free(p); }
DELETE(_ZdlPv)
DELETE(_ZdaPv)
DELETE(_ZdlPvm, size_t n __attribute__((unused)))
DELETE(_ZdaPvm, size_t n __attribute__((unused)))
DELETE(_ZdlPvRKSt9nothrow_t, const void *nt __attribute__((unused)))
DELETE(_ZdaPvRKSt9nothrow_t, const void *nt __attribute__((unused)))
DELETE(_ZdlPvSt11align_val_t, size_t al __attribute__((unused)))
DELETE(_ZdaPvSt11align_val_t, size_t al __attribute__((unused)))
DELETE(_ZdlPvmSt11align_val_t, size_t n __attribute__((unused)), size_t al __attribute__((unused)))
DELETE(_ZdaPvmSt11align_val_t, size_t n __attribute__((unused)), size_t al __attribute__((unused)))
DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, size_t al __attribute__((unused)),
       const void *nt __attribute__((unused)))
DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, size_t al __attribute__((unused)),
       const void *nt __attribute__((unused)))
