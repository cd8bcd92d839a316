/*
 * hostlist.c — parsing host lists and placing ranks on hosts (hostlist.h).
 *
 * A host name goes to ssh as an argument, so it is held to what a host name
 * or an IPv4 address can be: letters, digits, '.', '-' and '_', never
 * starting with '-' (ssh would read it as an option).
 */
#include "hostlist.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static int valid_name(const char *s, size_t len)
{
    if (len == 0 || len > HOSTLIST_NAME_MAX || s[0] == '-' || s[0] == '.')
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '-' && s[i] != '_')
            return 0;
    return 1;
}

/* Digits only, 1..HOSTLIST_MAX_SLOTS. */
static int parse_slots(const char *s, size_t len)
{
    if (len == 0 || len > 3)
        return -1;
    int v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v >= 1 && v <= HOSTLIST_MAX_SLOTS ? v : -1;
}

static int add_host(struct hostlist *hl, const char *name, size_t len, int slots,
                    const char *where, char *err, size_t errlen)
{
    if (!valid_name(name, len)) {
        char shown[65];   /* what the user wrote, unprintable bytes as '?' */
        size_t n = len < 64 ? len : 64;
        for (size_t i = 0; i < n; i++)
            shown[i] = isprint((unsigned char)name[i]) ? name[i] : '?';
        shown[n] = 0;
        snprintf(err, errlen, "%s: '%s' is not a host name (letters, digits, '.', '-', '_')",
                 where, shown);
        return -1;
    }
    if (hl->count == HOSTLIST_MAX_HOSTS) {
        snprintf(err, errlen, "%s: more than %d hosts", where, HOSTLIST_MAX_HOSTS);
        return -1;
    }
    struct host_entry *h = &hl->hosts[hl->count++];
    memcpy(h->name, name, len);
    h->name[len] = 0;
    h->slots = slots;
    h->first_rank = h->ranks = 0;
    hl->slots += slots;
    return 0;
}

/* One "name" or "name:slots" of len bytes. */
static int parse_item(struct hostlist *hl, const char *item, size_t len, const char *where,
                      char *err, size_t errlen)
{
    const char *colon = memchr(item, ':', len);
    int slots = 1;
    size_t name_len = len;
    if (colon) {
        name_len = (size_t)(colon - item);
        size_t slen = len - name_len - 1;
        slots = parse_slots(colon + 1, slen);
        if (slots < 0) {
            snprintf(err, errlen, "%s: '%.*s' needs a whole number of slots from 1 to %d after ':'",
                     where, (int)(len > 64 ? 64 : len), item, HOSTLIST_MAX_SLOTS);
            return -1;
        }
    }
    return add_host(hl, item, name_len, slots, where, err, errlen);
}

int hostlist_parse(struct hostlist *hl, const char *list, char *err, size_t errlen)
{
    memset(hl, 0, sizeof *hl);
    const char *p = list;
    for (int i = 1;; i++) {
        size_t len = strcspn(p, ",");
        char where[48];
        snprintf(where, sizeof where, "--hosts entry %d", i);
        if (len == 0) {
            snprintf(err, errlen, "%s is empty", where);
            return -1;
        }
        if (parse_item(hl, p, len, where, err, errlen) < 0)
            return -1;
        if (!p[len])
            return 0;
        p += len + 1;
    }
}

static const char *skip_blanks(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
        p++;
    return p;
}

int hostlist_parse_file(struct hostlist *hl, const char *text, const char *file,
                        char *err, size_t errlen)
{
    memset(hl, 0, sizeof *hl);
    const char *p = text;
    for (int line = 1; *p; line++) {
        const char *eol = strchr(p, '\n');
        const char *end = eol ? eol : p + strlen(p);
        const char *hash = memchr(p, '#', (size_t)(end - p));
        const char *stop = hash ? hash : end;
        char where[300];
        snprintf(where, sizeof where, "%.256s line %d", file, line);

        const char *w = skip_blanks(p, stop);
        const char *name_end = w;
        while (name_end < stop && *name_end != ' ' && *name_end != '\t' && *name_end != '\r')
            name_end++;
        if (name_end > w) {
            const char *rest = skip_blanks(name_end, stop);
            const char *rest_end = stop;
            while (rest_end > rest && (rest_end[-1] == ' ' || rest_end[-1] == '\t' ||
                                       rest_end[-1] == '\r'))
                rest_end--;
            if (rest == rest_end) {
                if (parse_item(hl, w, (size_t)(name_end - w), where, err, errlen) < 0)
                    return -1;
            } else {
                int slots = (size_t)(rest_end - rest) > 6 && !strncmp(rest, "slots=", 6)
                                ? parse_slots(rest + 6, (size_t)(rest_end - rest - 6)) : -1;
                if (slots < 0 || memchr(w, ':', (size_t)(name_end - w))) {
                    snprintf(err, errlen, "%s: expected 'host', 'host:N' or 'host slots=N'",
                             where);
                    return -1;
                }
                if (add_host(hl, w, (size_t)(name_end - w), slots, where, err, errlen) < 0)
                    return -1;
            }
        }
        p = eol ? eol + 1 : end;
    }
    if (hl->count == 0) {
        snprintf(err, errlen, "%.256s names no host", file);
        return -1;
    }
    return 0;
}

int hostlist_assign(struct hostlist *hl, int nodes, char *err, size_t errlen)
{
    if (nodes == 0)
        nodes = hl->slots;
    if (nodes > hl->slots) {
        snprintf(err, errlen, "-n %d needs %d slots, but the host list gives %d", nodes, nodes,
                 hl->slots);
        return -1;
    }
    int rank = 0;
    for (int i = 0; i < hl->count; i++) {
        struct host_entry *h = &hl->hosts[i];
        h->first_rank = rank;
        h->ranks = nodes - rank < h->slots ? nodes - rank : h->slots;
        rank += h->ranks;
    }
    return nodes;
}
