/*
 * asm_lift.c — x86-64 inline assembly that writes memory atomically, made
 * LLVM atomic instructions (asm_lift.h says why).
 *
 * The call is read as clang prints it: the assembly in the IR's escaped
 * form ($N operands, $$ for $, ${N:k} modifiers), its constraints as LLVM
 * spells them (outputs, then inputs, then clobbers; "+r" already split
 * into an output and an input tied to it; indirect memory operands "*m"
 * passed as pointer arguments, first the outputs' then the inputs'), and
 * the arguments. The statements are interpreted, in order, over a model of
 * the registers: x86-64's sixteen, and one for each operand the compiler
 * chooses a register for. A register holds an SSA value of 1 to 64 bits
 * whose upper bits are zero, as a 32-bit write leaves them; an 8- or
 * 16-bit write merges. Each instruction becomes IR on those values; at the
 * end the outputs are read back into the call's result. Flags are kept as
 * the operation that set them and evaluated only when a condition is read
 * (sete, =@ccz).
 *
 * Lifted: straight-line AT&T code with at most one atomic instruction —
 * lock add/sub/and/or/xor/inc/dec/not on memory, xchg with memory (locked
 * by the hardware with or without the prefix), xadd and cmpxchg on memory
 * (with or without it: as atomics, which is what every program means by
 * them) — around it mov, movz/movs, add, sub, and, or, xor, inc, dec, neg,
 * not, cmp, test, xchg and xadd of registers, sete/setz/setne/setnz/sets/
 * setns, and fences and pauses (the atomic is seq_cst already), as
 * Phoenix's and Linux's atomic helpers write it. A statement that is
 * nothing but a mov to or from memory (xv6's and Linux's spin unlock
 * `movl $0, %0`: x86's plain store is its release store) becomes an atomic
 * store or load, so that such a lock is released to the other nodes too;
 * so does FreeBSD's atomic_load_acq, a `lock cmpxchg` of the accumulator
 * into memory whose "=a" output is given no input.
 *
 * Refused (the caller stops the build): any other form that holds an
 * atomic — a lock prefix on another instruction (bts, btr, adc, neg...),
 * cmpxchg8b/16b, two atomics in one statement, jumps and loops, memory
 * addressed by symbol or index, %rsp, Intel syntax, asm goto. A locked
 * add or or of 0 on the stack (`lock; addl $0,-4(%%rsp)`, Linux's smp_mb)
 * is a fence, and kept, as mfence is.
 */
#include "asm_lift.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sb_add(struct sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            fprintf(stderr, "dsmcc-asm: out of memory\n");
            exit(1);
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void sb_printf(struct sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char   *s = NULL;
    int     n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0) {
        fprintf(stderr, "dsmcc-asm: out of memory\n");
        exit(1);
    }
    sb_add(b, s, (size_t)n);
    free(s);
}

