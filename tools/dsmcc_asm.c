/*
 * dsmcc_asm.c — dsmcc-asm: a module of textual LLVM IR with its inline-
 * assembly atomics made LLVM atomic instructions (asm_lift.h), which
 * dsmcc's ThreadSanitizer step then makes coherent across nodes; or the
 * first one it cannot translate, named by file and line.
 *
 *     dsmcc-asm < in.ll > out.ll
 *
 * Exit status 0: out.ll written. 3: refused; one line on stderr,
 * "FILE:LINE: inline assembly '...' is an atomic dsm cannot make coherent
 * (why); use ...". 4: the same without FILE:LINE: the module has no debug
 * location for it, and dsmcc compiles the source again with
 * -gline-tables-only to name the line (the statement's !srcloc is an
 * offset only clang itself can map). 1: not IR it can read.
 *
 * A tool of its own, in C, rather than awk in dsmcc like the other IR
 * steps: the statements are interpreted over a model of the registers
 * (Phoenix's fetch_and_inc is `movl $1, %0; lock xaddl %0, (%1)`), which
 * wants data structures; and it reads text only, so it serves whatever
 * LLVM version the frontend is.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "asm_lift.h"

#define ADVICE "use __atomic builtins or C11 atomics (docs/unmodified-programs.md)"

struct module {
    char        *buf;
    char       **line;
    size_t       nline;
    const char **meta; /* !N's line, by N */
    size_t       nmeta;
};

static void read_all(FILE *f, struct module *m)
{
    struct sbuf b = {0};
    char        chunk[65536];
    size_t      n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        sb_add(&b, chunk, n);
    if (!b.p)
        sb_add(&b, "", 0);
    m->buf = b.p;
    size_t cap = 1024;
    m->line = malloc(cap * sizeof *m->line);
    if (!m->line)
        exit(1);
    for (char *p = m->buf; *p;) {
        if (m->nline == cap) {
            cap *= 2;
            m->line = realloc(m->line, cap * sizeof *m->line);
            if (!m->line)
                exit(1);
        }
        m->line[m->nline++] = p;
        char *e = strchr(p, '\n');
        if (!e)
            break;
        *e = '\0';
        p = e + 1;
    }
}

/* Metadata by number: the debug locations' lines, scopes and files. */
static void index_metadata(struct module *m)
{
    for (size_t i = 0; i < m->nline; i++) {
        const char *l = m->line[i];
        if (l[0] != '!' || !isdigit((unsigned char)l[1]))
            continue;
        char         *e;
        unsigned long id = strtoul(l + 1, &e, 10);
        if (strncmp(e, " = ", 3) != 0 || id > 100000000)
            continue;
        if (id >= m->nmeta) {
            size_t n = m->nmeta ? m->nmeta : 1024;
            while (n <= id)
                n *= 2;
            m->meta = realloc(m->meta, n * sizeof *m->meta);
            if (!m->meta)
                exit(1);
            memset(m->meta + m->nmeta, 0, (n - m->nmeta) * sizeof *m->meta);
            m->nmeta = n;
        }
        m->meta[id] = e + 3;
    }
}

static const char *meta(const struct module *m, const char *ref)
{
    if (!ref || ref[0] != '!' || !isdigit((unsigned char)ref[1]))
        return NULL;
    unsigned long id = strtoul(ref + 1, NULL, 10);
    return id < m->nmeta ? m->meta[id] : NULL;
}

/* The value of field `name: ` in a metadata node, or NULL. */
static const char *field(const char *node, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = node; p && (p = strstr(p, name)); p += n)
        if (p > node && (p[-1] == '(' || p[-1] == ' ') && p[n] == ':' && p[n + 1] == ' ')
            return p + n + 2;
    return NULL;
}

/* An IR string's contents ("...", escapes decoded) into out. */
static void string_field(const char *p, char *out, size_t len)
{
    size_t o = 0;
    if (!p || *p != '"') {
        out[0] = '\0';
        return;
    }
    for (p++; *p && *p != '"' && o + 1 < len; p++) {
        if (*p == '\\' && isxdigit((unsigned char)p[1]) && isxdigit((unsigned char)p[2])) {
            char h[3] = {p[1], p[2], 0};
            out[o++] = (char)strtol(h, NULL, 16);
            p += 2;
        } else
            out[o++] = *p;
    }
    out[o] = '\0';
}

/* "file:line" of the call's !dbg location, or false. The line is where
 * the asm statement is written (an inlined helper's own line, in its
 * header); its file is its scope's, followed outward. */
