/*
 * hostlist.h — the hosts of a multi-host job (dsmrun --hosts / --hostfile).
 *
 * A host list names hosts and how many nodes each takes ("slots"): on the
 * command line "h1,h2:2,10.0.0.3:4"; in a file one host a line, "h2:2" or
 * "h2 slots=2" (Open MPI's spelling), with '#' comments and blank lines.
 * Nodes fill the hosts in order, each up to its slots, so ranks on one host
 * are consecutive. The parsers are pure: they read a string and fill a
 * struct, and on bad input write one line saying what and where.
 */
#ifndef DSM_TOOLS_HOSTLIST_H
#define DSM_TOOLS_HOSTLIST_H

#include <stddef.h>

#define HOSTLIST_NAME_MAX  253   /* a DNS name */
#define HOSTLIST_MAX_HOSTS 256
#define HOSTLIST_MAX_SLOTS 256

struct host_entry {
    char name[HOSTLIST_NAME_MAX + 1];
    int  slots;
    int  first_rank, ranks;      /* set by hostlist_assign; ranks may be 0 */
};

struct hostlist {
    struct host_entry hosts[HOSTLIST_MAX_HOSTS];
    int               count;
    int               slots;     /* sum over hosts */
};

/* "h1,h2:2,...". Returns 0, or -1 with one line in err. */
int hostlist_parse(struct hostlist *hl, const char *list, char *err, size_t errlen);

/* The text of a host file; `file` names it in messages. */
int hostlist_parse_file(struct hostlist *hl, const char *text, const char *file,
                        char *err, size_t errlen);

/* Gives ranks 0..nodes-1 to the hosts in order, each up to its slots.
 * nodes 0 means one node per slot. Returns the node count, or -1 with err
 * when the slots are too few. */
int hostlist_assign(struct hostlist *hl, int nodes, char *err, size_t errlen);

#endif