void sb_free(struct sbuf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* ---- an arena: every string of one call, freed together ---- */

struct ablock {
    struct ablock *next;
    char           data[];
};
struct arena {
    struct ablock *head;
};

static void *aalloc(struct arena *a, size_t n)
{
    struct ablock *b = malloc(sizeof *b + n);
    if (!b) {
        fprintf(stderr, "dsmcc-asm: out of memory\n");
        exit(1);
    }
    b->next = a->head;
    a->head = b;
    return b->data;
}

static char *astrndup(struct arena *a, const char *s, size_t n)
{
    char *p = aalloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

static char *aprintf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *vaprintf(struct arena *a, const char *fmt, va_list ap)
{
    /* (vasprintf: gcc -fsanitize warns of vsnprintf(NULL, 0, ...)) */
    char *s = NULL;
    int   n = vasprintf(&s, fmt, ap);
    if (n < 0) {
        fprintf(stderr, "dsmcc-asm: out of memory\n");
        exit(1);
    }
    char *p = astrndup(a, s, (size_t)n);
    free(s);
    return p;
}

static char *aprintf(struct arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = vaprintf(a, fmt, ap);
    va_end(ap);
    return p;
}

static void afree(struct arena *a)
{
    while (a->head) {
        struct ablock *n = a->head->next;
        free(a->head);
        a->head = n;
    }
}

/* ---- the model ---- */

#define MAX_OPS 40             /* operands of one statement (GCC allows 30) */
#define NPHYS 16               /* rax..r15; then one register per operand */
#define NREGS (NPHYS + MAX_OPS)
#define MAX_INSNS 64
#define REG_RAX 0
#define REG_RBP 6
#define REG_RSP 7

static const char *const reg_names[4][NPHYS] = {
    {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12", "r13",
     "r14", "r15"},
    {"eax", "ebx", "ecx", "edx", "esi", "edi", "ebp", "esp", "r8d", "r9d", "r10d", "r11d", "r12d",
     "r13d", "r14d", "r15d"},
    {"ax", "bx", "cx", "dx", "si", "di", "bp", "sp", "r8w", "r9w", "r10w", "r11w", "r12w", "r13w",
     "r14w", "r15w"},
    {"al", "bl", "cl", "dl", "sil", "dil", "bpl", "spl", "r8b", "r9b", "r10b", "r11b", "r12b",
     "r13b", "r14b", "r15b"},
};
static const int reg_bits[4] = {64, 32, 16, 8};

/* A register by name (rax, eax, ax, al...): its index, and its width in
 * *bits; -1 when it is none of the general registers' low parts. */
static int reg_lookup(const char *name, size_t n, int *bits)
{
    for (int w = 0; w < 4; w++)
        for (int r = 0; r < NPHYS; r++)
            if (strlen(reg_names[w][r]) == n && strncasecmp(reg_names[w][r], name, n) == 0) {
                *bits = reg_bits[w];
                return r;
            }
    return -1;
}

/* An SSA value: txt is an IR operand (%name or a constant), NULL while
 * undefined; pty non-NULL when it is a pointer of that type. */
struct val {
    const char *txt;
    int         bits;
    const char *pty;
};

/* Where an operand lives. An input by value is a register of its own
 * holding the value (an immediate too: the assembly cannot write one),
 * so that a statement that writes an input-only register, as some do,
 * reads back what it wrote. */
enum loc { LOC_REG, LOC_MEM, LOC_FLAG };

struct operand {
    bool        output, indirect;
    enum loc    loc;
    int         reg;  /* LOC_REG */
    const char *ty;   /* the argument's, or the result's, IR type */
    const char *val;  /* LOC_MEM: the pointer; an input: its value */
    const char *elem; /* LOC_MEM: elementtype(...), when given */
    int         res;  /* non-indirect output: its place in the result */
    char        cc[8]; /* LOC_FLAG: the condition (z, ne, s...) */
};

enum xkind { X_REG, X_IMM, X_MEM };

/* An instruction's operand, as written. */
struct xop {
    enum xkind k;
    int        bits;     /* the width it names; 0: it does not say */
    int        reg;      /* X_REG */
    long long  imm;      /* X_IMM */
    int        opn;      /* X_MEM of an indirect operand: which; else -1 */
    int        base_reg; /* X_MEM through a register ((%1), (%%rbx)), else -1 */
    long long  disp;
};

enum opc {
    OP_NONE, OP_MOV, OP_MOVZ, OP_MOVS, OP_ADD, OP_SUB, OP_AND, OP_OR, OP_XOR, OP_INC, OP_DEC,
    OP_NEG, OP_NOT, OP_XCHG, OP_XADD, OP_CMPXCHG, OP_CMP, OP_TEST, OP_SET, OP_NOP,
};

struct insn {
    const char *text; /* the statement, for messages */
    const char *mn;   /* its mnemonic, lowercase */
    enum opc    op;
    int         bits;     /* from the suffix; 0: none */
    int         src_bits; /* movz/movs: the source's width */
    char        cc[4];    /* OP_SET: the condition */
    bool        lock, rep, parsed, atomic, fence;
    const char *bad;      /* the operand it could not read */
    int         nx;
    struct xop  x[3];
};

/* Flags, kept as what set them: the result of `a OP b` (ZF, SF), or the
 * success of a cmpxchg (ZF alone). */
enum fkind { F_NONE, F_RES, F_ZF };
struct flags {
    enum fkind  kind;
    const char *opc; /* IR opcode of the result (add, sub...) or NULL: a is the result */
    struct val  a, b, res, zf;
    int         bits;
};

struct lift {
    struct arena    ar;
    struct sbuf    *out;
    const char     *dbg; /* ", !dbg !N", or "" */
    unsigned        serial, ntmp;
    bool            opaque;
    struct operand  op[MAX_OPS];
    int             nop;
    struct val      reg[NREGS];
    struct flags    fl;
    const char     *err; /* why it cannot be lifted */
    struct insn     in[MAX_INSNS];
    int             nin;
    bool            intel;
    bool            overflow; /* more statements than in[] holds */
};

static bool fail(struct lift *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(struct lift *L, const char *fmt, ...)
{
    if (L->err)
        return false;
    va_list ap;
    va_start(ap, fmt);
    L->err = vaprintf(&L->ar, fmt, ap);
    va_end(ap);
    return false;
}

/* ---- reading the IR ---- */

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static bool starts(const char *p, const char *w)
{
    return strncmp(p, w, strlen(w)) == 0;
}

/* The end of a bracketed or quoted run starting at p (one past its close),
 * or NULL when it does not close. */
static const char *skip_group(const char *p)
{
    char open = *p, close;
    switch (open) {
    case '(': close = ')'; break;
    case '[': close = ']'; break;
    case '{': close = '}'; break;
    case '<': close = '>'; break;
    case '"':
        for (p++; *p && *p != '"'; p++)
            ;
        return *p ? p + 1 : NULL;
    default: return p + 1;
    }
    int depth = 0;
    for (; *p; p++) {
        if (*p == '"') {
            const char *q = skip_group(p);
            if (!q)
                return NULL;
            p = q - 1;
            continue;
        }
        if (*p == open)
            depth++;
        else if (*p == close && --depth == 0)
            return p + 1;
    }
    return NULL;
}

/* Splits s (length n) at top-level occurrences of sep outside brackets and
 * quotes; each part trimmed. Returns the number of parts (at most max). */
static int split_top(struct arena *a, const char *s, size_t n, char sep, const char **parts, int max)
{
    int         k = 0;
    const char *start = s, *end = s + n;
    for (const char *p = s; p <= end; p++) {
        if (p < end && *p && strchr("([{<\"", *p)) {
            const char *q = skip_group(p);
            if (!q || q > end)
                return -1;
            p = q - 1;
            continue;
        }
        if (p == end || *p == sep) {
            const char *b = start, *e = p;
            while (b < e && isspace((unsigned char)*b))
                b++;
            while (e > b && isspace((unsigned char)e[-1]))
                e--;
            if (k >= max)
                return -1;
            parts[k++] = astrndup(a, b, (size_t)(e - b));
            start = p + 1;
        }
    }
    return k;
}

/* An IR string's contents (between the quotes), its \XX escapes decoded. */
static char *ir_unescape(struct arena *a, const char *s, size_t n)
{
    char *p = aalloc(a, n + 1), *o = p;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 2 < n && isxdigit((unsigned char)s[i + 1]) &&
            isxdigit((unsigned char)s[i + 2])) {
            char h[3] = {s[i + 1], s[i + 2], 0};
            *o++ = (char)strtol(h, NULL, 16);
            i += 2;
        } else if (s[i] == '\\' && i + 1 < n && s[i + 1] == '\\') {
            *o++ = '\\';
            i++;
        } else
            *o++ = s[i];
    }
    *o = '\0';
    return p;
}

/* The assembly as it was written in C (GCC's form): $N is %N, ${N:k} %kN,
 * $$ a $, a register %%reg; of {att|intel} alternatives ($( $| $)) the
 * first. This is what messages quote, and what the statements are read
 * from. File-scope assembly (operands false) has no operands: its $ is
 * the assembler's, its registers are %reg. */
static char *to_gcc(struct arena *a, const char *s, bool operands)
{
    struct sbuf b = {0};
    int         alt = 0; /* inside $( ... ): 1 in the first alternative, 2 after $| */
    for (const char *p = s; *p; p++) {
        if (*p == '$' && operands) {
            const char *q = p + 1;
            if (*q == '$') {
                if (alt != 2)
                    sb_add(&b, "$", 1);
                p = q;
                continue;
            }
            if (*q == '(' || *q == '|' || *q == ')') {
                alt = *q == '(' ? 1 : *q == '|' ? 2 : 0;
                p = q;
                continue;
            }
            if (isdigit((unsigned char)*q)) {
                const char *e = q;
                while (isdigit((unsigned char)*e))
                    e++;
                if (alt != 2) {
                    sb_add(&b, "%", 1);
                    sb_add(&b, q, (size_t)(e - q));
                }
                p = e - 1;
                continue;
            }
            if (*q == '{') {
                const char *e = strchr(q, '}');
                if (e) {
                    const char *colon = memchr(q, ':', (size_t)(e - q));
                    if (alt != 2) {
                        if (colon && colon == q + 1) { /* ${:uid} ${:comment} ${:private} */
                            if (starts(colon + 1, "comment"))
                                sb_add(&b, "#", 1);
                            else if (starts(colon + 1, "private"))
                                sb_add(&b, ".L", 2);
                            else
                                sb_add(&b, "0", 1);
                        } else {
                            sb_add(&b, "%", 1);
                            if (colon)
                                sb_add(&b, colon + 1, (size_t)(e - colon - 1));
                            sb_add(&b, q + 1, (size_t)((colon ? colon : e) - q - 1));
                        }
                    }
                    p = e;
                    continue;
                }
            }
        }
        if (alt == 2)
            continue;
        if (*p == '%')
            sb_add(&b, "%%", 2);
        else
            sb_add(&b, p, 1);
    }
    char *r = astrndup(a, b.p ? b.p : "", b.len);
    sb_free(&b);
    return r;
}

/* The text as a C string literal's contents would show it, on one line. */
static void quote_c(struct sbuf *b, const char *s)
{
    size_t n = 0;
    for (const char *p = s; *p; p++, n++) {
        if (n >= 96) {
            sb_add(b, "...", 3);
            return;
        }
        if (*p == '\n')
            sb_add(b, "\\n", 2);
        else if (*p == '\t')
            sb_add(b, "\\t", 2);
        else if ((unsigned char)*p < ' ')
            sb_add(b, " ", 1);
        else
            sb_add(b, p, 1);
    }
}

/* A float or double: its width, else 0. In a register it is those bits
 * (Concurrency Kit exchanges doubles with xchgq). */
static int fp_bits(const char *t)
{
    return !t ? 0 : strcmp(t, "double") == 0 ? 64 : strcmp(t, "float") == 0 ? 32 : 0;
}

/* The width of an IR type as a register holds it: iN, 64 for a pointer,
 * a float's or double's; 0 otherwise. */
static int type_bits(const char *t)
{
    if (!t)
        return 0;
    size_t n = strlen(t);
    if (strcmp(t, "ptr") == 0 || (n && t[n - 1] == '*'))
        return 64;
    if (fp_bits(t))
        return fp_bits(t);
    if (t[0] == 'i' && n > 1) {
        char *e;
        long  b = strtol(t + 1, &e, 10);
        if (*e == '\0' && b > 0 && b <= 64)
            return (int)b;
    }
    return 0;
}

static bool is_ptr_type(const char *t)
{
    size_t n = strlen(t);
    return strcmp(t, "ptr") == 0 || (n && t[n - 1] == '*');
}

/* Parameter attributes clang puts on inline-asm arguments. */
static const char *const arg_attrs[] = {
    "nonnull", "noundef", "signext", "zeroext", "inreg", "noalias", "nocapture", "readonly",
    "readnone", "writeonly", "returned", "nofree", "immarg", "nest", "align", "elementtype",
    "dereferenceable", "dereferenceable_or_null", "byval", "byref", "preallocated", "inalloca",
    "sret", "captures", "range", "noundef", NULL,
};

/* One argument: "TYPE ATTRS VALUE" into its type, elementtype and value. */
static bool parse_arg(struct lift *L, const char *s, const char **ty, const char **elem,
                      const char **val)
{
    const char *p = s;
    const char *t = p;
    if (*p == '{' || *p == '[' || *p == '<') {
        p = skip_group(p);
        if (!p)
            return false;
    } else
        while (*p && *p != ' ')
            p++;
    while (*p == '*') /* a typed pointer's stars */
        p++;
    *ty = astrndup(&L->ar, t, (size_t)(p - t));
    if (strstr(*ty, "addrspace") || starts(skip_ws(p), "addrspace"))
        return fail(L, "a pointer in another address space");
    *elem = NULL;
    for (;;) {
        p = skip_ws(p);
        bool attr = false;
        for (int i = 0; arg_attrs[i]; i++) {
            size_t n = strlen(arg_attrs[i]);
            if (strncmp(p, arg_attrs[i], n) == 0 && (p[n] == ' ' || p[n] == '(')) {
                attr = true;
                const char *a = p + n;
                if (*a == '(') {
                    const char *e = skip_group(a);
                    if (!e)
                        return false;
                    if (strcmp(arg_attrs[i], "elementtype") == 0)
                        *elem = astrndup(&L->ar, a + 1, (size_t)(e - a - 2));
                    a = e;
                } else if (strcmp(arg_attrs[i], "align") == 0) {
                    a = skip_ws(a);
                    while (isdigit((unsigned char)*a))
                        a++;
                }
                p = a;
                break;
            }
        }
        if (!attr)
            break;
    }
    if (!*p)
        return false;
    *val = astrndup(&L->ar, p, strlen(p));
    return true;
}

/* ---- emitting IR ---- */

static const char *tmp(struct lift *L)
{
    return aprintf(&L->ar, "%%dsm.asm.%u.%u", L->serial, L->ntmp++);
}

static void emit(struct lift *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(struct lift *L, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int   n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        exit(1);
    sb_printf(L->out, "  %s%s\n", s, L->dbg);
    free(s);
}

static const char *ptr_to(struct lift *L, int bits)
{
    return L->opaque ? "ptr" : aprintf(&L->ar, "i%d*", bits);
}

static struct val vconst(struct lift *L, long long v, int bits)
{
    /* The value in bits, written signed (LLVM reads iN constants so). */
    unsigned long long u = (unsigned long long)v;
    if (bits < 64) {
        u &= (1ULL << bits) - 1;
        if (u >> (bits - 1))
            return (struct val){aprintf(&L->ar, "%lld", (long long)u - (1LL << bits)), bits, NULL};
    }
    return (struct val){aprintf(&L->ar, "%lld", (long long)u), bits, NULL};
}

/* v as an integer of bits (truncated, or zero-extended: upper bits of a
 * register are zero in this model). */
static bool as_int(struct lift *L, struct val v, int bits, struct val *r)
{
    if (!v.txt)
        return fail(L, "it reads a register it never set");
    if (!v.pty && (v.bits < 1 || v.bits > 64))
        return fail(L, "a value that is no integer or pointer");
    if (v.pty) {
        const char *t = tmp(L);
        emit(L, "%s = ptrtoint %s %s to i64", t, v.pty, v.txt);
        v = (struct val){t, 64, NULL};
    }
    if (v.bits == bits) {
        *r = v;
        return true;
    }
    const char *t = tmp(L);
    emit(L, "%s = %s i%d %s to i%d", t, v.bits > bits ? "trunc" : "zext", v.bits, v.txt, bits);
    *r = (struct val){t, bits, NULL};
    return true;
}

static bool reg_write(struct lift *L, int r, struct val v, int bits)
{
    struct val old = L->reg[r];
    if (bits >= 32 || !old.txt || (!old.pty && old.bits <= bits)) {
        if ((v.pty ? bits != 64 : v.bits != bits) && !as_int(L, v, bits, &v))
            return false;
        L->reg[r] = v;
        return true;
    }
    /* An 8- or 16-bit write keeps the register's other bits. */
    struct val o, n;
    if (!as_int(L, old, 64, &o) || !as_int(L, v, bits, &v) || !as_int(L, v, 64, &n))
        return false;
    const char *m = tmp(L), *r2 = tmp(L);
    emit(L, "%s = and i64 %s, %lld", m, o.txt, (long long)~((1ULL << bits) - 1));
    emit(L, "%s = or i64 %s, %s", r2, m, n.txt);
    L->reg[r] = (struct val){r2, 64, NULL};
    return true;
}

/* The operand's value as the IR argument gives it (a float's bits as an
 * integer). */
static struct val opval(struct lift *L, int i)
{
    const struct operand *o = &L->op[i];
    if (is_ptr_type(o->ty))
        return (struct val){o->val, 64, o->ty};
    int fb = fp_bits(o->ty);
    if (fb) {
        const char *t = tmp(L);
        emit(L, "%s = bitcast %s %s to i%d", t, o->ty, o->val, fb);
        return (struct val){t, fb, NULL};
    }
    return (struct val){o->val, type_bits(o->ty), NULL};
}

/* The address of memory operand x, as a pointer to an iBITS. */
static bool address(struct lift *L, const struct xop *x, int bits, const char **pp)
{
    struct val base;
    if (x->opn >= 0)
        base = (struct val){L->op[x->opn].val, 64, L->op[x->opn].ty};
    else {
        if (x->base_reg == REG_RSP || x->base_reg == REG_RBP)
            return fail(L, "memory on the stack pointer");
        base = L->reg[x->base_reg];
        if (!base.txt)
            return fail(L, "an address in a register it never set");
    }
    const char *want = ptr_to(L, bits);
    if (base.pty && x->disp == 0) {
        if (strcmp(base.pty, want) == 0) {
            *pp = base.txt;
            return true;
        }
        const char *t = tmp(L);
        emit(L, "%s = bitcast %s %s to %s", t, base.pty, base.txt, want);
        *pp = t;
        return true;
    }
    struct val i;
    if (!as_int(L, base, 64, &i))
        return false;
    if (x->disp) {
        const char *t = tmp(L);
        emit(L, "%s = add i64 %s, %lld", t, i.txt, x->disp);
        i.txt = t;
    }
    const char *t = tmp(L);
    emit(L, "%s = inttoptr i64 %s to %s", t, i.txt, want);
    *pp = t;
    return true;
}

/* The value of x at bits: a register, an immediate, an input, or memory
 * (loaded; atomically when `atomic`: a statement that is one mov). */
static bool read_x(struct lift *L, const struct xop *x, int bits, bool atomic, struct val *r)
{
    switch (x->k) {
    case X_REG:
        if (x->reg == REG_RSP || x->reg == REG_RBP)
            return fail(L, "it reads the stack or frame pointer");
        return as_int(L, L->reg[x->reg], bits, r);
    case X_IMM: *r = vconst(L, x->imm, bits); return true;
    case X_MEM: {
        const char *p;
        if (!address(L, x, bits, &p))
            return false;
        const char *t = tmp(L);
        if (atomic)
            emit(L, "%s = load atomic i%d, %s %s seq_cst, align %d", t, bits, ptr_to(L, bits), p,
                 bits / 8);
        else
            emit(L, "%s = load i%d, %s %s, align 1", t, bits, ptr_to(L, bits), p);
        *r = (struct val){t, bits, NULL};
        return true;
    }
    }
    return false;
}

static bool write_x(struct lift *L, const struct xop *x, struct val v, int bits, bool atomic)
{
    switch (x->k) {
    case X_REG:
        if (x->reg == REG_RSP || x->reg == REG_RBP)
            return fail(L, "it writes the stack or frame pointer");
        return reg_write(L, x->reg, v, bits);
    case X_MEM: {
        const char *p;
        if (!as_int(L, v, bits, &v) || !address(L, x, bits, &p))
            return false;
        if (atomic)
            emit(L, "store atomic i%d %s, %s %s seq_cst, align %d", bits, v.txt, ptr_to(L, bits), p,
                 bits / 8);
        else
            emit(L, "store i%d %s, %s %s, align 1", bits, v.txt, ptr_to(L, bits), p);
        return true;
    }
    default: return fail(L, "it writes an input operand");
    }
}

static bool binop(struct lift *L, const char *opc, struct val a, struct val b, struct val *r)
{
    const char *t = tmp(L);
    emit(L, "%s = %s i%d %s, %s", t, opc, a.bits, a.txt, b.txt);
    *r = (struct val){t, a.bits, NULL};
    return true;
}

static void set_flags(struct lift *L, const char *opc, struct val a, struct val b)
{
    L->fl = (struct flags){.kind = F_RES, .opc = opc, .a = a, .b = b, .bits = a.bits};
}

/* The i1 of condition cc (z/e, nz/ne, s, ns) on the flags now. */
static bool cond(struct lift *L, const char *cc, struct val *r)
{
    bool neg = false;
    const char *c = cc;
    if (c[0] == 'n' && c[1]) {
        neg = true;
        c++;
    }
    bool zero = strcmp(c, "z") == 0 || strcmp(c, "e") == 0;
    bool sign = strcmp(c, "s") == 0;
    if (!zero && !sign)
        return fail(L, "the condition %s (dsmcc knows z, e, s and their negations)", cc);
    if (L->fl.kind == F_NONE)
        return fail(L, "it reads flags no instruction of it set");
    const char *t = tmp(L);
    if (L->fl.kind == F_ZF) {
        if (!zero)
            return fail(L, "the sign flag after a cmpxchg");
        if (neg)
            emit(L, "%s = xor i1 %s, true", t, L->fl.zf.txt);
        else
            emit(L, "%s = and i1 %s, true", t, L->fl.zf.txt);
        *r = (struct val){t, 1, NULL};
        return true;
    }
    if (!L->fl.res.txt) {
        if (L->fl.opc)
            binop(L, L->fl.opc, L->fl.a, L->fl.b, &L->fl.res);
        else
            L->fl.res = L->fl.a;
    }
    emit(L, "%s = icmp %s i%d %s, 0", t, zero ? (neg ? "ne" : "eq") : (neg ? "sge" : "slt"),
         L->fl.bits, L->fl.res.txt);
    *r = (struct val){t, 1, NULL};
    return true;
}

/* ---- reading the statements ---- */

static const struct {
    const char *name;
    enum opc    op;
} mnemonics[] = {
    {"mov", OP_MOV},   {"add", OP_ADD},   {"sub", OP_SUB},   {"and", OP_AND},         {"or", OP_OR},
    {"xor", OP_XOR},   {"inc", OP_INC},   {"dec", OP_DEC},   {"neg", OP_NEG},         {"not", OP_NOT},
    {"xchg", OP_XCHG}, {"xadd", OP_XADD}, {"cmp", OP_CMP},   {"cmpxchg", OP_CMPXCHG}, {"test", OP_TEST},
    {NULL, OP_NONE},
};

static void decode_mnemonic(struct insn *in)
{
    const char *m = in->mn;
    size_t      n = strlen(m);
    static const char *const nops[] = {"nop", "pause", "mfence", "lfence", "sfence", NULL};
    for (int i = 0; nops[i]; i++)
        if (strcmp(m, nops[i]) == 0) {
            in->op = OP_NOP;
            return;
        }
    static const char *const sets[] = {"sete", "setz", "setne", "setnz", "sets", "setns", NULL};
    for (int i = 0; sets[i]; i++)
        if (strcmp(m, sets[i]) == 0) {
            in->op = OP_SET;
            snprintf(in->cc, sizeof in->cc, "%s", m + 3);
            in->bits = 8;
            return;
        }
    /* movzbl: zero-extend a b to an l; movslq: sign-extend an l to a q. */
    if (n == 6 && (starts(m, "movz") || starts(m, "movs")) && strchr("bwl", m[4]) &&
        strchr("wlq", m[5])) {
        static const char sz[] = "bwlq";
        int bits[] = {8, 16, 32, 64};
        int s = (int)(strchr(sz, m[4]) - sz), d = (int)(strchr(sz, m[5]) - sz);
        if (s < d && !(m[3] == 'z' && m[4] == 'l')) {
            in->op = m[3] == 'z' ? OP_MOVZ : OP_MOVS;
            in->src_bits = bits[s];
            in->bits = bits[d];
        }
        return;
    }
    for (int i = 0; mnemonics[i].name; i++) {
        size_t b = strlen(mnemonics[i].name);
        if (strncmp(m, mnemonics[i].name, b) != 0)
            continue;
        if (m[b] == '\0') {
            in->op = mnemonics[i].op;
            return;
        }
        if (m[b + 1] == '\0' && strchr("bwlq", m[b])) {
            in->op = mnemonics[i].op;
            in->bits = m[b] == 'b' ? 8 : m[b] == 'w' ? 16 : m[b] == 'l' ? 32 : 64;
            return;
        }
    }
}

static bool parse_int(const char *s, long long *v)
{
    if (!*s)
        return false;
    char *e;
    *v = strtoll(s, &e, 0);
    return *e == '\0';
}

/* "%N" or "%kN" at s (GCC form): the operand and the width it names. */
static bool parse_opref(struct lift *L, const char *s, int *opn, int *bits)
{
    if (*s != '%')
        return false;
    s++;
    char mod = 0;
    if (isalpha((unsigned char)*s))
        mod = *s++;
    long long n;
    if (!parse_int(s, &n) || n < 0 || n >= L->nop)
        return false;
    *opn = (int)n;
    switch (mod) {
    case 0: *bits = type_bits(L->op[n].ty); break;
    case 'b': *bits = 8; break;
    case 'w': *bits = 16; break;
    case 'k': *bits = 32; break;
    case 'q': *bits = 64; break;
    default: return false; /* %h (ah...), %c, %P...: not read */
    }
    if (L->op[n].loc == LOC_MEM || L->op[n].loc == LOC_FLAG)
        *bits = mod ? *bits : 0;
    return true;
}

static bool parse_xop(struct lift *L, const char *s, struct xop *x)
{
    *x = (struct xop){.opn = -1, .base_reg = -1};
    if (starts(s, "%%")) { /* gas takes "% rax" too (Concurrency Kit writes it) */
        const char *r = skip_ws(s + 2);
        x->k = X_REG;
        x->reg = reg_lookup(r, strlen(r), &x->bits);
        return x->reg >= 0;
    }
    if (*s == '$') {
        x->k = X_IMM;
        return parse_int(s + 1, &x->imm);
    }
    const char *paren = strchr(s, '(');
    if (*s == '%' && !paren) {
        int n, bits;
        if (!parse_opref(L, s, &n, &bits))
            return false;
        x->bits = bits;
        switch (L->op[n].loc) {
        case LOC_REG: x->k = X_REG; x->reg = L->op[n].reg; return true;
        case LOC_MEM: x->k = X_MEM; x->opn = n; return true;
        case LOC_FLAG: return false;
        }
        return false;
    }
    if (!paren)
        return false; /* a symbol: memory dsmcc cannot name */
    x->k = X_MEM;
    if (paren > s) {
        char *d = astrndup(&L->ar, s, (size_t)(paren - s));
        if (!parse_int(d, &x->disp))
            return false;
    }
    const char *close = strchr(paren, ')');
    if (!close || close[1] != '\0')
        return false;
    char *base = astrndup(&L->ar, paren + 1, (size_t)(close - paren - 1));
    if (strchr(base, ','))
        return false; /* an index register */
    if (starts(base, "%%")) {
        int bits;
        x->base_reg = reg_lookup(base + 2, strlen(base + 2), &bits);
        return x->base_reg >= 0 && bits == 64;
    }
    int n, bits;
    if (!parse_opref(L, base, &n, &bits))
        return false;
    if (L->op[n].loc != LOC_REG)
        return false;
    x->base_reg = L->op[n].reg;
    return true;
}

static char *lower(struct arena *a, const char *s, size_t n)
{
    char *p = astrndup(a, s, n);
    for (char *q = p; *q; q++)
        *q = (char)tolower((unsigned char)*q);
    return p;
}

/* A statement that holds an atomic on memory, parsed or not. */
static void classify(struct lift *L, struct insn *in)
{
    const char *m = in->mn;
    bool        mem = false, unknown_opnd = !in->parsed;
    for (int i = 0; i < in->nx && in->parsed; i++)
        mem |= in->x[i].k == X_MEM;
    if (L->intel)
        mem = in->text && strchr(in->text, '[');
    if (in->lock) {
        /* lock; addl $0,-4(%%rsp): a fence on the thread's own stack. */
        in->fence = in->parsed && (in->op == OP_ADD || in->op == OP_OR) && in->nx == 2 &&
                    in->x[0].k == X_IMM && in->x[0].imm == 0 && in->x[1].k == X_MEM &&
                    in->x[1].base_reg == REG_RSP;
        in->atomic = !in->fence;
    } else if (starts(m, "xchg"))
        in->atomic = mem || (unknown_opnd && !L->intel);
    else if (starts(m, "cmpxchg") || starts(m, "xadd"))
        in->atomic = true;
}

/* Splits the assembly (GCC form) into statements. False when it holds
 * something no statement can be made of (an unterminated section). */
static bool read_statements(struct lift *L, const char *text)
{
    bool        lock = false, rep = false, skipping = false;
    const char *p = text;
    while (*p) {
        const char *e = p;
        while (*e && *e != '\n' && *e != ';')
            e++;
        /* A comment runs to the end of the line. */
        const char *hash = memchr(p, '#', (size_t)(e - p));
        const char *stop = hash ? hash : e;
        if (hash)
            while (*e && *e != '\n')
                e++;
        const char *b = p, *f = stop;
        while (b < f && isspace((unsigned char)*b))
            b++;
        while (f > b && isspace((unsigned char)f[-1]))
            f--;
        p = *e ? e + 1 : e;
        /* Labels. */
        for (;;) {
            const char *q = b;
            while (q < f && (isalnum((unsigned char)*q) || *q == '_' || *q == '.' || *q == '$'))
                q++;
            if (q > b && q < f && *q == ':') {
                b = q + 1;
                while (b < f && isspace((unsigned char)*b))
                    b++;
                continue;
            }
            break;
        }
        if (b == f)
            continue;
        const char *w = b;
        while (w < f && !isspace((unsigned char)*w))
            w++;
        char *mn = lower(&L->ar, b, (size_t)(w - b));
        if (skipping) {
            if (strcmp(mn, ".popsection") == 0 || strcmp(mn, ".previous") == 0)
                skipping = false;
            continue;
        }
        if (strcmp(mn, ".pushsection") == 0 || strcmp(mn, ".section") == 0) {
            skipping = true; /* Linux's LOCK_PREFIX notes the lock in .smp_locks */
            continue;
        }
        const char *rest = w;
        while (rest < f && isspace((unsigned char)*rest))
            rest++;
        if (strcmp(mn, "lock") == 0 || strcmp(mn, "rep") == 0 || strcmp(mn, "repz") == 0 ||
            strcmp(mn, "repe") == 0) {
            if (mn[0] == 'l')
                lock = true;
            else
                rep = true;
            if (rest == f)
                continue; /* the prefix alone: it is the next statement's */
            w = rest;
            while (w < f && !isspace((unsigned char)*w))
                w++;
            mn = lower(&L->ar, rest, (size_t)(w - rest));
            rest = w;
            while (rest < f && isspace((unsigned char)*rest))
                rest++;
            if (strcmp(mn, "lock") == 0) { /* rep lock, lock lock: not lifted */
                lock = true;
                mn = "lock";
            }
        }
        if (L->nin == MAX_INSNS) {
            L->overflow = true;
            return fail(L, "more than %d statements", MAX_INSNS);
        }
        struct insn *in = &L->in[L->nin++];
        *in = (struct insn){.text = astrndup(&L->ar, b, (size_t)(f - b)), .mn = mn, .lock = lock,
                            .rep = rep};
        lock = rep = false;
        decode_mnemonic(in);
        in->parsed = true;
        const char *parts[4];
        int         n = rest < f ? split_top(&L->ar, rest, (size_t)(f - rest), ',', parts, 3) : 0;
        if (n < 0 || L->intel)
            in->parsed = false;
        for (int i = 0; i < n && in->parsed; i++)
            if (!(in->parsed = parse_xop(L, parts[i], &in->x[i])))
                in->bad = parts[i];
        in->nx = n < 0 ? 0 : n;
        classify(L, in);
    }
    if (lock && L->nin < MAX_INSNS) { /* a prefix for what dsmcc cannot see: atomic */
        L->in[L->nin++] = (struct insn){.text = "lock", .mn = "lock", .lock = true, .atomic = true};
        return fail(L, "a lock prefix with no instruction after it");
    }
    return true;
}

/* ---- running them ---- */

static int insn_bits(struct lift *L, const struct insn *in)
{
    if (in->bits)
        return in->bits;
    for (int i = 0; i < in->nx; i++)
        if (in->x[i].bits)
            return in->x[i].bits;
    for (int i = 0; i < in->nx; i++)
        if (in->x[i].k == X_MEM && in->x[i].opn >= 0) {
            int b = type_bits(L->op[in->x[i].opn].elem);
            if (b == 8 || b == 16 || b == 32 || b == 64)
                return b;
        }
    return 0;
}

static const char *rmw_name(enum opc op)
{
    switch (op) {
    case OP_ADD: case OP_INC: return "add";
    case OP_SUB: case OP_DEC: return "sub";
    case OP_AND: return "and";
    case OP_OR: return "or";
    case OP_XOR: case OP_NOT: return "xor";
    default: return NULL;
    }
}

static bool need(struct lift *L, const struct insn *in, int n)
{
    if (in->nx != n)
        return fail(L, "'%s' with %d operands", in->mn, in->nx);
    return true;
}

static bool exec(struct lift *L, const struct insn *in, bool lone)
{
    if (in->op == OP_NOP && !in->lock && (in->nx == 0 || strcmp(in->mn, "nop") == 0))
        return true;
    if (in->fence)
        return true;
    if (in->lock && in->op != OP_ADD && in->op != OP_SUB && in->op != OP_AND && in->op != OP_OR &&
        in->op != OP_XOR && in->op != OP_INC && in->op != OP_DEC && in->op != OP_NOT &&
        in->op != OP_XCHG && in->op != OP_XADD && in->op != OP_CMPXCHG)
        return fail(L, "lock %s is not one dsmcc translates", in->mn);
    if (in->op != OP_NONE && in->bad)
        return fail(L, "its operand '%s': dsmcc reads registers, immediates, operands and memory "
                       "at (reg) or disp(reg)", in->bad);
    if (in->op == OP_NONE || !in->parsed || (in->rep && in->op != OP_NOP))
        return fail(L, "'%s' is not an instruction dsmcc translates", in->text);
    int bits = insn_bits(L, in);
    if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
        return fail(L, "'%s': its operand size is not said", in->text);
    const struct xop *x = in->x;
    struct val        a, b, r;
    switch (in->op) {
    case OP_MOV:
    case OP_MOVZ:
    case OP_MOVS: {
        if (!need(L, in, 2))
            return false;
        /* A mov of memory in a statement of its own is the program's
         * atomic load or store (x86's plain ones are acquire and
         * release); so is any in a statement with an atomic. */
        int sb = in->op == OP_MOV ? bits : in->src_bits;
        if (!read_x(L, &x[0], sb, lone || x[0].k == X_MEM, &a))
            return false;
        if (in->op != OP_MOV) {
            const char *t = tmp(L);
            emit(L, "%s = %s i%d %s to i%d", t, in->op == OP_MOVZ ? "zext" : "sext", sb, a.txt, bits);
            a = (struct val){t, bits, NULL};
        }
        return write_x(L, &x[1], a, bits, true);
    }
    case OP_ADD: case OP_SUB: case OP_AND: case OP_OR: case OP_XOR:
    case OP_INC: case OP_DEC: case OP_NOT: case OP_NEG: {
        bool unary = in->op == OP_INC || in->op == OP_DEC || in->op == OP_NOT || in->op == OP_NEG;
        if (!need(L, in, unary ? 1 : 2))
            return false;
        const struct xop *dst = &x[unary ? 0 : 1];
        if (!unary && (in->op == OP_XOR || in->op == OP_SUB) && x[0].k == X_REG &&
            x[1].k == X_REG && x[0].reg == x[1].reg && !in->lock) {
            /* xorl %%edx, %%edx: zero, whatever the register held */
            r = vconst(L, 0, bits);
            set_flags(L, NULL, r, r);
            return write_x(L, &x[1], r, bits, false);
        }
        if (unary)
            b = vconst(L, in->op == OP_NOT ? -1 : 1, bits);
        else if (!read_x(L, &x[0], bits, false, &b))
            return false;
        const char *opc = rmw_name(in->op);
        if (in->lock) {
            if (dst->k != X_MEM)
                return fail(L, "a lock prefix on a register operation");
            if (in->op == OP_NEG)
                return fail(L, "lock %s is not one dsmcc translates", in->mn);
            const char *p;
            if (!address(L, dst, bits, &p))
                return false;
            const char *t = tmp(L);
            emit(L, "%s = atomicrmw %s %s %s, i%d %s seq_cst", t, opc, ptr_to(L, bits), p, bits,
                 b.txt);
            if (in->op != OP_NOT)
                set_flags(L, opc, (struct val){t, bits, NULL}, b);
            return true;
        }
        if (!read_x(L, dst, bits, false, &a))
            return false;
        if (in->op == OP_NEG) {
            const char *t = tmp(L);
            emit(L, "%s = sub i%d 0, %s", t, bits, a.txt);
            r = (struct val){t, bits, NULL};
            set_flags(L, NULL, r, r);
        } else {
            binop(L, opc, a, b, &r);
            if (in->op != OP_NOT)
                set_flags(L, NULL, r, r);
        }
        return write_x(L, dst, r, bits, false);
    }
    case OP_CMP:
    case OP_TEST:
        if (!need(L, in, 2) || !read_x(L, &x[0], bits, false, &b) ||
            !read_x(L, &x[1], bits, false, &a))
            return false;
        set_flags(L, in->op == OP_CMP ? "sub" : "and", a, b);
        return true;
    case OP_SET:
        if (!need(L, in, 1) || !cond(L, in->cc, &a))
            return false;
        {
            const char *t = tmp(L);
            emit(L, "%s = zext i1 %s to i8", t, a.txt);
            return write_x(L, &x[0], (struct val){t, 8, NULL}, 8, false);
        }
    case OP_XCHG: {
        if (!need(L, in, 2))
            return false;
        const struct xop *m = x[0].k == X_MEM ? &x[0] : x[1].k == X_MEM ? &x[1] : NULL;
        const struct xop *o = m == &x[0] ? &x[1] : &x[0];
        if (!m) { /* two registers */
            if (!read_x(L, &x[0], bits, false, &a) || !read_x(L, &x[1], bits, false, &b))
                return false;
            return write_x(L, &x[0], b, bits, false) && write_x(L, &x[1], a, bits, false);
        }
        const char *p;
        if (o->k == X_MEM || !read_x(L, o, bits, false, &b) || !address(L, m, bits, &p))
            return o->k == X_MEM ? fail(L, "xchg of memory with memory") : false;
        const char *t = tmp(L);
        emit(L, "%s = atomicrmw xchg %s %s, i%d %s seq_cst", t, ptr_to(L, bits), p, bits, b.txt);
        return write_x(L, o, (struct val){t, bits, NULL}, bits, false);
    }
    case OP_XADD: {
        if (!need(L, in, 2) || x[0].k == X_MEM || !read_x(L, &x[0], bits, false, &b))
            return L->err ? false : fail(L, "xadd from memory");
        if (x[1].k != X_MEM) {
            if (!read_x(L, &x[1], bits, false, &a))
                return false;
            binop(L, "add", a, b, &r);
            set_flags(L, NULL, r, r);
            return write_x(L, &x[0], a, bits, false) && write_x(L, &x[1], r, bits, false);
        }
        const char *p;
        if (!address(L, &x[1], bits, &p))
            return false;
        const char *t = tmp(L);
        emit(L, "%s = atomicrmw add %s %s, i%d %s seq_cst", t, ptr_to(L, bits), p, bits, b.txt);
        set_flags(L, "add", (struct val){t, bits, NULL}, b);
        return write_x(L, &x[0], (struct val){t, bits, NULL}, bits, false);
    }
    case OP_CMPXCHG: {
        if (!need(L, in, 2) || x[1].k != X_MEM || x[0].k == X_MEM)
            return fail(L, "cmpxchg whose destination is not memory");
        if (!L->reg[REG_RAX].txt && x[0].k == X_REG && x[0].reg == REG_RAX) {
            /* FreeBSD's atomic_load_acq: `lock cmpxchg %rax, m` with rax
             * never set. Equal, it stores back the value it found; not,
             * it loads it: either way rax ends with m, m is unchanged,
             * and only the flags depend on what rax held. An atomic
             * load, on every compiler; its flags mean nothing. */
            if (!read_x(L, &x[1], bits, true, &a))
                return false;
            L->fl = (struct flags){.kind = F_NONE};
            return reg_write(L, REG_RAX, a, bits);
        }
        struct val acc;
        const char *p;
        if (!read_x(L, &x[0], bits, false, &b) || !as_int(L, L->reg[REG_RAX], bits, &acc) ||
            !address(L, &x[1], bits, &p))
            return false;
        const char *pair = tmp(L), *old = tmp(L), *ok = tmp(L);
        emit(L, "%s = cmpxchg %s %s, i%d %s, i%d %s seq_cst seq_cst", pair, ptr_to(L, bits), p, bits,
             acc.txt, bits, b.txt);
        emit(L, "%s = extractvalue { i%d, i1 } %s, 0", old, bits, pair);
        emit(L, "%s = extractvalue { i%d, i1 } %s, 1", ok, bits, pair);
        L->fl = (struct flags){.kind = F_ZF, .zf = {ok, 1, NULL}};
        return reg_write(L, REG_RAX, (struct val){old, bits, NULL}, bits);
    }
    default: return fail(L, "'%s' is not an instruction dsmcc translates", in->text);
    }
}

/* ---- the call ---- */

struct call {
    const char *res;  /* "%5", or NULL */
    const char *rty;  /* "void", "i32", "{ i8, i64 }" */
    bool        terminator, intel;
    const char *text; /* the assembly, GCC form */
    const char *cons;
    const char *args;
};

/* Reads "  [%r = ][tail ]call RTY asm [sideeffect ...] "...", "..."(args)...". */
static bool read_call(struct lift *L, const char *line, struct call *c)
{
    *c = (struct call){0};
    const char *p = skip_ws(line);
    if (*p == '%') {
        const char *e = strstr(p, " = ");
        if (!e)
            return false;
        c->res = astrndup(&L->ar, p, (size_t)(e - p));
        p = e + 3;
    }
    static const char *const tails[] = {"tail ", "musttail ", "notail ", NULL};
    for (int i = 0; tails[i]; i++)
        if (starts(p, tails[i]))
            p += strlen(tails[i]);
    if (starts(p, "call "))
        p += 5;
    else if (starts(p, "callbr ") || starts(p, "invoke ")) {
        c->terminator = true;
        p += 7; /* both are 7 characters */
    } else
        return false;
    const char *quote = strchr(p, '"');
    if (!quote)
        return false;
    /* " asm " before the first quote: what lies before it ends in the type. */
    const char *as = NULL;
    for (const char *q = p; q + 5 <= quote; q++)
        if (starts(q, " asm "))
            as = q;
    if (!as)
        return false;
    const char *te = as;
    if (te[-1] == '}') {
        int depth = 0;
        const char *tb = te - 1;
        for (; tb >= p; tb--) {
            if (*tb == '}')
                depth++;
            else if (*tb == '{' && --depth == 0)
                break;
        }
        if (tb < p)
            return false;
        if (tb > p && tb[-1] == '<')
            tb--;
        c->rty = astrndup(&L->ar, tb, (size_t)(te - tb));
    } else {
        const char *tb = te;
        while (tb > p && tb[-1] != ' ')
            tb--;
        c->rty = astrndup(&L->ar, tb, (size_t)(te - tb));
    }
    c->intel = strstr(astrndup(&L->ar, as, (size_t)(quote - as)), "inteldialect") != NULL;
    const char *se = skip_group(quote);
    if (!se || !starts(se, ", \""))
        return false;
    c->text = to_gcc(&L->ar, ir_unescape(&L->ar, quote + 1, (size_t)(se - quote - 2)), true);
    const char *cq = se + 2, *ce = skip_group(cq);
    if (!ce || *ce != '(')
        return false;
    c->cons = astrndup(&L->ar, cq + 1, (size_t)(ce - cq - 2));
    const char *ae = skip_group(ce);
    if (!ae)
        return false;
    c->args = astrndup(&L->ar, ce + 1, (size_t)(ae - ce - 2));
    const char *dbg = strstr(ae, "!dbg !");
    if (dbg) {
        const char *e = dbg + 6;
        while (isdigit((unsigned char)*e))
            e++;
        L->dbg = aprintf(&L->ar, ", %.*s", (int)(e - dbg), dbg);
    }
    return true;
}

/* Binds each operand of the constraints to where it lives. */
static bool bind_operands(struct lift *L, const struct call *c)
{
    const char *cons[MAX_OPS * 2], *args[MAX_OPS], *rtys[MAX_OPS];
    int ncons = split_top(&L->ar, c->cons, strlen(c->cons), ',', cons, MAX_OPS * 2);
    int nargs = *c->args ? split_top(&L->ar, c->args, strlen(c->args), ',', args, MAX_OPS) : 0;
    int nres = 0;
    if (ncons < 0 || nargs < 0)
        return fail(L, "too many operands");
    if (c->rty[0] == '{' || c->rty[0] == '<') {
        const char *b = strchr(c->rty, '{'), *e = strrchr(c->rty, '}');
        if (!b || !e || e < b)
            return fail(L, "a result of type %s", c->rty);
        b++;
        nres = split_top(&L->ar, b, (size_t)(e - b), ',', rtys, MAX_OPS);
        if (nres < 0)
            return fail(L, "too many outputs");
    } else if (strcmp(c->rty, "void") != 0)
        rtys[nres++] = c->rty;
    int ai = 0, ri = 0;
    L->nop = 0;
    for (int i = 0; i < ncons; i++) {
        const char *s = cons[i];
        if (*s == '~')
            continue;
        if (*s == '!')
            return fail(L, "asm goto");
        if (L->nop == MAX_OPS)
            return fail(L, "too many operands");
        struct operand *o = &L->op[L->nop];
        *o = (struct operand){.res = -1};
        if (*s == '=') {
            o->output = true;
            s++;
        }
        if (*s == '&')
            s++;
        if (*s == '*') {
            o->indirect = true;
            s++;
        }
        if (strchr(s, '|'))
            return fail(L, "constraints with alternatives");
        if (o->indirect) {
            if (ai == nargs)
                return fail(L, "fewer arguments than operands");
            o->loc = LOC_MEM;
            if (!parse_arg(L, args[ai++], &o->ty, &o->elem, &o->val))
                return fail(L, "an argument dsmcc cannot read");
            if (!is_ptr_type(o->ty))
                return fail(L, "a memory operand that is not a pointer");
            if (strcmp(o->ty, "ptr") == 0)
                L->opaque = true;
            else
                L->opaque = false;
            L->nop++;
            continue;
        }
        if (o->output) {
            if (ri == nres)
                return fail(L, "more outputs than the result holds");
            o->res = ri;
            o->ty = rtys[ri++];
            if (starts(s, "{@cc")) {
                o->loc = LOC_FLAG;
                snprintf(o->cc, sizeof o->cc, "%.*s", (int)strcspn(s + 4, "}"), s + 4);
            } else if (*s == '{') {
                int bits;
                o->loc = LOC_REG;
                o->reg = reg_lookup(s + 1, strcspn(s + 1, "}"), &bits);
                if (o->reg < 0)
                    return fail(L, "the register %s", s);
            } else {
                o->loc = LOC_REG;
                o->reg = NPHYS + L->nop;
            }
            L->nop++;
            continue;
        }
        /* An input: its value, where the constraint says. */
        if (ai == nargs)
            return fail(L, "fewer arguments than operands");
        const char *elem;
        if (!parse_arg(L, args[ai++], &o->ty, &elem, &o->val))
            return fail(L, "an argument dsmcc cannot read");
        if (is_ptr_type(o->ty))
            L->opaque = strcmp(o->ty, "ptr") == 0;
        int init = -1;
        if (isdigit((unsigned char)*s)) {
            long t = strtol(s, NULL, 10);
            if (t < 0 || t >= L->nop || !L->op[t].output)
                return fail(L, "an input tied to no output");
            if (L->op[t].loc == LOC_MEM) {
                /* "+g" or "+rm" made memory: the input is the same memory
                 * (its value argument, a load, is not needed) */
                *o = L->op[t];
                o->output = false;
                L->nop++;
                continue;
            }
            if (L->op[t].loc != LOC_REG)
                return fail(L, "an input tied to a flag");
            o->loc = LOC_REG;
            o->reg = L->op[t].reg;
            init = o->reg;
        } else if (*s == '{') {
            int bits;
            o->loc = LOC_REG;
            o->reg = reg_lookup(s + 1, strcspn(s + 1, "}"), &bits);
            if (o->reg < 0)
                return fail(L, "the register %s", s);
            init = o->reg;
        } else {
            o->loc = LOC_REG;
            o->reg = NPHYS + L->nop;
            init = o->reg;
        }
        if (init >= 0) {
            /* (a float or vector stays unset: reading it is refused) */
            struct val v = opval(L, L->nop);
            if (v.pty || v.bits)
                L->reg[init] = v;
        }
        L->nop++;
    }
    if (ri != nres)
        return fail(L, "a result with more parts than outputs");
    return true;
}

/* The call's result from the outputs' final places, defining c->res. */
static bool write_result(struct lift *L, const struct call *c)
{
    const char *parts[MAX_OPS];
    int         n = 0;
    for (int i = 0; i < L->nop; i++) {
        const struct operand *o = &L->op[i];
        if (o->res < 0)
            continue;
        const char *t = o->ty;
        int         bits = type_bits(t);
        struct val  v;
        if (!bits)
            return fail(L, "an output of type %s", t);
        if (o->loc == LOC_FLAG) {
            if (!cond(L, o->cc, &v))
                return false;
        } else
            v = L->reg[o->reg];
        const char *name = (c->rty[0] == '{' || c->rty[0] == '<' || !c->res) ? tmp(L) : c->res;
        if (!v.txt) {
            parts[n++] = "undef";
            if (name == c->res && name)
                emit(L, "%s = bitcast %s undef to %s", name, t, t);
            continue;
        }
        if (is_ptr_type(t)) {
            if (v.pty && strcmp(v.pty, t) == 0)
                emit(L, "%s = bitcast %s %s to %s", name, t, v.txt, t);
            else {
                if (!as_int(L, v, 64, &v))
                    return false;
                emit(L, "%s = inttoptr i64 %s to %s", name, v.txt, t);
            }
        } else if (fp_bits(t)) {
            if (!as_int(L, v, bits, &v))
                return false;
            emit(L, "%s = bitcast i%d %s to %s", name, bits, v.txt, t);
        } else {
            if (v.pty) {
                if (!as_int(L, v, 64, &v))
                    return false;
            }
            if (v.bits == bits)
                emit(L, "%s = bitcast i%d %s to i%d", name, bits, v.txt, bits);
            else
                emit(L, "%s = %s i%d %s to i%d", name, v.bits > bits ? "trunc" : "zext", v.bits,
                     v.txt, bits);
        }
        parts[n++] = name;
    }
    if (c->rty[0] == '{' || c->rty[0] == '<') {
        const char *agg = "undef";
        int         k = 0;
        for (int i = 0; i < L->nop; i++) {
            const struct operand *o = &L->op[i];
            if (o->res < 0)
                continue;
            const char *t = k == n - 1 && c->res ? c->res : tmp(L);
            emit(L, "%s = insertvalue %s %s, %s %s, %d", t, c->rty, agg, o->ty, parts[k], o->res);
            agg = t;
            k++;
        }
    }
    return true;
}

static void refuse(struct sbuf *why, const char *text, const char *reason)
{
    sb_add(why, "inline assembly '", 17);
    quote_c(why, text);
    sb_printf(why, "' is an atomic dsm cannot make coherent (%s)", reason);
}

/* Whether text names an atomic instruction anywhere: for assembly too
 * long to read statement by statement, judged by its words. */
static bool mentions_atomic(const char *text)
{
    static const char *const words[] = {"lock", "xchg", "cmpxchg", "xadd", NULL};
    for (const char *p = text; *p; p++) {
        if (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
            continue;
        for (int i = 0; words[i]; i++)
            if (strncasecmp(p, words[i], strlen(words[i])) == 0)
                return true;
    }
    return false;
}

enum asm_verdict asm_lift_call(const char *line, bool opaque, unsigned serial, struct sbuf *out,
                               struct sbuf *why)
{
    /* Cheap test first: most lines of a module are not inline assembly. */
    if (!strstr(line, " asm ") || !strchr(line, '"'))
        return ASM_KEEP;
    struct lift *L = calloc(1, sizeof *L);
    if (!L)
        exit(1);
    L->serial = serial;
    L->out = out;
    L->opaque = opaque;
    L->dbg = "";
    struct call      c;
    enum asm_verdict v = ASM_KEEP;
    if (!read_call(L, line, &c))
        goto done;
    L->intel = c.intel;
    /* The operands first: the statements' %N name them. If they cannot
     * be bound, the statements are still read, without them: enough to
     * see whether any is atomic, and to refuse it. */
    bool bound = bind_operands(L, &c);
    const char *bind_err = L->err;
    L->err = NULL;
    if (!bound)
        L->nop = 0;
    bool readable = read_statements(L, c.text);
    int  atomics = 0, movs = 0, real = 0;
    for (int i = 0; i < L->nin; i++) {
        const struct insn *in = &L->in[i];
        atomics += in->atomic;
        if (in->op != OP_NOP && !in->fence)
            real++;
        if (in->op == OP_MOV && in->parsed && in->nx == 2 &&
            (in->x[0].k == X_MEM || in->x[1].k == X_MEM))
            movs++;
    }
    if (L->overflow && mentions_atomic(c.text)) {
        v = ASM_REFUSED;
        refuse(why, c.text, L->err);
        goto done;
    }
    bool lone_mov = atomics == 0 && movs == 1 && real == 1;
    if (atomics == 0 && !lone_mov)
        goto done; /* no atomic: the hardware's, untouched */
    if (atomics == 0 && (!bound || !readable || c.terminator || L->err))
        goto done; /* a store dsmcc could not read stays as it was */
    v = ASM_REFUSED;
    if (atomics > 1) {
        refuse(why, c.text, "several atomic instructions in one statement");
        goto done;
    }
    if (c.terminator) {
        refuse(why, c.text, "asm goto, or an asm that may unwind");
        goto done;
    }
    if (c.intel) {
        refuse(why, c.text, "Intel syntax: dsmcc reads AT&T's");
        goto done;
    }
    if (!bound || !readable) {
        refuse(why, c.text, bound ? L->err : bind_err);
        goto done;
    }
    for (int i = 0; i < L->nin; i++)
        if (!exec(L, &L->in[i], lone_mov))
            break;
    if (!L->err)
        write_result(L, &c);
    if (L->err) {
        if (atomics == 0)
            v = ASM_KEEP; /* a lone mov dsmcc cannot read stays the hardware's */
        else
            refuse(why, c.text, L->err);
        goto done;
    }
    v = ASM_LIFTED;
done:
    if (v != ASM_LIFTED && out->p) {
        out->len = 0;
        out->p[0] = '\0';
    }
    afree(&L->ar);
    free(L);
    return v;
}

enum asm_verdict asm_check_module(const char *text, struct sbuf *why)
{
    struct lift *L = calloc(1, sizeof *L);
    if (!L)
        exit(1);
    enum asm_verdict v = ASM_KEEP;
    const char *gcc = to_gcc(&L->ar, ir_unescape(&L->ar, text, strlen(text)), false);
    read_statements(L, gcc);
    const struct insn *hit = NULL;
    for (int i = 0; i < L->nin && !hit; i++)
        if (L->in[i].atomic)
            hit = &L->in[i];
    if (hit || (L->overflow && mentions_atomic(gcc))) {
        /* The statement as the file has it: its prefix, registers with one %. */
        struct sbuf s = {0};
        if (hit && hit->lock && !starts(hit->text, "lock"))
            sb_add(&s, "lock; ", 6);
        for (const char *p = hit ? hit->text : "lock"; *p; p++)
            if (!(p[0] == '%' && p[1] == '%'))
                sb_add(&s, p, 1);
        sb_add(why, "file-scope assembly '", 21);
        quote_c(why, s.p);
        sb_free(&s);
        sb_printf(why, "' is an atomic dsm cannot make coherent (assembly outside a "
                       "function is not translated)");
        v = ASM_REFUSED;
    }
    afree(&L->ar);
    free(L);
    return v;
}
