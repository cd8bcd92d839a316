/*
 * asm_lift.h — x86-64 inline assembly that writes memory atomically, made
 * LLVM atomic instructions (dsmcc-asm; docs/unmodified-programs.md).
 *
 * A `lock`-prefixed read-modify-write, an `xchg` with memory, an `xadd` or
 * a `cmpxchg` in inline assembly is invisible to the ThreadSanitizer pass
 * through which dsmcc makes a program's atomics coherent across nodes: it
 * would update one node's copy of the page. asm_lift_call reads one
 * inline-assembly call of textual LLVM IR and gives the instructions that
 * do the same with `atomicrmw`, `cmpxchg` and atomic loads and stores,
 * which the pass then turns into calls of dsm's runtime; or says why it
 * cannot, so that dsmcc stops the build rather than let the program lose
 * updates in silence.
 */
#ifndef DSM_TOOLS_ASM_LIFT_H
#define DSM_TOOLS_ASM_LIFT_H

#include <stdbool.h>
#include <stddef.h>

/* A growing string. */
struct sbuf {
    char  *p;
    size_t len, cap;
};
void sb_add(struct sbuf *b, const char *s, size_t n);
void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_free(struct sbuf *b);

enum asm_verdict {
    ASM_KEEP,    /* not inline assembly, or none that touches memory atomically */
    ASM_LIFTED,  /* out holds the lines that replace it */
    ASM_REFUSED, /* an atomic it cannot translate: why says which, in one line */
};

/* One line of IR. opaque: the module's pointers are `ptr` (LLVM 15 and
 * later), not typed (`i32*`); a pointer-typed argument of the call
 * overrides it. serial names the temporaries (%dsm.asm.SERIAL.k), unique
 * in the module. */
enum asm_verdict asm_lift_call(const char *line, bool opaque, unsigned serial, struct sbuf *out,
                               struct sbuf *why);

/* The module's file-scope assembly: the contents of its `module asm "..."`
 * lines (IR-escaped) joined by \0A. ASM_REFUSED when it holds an atomic
 * on memory (assembly outside a function is not translated), else
 * ASM_KEEP. */
enum asm_verdict asm_check_module(const char *text, struct sbuf *why);

#endif
