/*
 * remote.c — the job description dsmrun sends its agents (remote.h).
 *
 * Strings travel hex-encoded, so that a newline or any other byte in an
 * argument, a value or a path cannot break the line format; every number is
 * checked against its range before use.
 */
#include "remote.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    SEEN_VERSION = 1u << 0, SEEN_HOST = 1u << 1, SEEN_JOB = 1u << 2, SEEN_KEY = 1u << 3,
    SEEN_NODES = 1u << 4, SEEN_RANKS = 1u << 5, SEEN_LAUNCH = 1u << 6, SEEN_TAG = 1u << 7,
    SEEN_CWD = 1u << 8,
    SEEN_ALL = (1u << 9) - 1,
};

static const char hexdigits[] = "0123456789abcdef";

static void hex_put(char *out, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = hexdigits[p[i] >> 4];
        out[2 * i + 1] = hexdigits[p[i] & 15];
    }
    out[2 * len] = 0;
}

static int hex_val(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Decodes hex text into out[0..len); -1 on a bad digit or length. */
static int hex_get(const char *hex, void *out, size_t len)
{
    unsigned char *p = out;
    if (strlen(hex) != 2 * len)
        return -1;
    for (size_t i = 0; i < len; i++) {
        int hi = hex_val(hex[2 * i]), lo = hex_val(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        p[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

/* A hex-encoded string; NULL on bad input (a NUL byte included). */
static char *hex_string(const char *hex)
{
    size_t n = strlen(hex);
    if (n % 2)
        return NULL;
    char *s = malloc(n / 2 + 1);
    if (!s)
        return NULL;
    if (hex_get(hex, s, n / 2) < 0 || memchr(s, 0, n / 2)) {
        free(s);
        return NULL;
    }
    s[n / 2] = 0;
    return s;
}

struct text {
    char  *buf;
    size_t len, cap;
    bool   failed;
};

static void text_add(struct text *t, const char *word, const char *value, bool hex)
{
    size_t vlen = strlen(value), need = strlen(word) + 1 + (hex ? 2 * vlen : vlen) + 2;
    if (t->failed)
        return;
    if (t->len + need > t->cap) {
        size_t cap = t->cap ? t->cap : 1024;
        while (cap < t->len + need)
            cap *= 2;
        char *b = realloc(t->buf, cap);
        if (!b) {
            t->failed = true;
            return;
        }
        t->buf = b;
        t->cap = cap;
    }
    t->len += (size_t)sprintf(t->buf + t->len, "%s ", word);
    if (hex) {
        hex_put(t->buf + t->len, value, vlen);
        t->len += 2 * vlen;
    } else {
        memcpy(t->buf + t->len, value, vlen);
        t->len += vlen;
    }
    t->buf[t->len++] = '\n';
    t->buf[t->len] = 0;
}

char *remote_job_format(const struct remote_job *j)
{
    struct text t = {0};
    char num[64], key[2 * REMOTE_KEY_BYTES + 1];

    text_add(&t, "dsmrun-job", REMOTE_VERSION, false);
    text_add(&t, "host", j->host, true);
    snprintf(num, sizeof num, "%016" PRIx64, j->job_id);
    text_add(&t, "job", num, false);
    hex_put(key, j->key, sizeof j->key);
    text_add(&t, "key", key, false);
    snprintf(num, sizeof num, "%d", j->nodes);
    text_add(&t, "nodes", num, false);
    snprintf(num, sizeof num, "%d %d", j->first_rank, j->ranks);
    text_add(&t, "ranks", num, false);
    snprintf(num, sizeof num, "%" PRIu64, j->launch_ns);
    text_add(&t, "launch", num, false);
    text_add(&t, "tag", j->tag_output ? "1" : "0", false);
    text_add(&t, "cwd", j->cwd, true);
    for (int i = 0; i < j->nenv; i++)
        text_add(&t, "env", j->env[i], true);
    for (int i = 0; i < j->argc; i++)
        text_add(&t, "arg", j->argv[i], true);
    text_add(&t, "go", "", false);
    memset(key, 0, sizeof key);
    if (t.failed) {
        free(t.buf);
        return NULL;
    }
    return t.buf;
}

static int parse_int(const char *s, long min, long max, long *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int append(char ***list, int *count, char *s, bool null_end)
{
    char **l = realloc(*list, (size_t)(*count + 1 + null_end) * sizeof *l);
    if (!l)
        return -1;
    l[(*count)++] = s;
    if (null_end)
        l[*count] = NULL;
    *list = l;
    return 0;
}

int remote_job_line(struct remote_job *j, const char *line, char *err, size_t errlen)
{
    const char *sp = strchr(line, ' ');
    size_t wlen = sp ? (size_t)(sp - line) : strlen(line);
    const char *v = sp ? sp + 1 : "";
    long a, b;

#define WORD(w) (wlen == sizeof(w) - 1 && !strncmp(line, w, wlen))
    if (j->complete) {
        snprintf(err, errlen, "job description continues after 'go'");
        return -1;
    }
    if (!(j->seen & SEEN_VERSION) && !WORD("dsmrun-job")) {
        snprintf(err, errlen, "not a dsmrun job description (a different dsmrun version?)");
        return -1;
    }
    if (WORD("dsmrun-job")) {
        if (strcmp(v, REMOTE_VERSION)) {
            snprintf(err, errlen, "job description version %.16s, expected " REMOTE_VERSION
                     " (dsmrun differs between the hosts)", v);
            return -1;
        }
        j->seen |= SEEN_VERSION;
    } else if (WORD("host")) {
        free(j->host);
        if (!(j->host = hex_string(v)))
            goto bad;
        j->seen |= SEEN_HOST;
    } else if (WORD("job")) {
        if (strlen(v) != 16 || strspn(v, hexdigits) != 16)
            goto bad;
        j->job_id = strtoull(v, NULL, 16);
        j->seen |= SEEN_JOB;
    } else if (WORD("key")) {
        if (hex_get(v, j->key, sizeof j->key) < 0)
            goto bad;
        j->seen |= SEEN_KEY;
    } else if (WORD("nodes")) {
        if (parse_int(v, 1, 1 << 20, &a) < 0)
            goto bad;
        j->nodes = (int)a;
        j->seen |= SEEN_NODES;
    } else if (WORD("ranks")) {
        char first[16], count[16];
        if (sscanf(v, "%15s %15s", first, count) != 2 || parse_int(first, 0, 1 << 20, &a) < 0 ||
            parse_int(count, 1, 1 << 20, &b) < 0 || strlen(first) + 1 + strlen(count) != strlen(v))
            goto bad;
        j->first_rank = (int)a;
        j->ranks = (int)b;
        j->seen |= SEEN_RANKS;
    } else if (WORD("launch")) {
        char *end;
        errno = 0;
        unsigned long long t = strtoull(v, &end, 10);
        if (errno || end == v || *end || *v == '-')
            goto bad;
        j->launch_ns = t;
        j->seen |= SEEN_LAUNCH;
    } else if (WORD("tag")) {
        if (strcmp(v, "0") && strcmp(v, "1"))
            goto bad;
        j->tag_output = *v == '1';
        j->seen |= SEEN_TAG;
    } else if (WORD("cwd")) {
        free(j->cwd);
        if (!(j->cwd = hex_string(v)))
            goto bad;
        j->seen |= SEEN_CWD;
    } else if (WORD("env")) {
        char *s = hex_string(v);
        if (!s || !strchr(s, '=') || *s == '=' || append(&j->env, &j->nenv, s, false) < 0) {
            free(s);
            goto bad;
        }
    } else if (WORD("arg")) {
        char *s = hex_string(v);
        if (!s || append(&j->argv, &j->argc, s, true) < 0) {
            free(s);
            goto bad;
        }
    } else if (WORD("go")) {
        if (j->seen != SEEN_ALL || j->argc == 0) {
            snprintf(err, errlen, "job description incomplete");
            return -1;
        }
        if (j->first_rank + j->ranks > j->nodes) {
            snprintf(err, errlen, "ranks %d..%d outside a job of %d nodes", j->first_rank,
                     j->first_rank + j->ranks - 1, j->nodes);
            return -1;
        }
        j->complete = true;
    } else {
        snprintf(err, errlen, "unknown line '%.*s' in the job description", (int)wlen, line);
        return -1;
    }
    return 0;
#undef WORD
bad:
    snprintf(err, errlen, "bad '%.*s' line in the job description", (int)wlen, line);
    return -1;
}

void remote_job_free(struct remote_job *j)
{
    free(j->host);
    free(j->cwd);
    for (int i = 0; i < j->nenv; i++)
        free(j->env[i]);
    free(j->env);
    for (int i = 0; i < j->argc; i++)
        free(j->argv[i]);
    free(j->argv);
    memset(j, 0, sizeof *j);
}

char *remote_shell_quote(const char *s)
{
    size_t n = 3;
    for (const char *p = s; *p; p++)
        n += *p == '\'' ? 4 : 1;
    char *q = malloc(n), *o = q;
    if (!q)
        return NULL;
    *o++ = '\'';
    for (const char *p = s; *p; p++) {
        if (*p == '\'') {
            memcpy(o, "'\\''", 4);
            o += 4;
        } else {
            *o++ = *p;
        }
    }
    *o++ = '\'';
    *o = 0;
    return q;
}