static bool locate(const struct module *m, size_t at, char *out, size_t len)
{
    const char *dbg = strstr(m->line[at], "!dbg !");
    /* asm goto (callbr) prints its labels and location on a line of their own */
    if (!dbg && at + 1 < m->nline && strstr(m->line[at + 1], " to label "))
        dbg = strstr(m->line[at + 1], "!dbg !");
    const char *loc = dbg ? meta(m, dbg + 5) : NULL;
    if (!loc || strncmp(loc, "!DILocation(", 12) != 0)
        return false;
    const char *ln = field(loc, "line");
    if (!ln)
        return false;
    long        line = strtol(ln, NULL, 10);
    const char *scope = meta(m, field(loc, "scope"));
    for (int hops = 0; scope && hops < 100; hops++) {
        const char *file = meta(m, field(scope, "file"));
        if (file) {
            char name[4096], dir[4096], path[8200], cwd[4096];
            string_field(field(file, "filename"), name, sizeof name);
            string_field(field(file, "directory"), dir, sizeof dir);
            if (!name[0])
                return false;
            /* The file as the user sees it: the name joined to its
             * directory (clang makes some relative to another than the
             * compiler's), relative to here when it lies below. */
            if (name[0] == '/' || !dir[0])
                snprintf(path, sizeof path, "%s", name);
            else
                snprintf(path, sizeof path, "%s/%s", dir, name);
            size_t n = getcwd(cwd, sizeof cwd) ? strlen(cwd) : 0;
            const char *shown = path;
            if (n > 1 && strncmp(path, cwd, n) == 0 && path[n] == '/')
                shown = path + n + 1;
            snprintf(out, len, "%.8200s:%ld", shown, line);
            return true;
        }
        scope = meta(m, field(scope, "scope"));
    }
    return false;
}

/* Whether the module's pointers are opaque (`ptr`, LLVM 15 and later):
 * a `ptr` type anywhere in a declaration or a define. */
static bool opaque_pointers(const struct module *m)
{
    for (size_t i = 0; i < m->nline; i++) {
        const char *l = m->line[i];
        if (strncmp(l, "define ", 7) != 0 && strncmp(l, "declare ", 8) != 0 && l[0] != '@')
            continue;
        for (const char *p = l; (p = strstr(p, "ptr")); p += 3)
            if (p > l && strchr(" (,", p[-1]) && strchr(" ,)", p[3]))
                return true;
    }
    return false;
}

int main(int argc, char **argv)
{
    if (argc != 1) {
        fprintf(stderr, "usage: %s < in.ll > out.ll (dsmcc runs it; tools/dsmcc_asm.c)\n", argv[0]);
        return 1;
    }
    struct module m = {0};
    read_all(stdin, &m);
    index_metadata(&m);
    bool opaque = opaque_pointers(&m);

    struct sbuf why = {0}, out = {0}, file_asm = {0};
    int         status = 0;
    char        where[8400] = "";
    /* File-scope assembly, every `module asm` line of it together: a lock
     * prefix may end one line and its instruction begin the next. */
    for (size_t i = 0; i < m.nline; i++) {
        const char *l = m.line[i];
        if (strncmp(l, "module asm \"", 12) != 0)
            continue;
        const char *e = strrchr(l + 12, '"');
        if (!e)
            continue;
        if (file_asm.len)
            sb_add(&file_asm, "\\0A", 3);
        sb_add(&file_asm, l + 12, (size_t)(e - (l + 12)));
    }
    if (file_asm.len && asm_check_module(file_asm.p, &why) == ASM_REFUSED) {
        status = 4;
        for (size_t i = 0; i < m.nline; i++)
            if (strncmp(m.line[i], "source_filename = ", 18) == 0) {
                char name[4096];
                string_field(m.line[i] + 18, name, sizeof name);
                if (name[0]) {
                    snprintf(where, sizeof where, "%s", name);
                    status = 3;
                }
            }
    }

    unsigned serial = 0;
    for (size_t i = 0; i < m.nline && !status; i++) {
        const char *l = m.line[i];
        out.len = 0;
        switch (asm_lift_call(l, opaque, serial, &out, &why)) {
        case ASM_KEEP:
            fputs(l, stdout);
            fputc('\n', stdout);
            break;
        case ASM_LIFTED:
            serial++;
            fwrite(out.p, 1, out.len, stdout);
            break;
        case ASM_REFUSED:
            status = locate(&m, i, where, sizeof where) ? 3 : 4;
            break;
        }
    }
    if (status == 3)
        fprintf(stderr, "%s: %s; " ADVICE "\n", where, why.p);
    else if (status == 4)
        fprintf(stderr, "%s; " ADVICE "\n", why.p);
    if (fflush(stdout) != 0 && !status) {
        perror("dsmcc-asm: writing the IR");
        status = 1;
    }
    sb_free(&why);
    sb_free(&out);
    sb_free(&file_asm);
    free(m.buf);
    free(m.line);
    free(m.meta);
    return status;
}
