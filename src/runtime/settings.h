/*
 * settings.h — the settings whose text only a layer above base can judge
 * (a directory, a file to write, a loop schedule, an address to bind),
 * checked after config.c's table has checked every value's type and range.
 *
 * dsmrun calls it before any node starts and every node at dsm_startup
 * (a node started by srun or mpirun has no dsmrun before it): one set of
 * rules, said once by dsmrun in one line.
 */
#ifndef DSM_RUNTIME_SETTINGS_H
#define DSM_RUNTIME_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/config.h"

/* Checks DSM_HOME_DIR (a directory where the home file can be created),
 * DSM_TRACE and DSM_PROFILE (FILE.<rank> can be written), DSM_OMP_STATIC
 * (a schedule static loops take) and DSM_NET_BIND (an IPv4 address, any,
 * or an interface of this host that is up). `here`: the nodes run on this
 * host, so its file system and interfaces are theirs; without it only what
 * holds everywhere is checked. Returns 0, or -EINVAL with one line naming
 * the setting in err. */
int settings_check(const struct dsm_config *cfg, bool here, char *err, size_t errlen);

/* Whether a file can be written at path, creating or changing nothing: an
 * existing file is opened without truncation, a new one's directory is
 * checked. Returns 0, or -EINVAL with the reason in why. */
int settings_file_writable(const char *path, char *why, size_t whylen);

#endif
