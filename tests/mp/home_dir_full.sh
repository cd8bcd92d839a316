#!/usr/bin/env bash
# A home file whose disk fills up ends the job with a clear error, naming
# DSM_HOME_DIR, not a bare SIGBUS. The disk is a 512 KiB tmpfs mounted in
# a user and mount namespace of our own (no privileges needed).
# Usage: home_dir_full.sh DSMRUN PROG [ARGS...]
set -u
dsmrun=$1; shift
dir=$(mktemp -d "${TMPDIR:-/tmp}/dsm-home-full.XXXXXX") || exit 1
trap 'rmdir "$dir"' EXIT
unshare -rm bash -c 'mount -t tmpfs -o size=512k none "$0" || exit 3
                     DSM_HOME_DIR="$0" "$@"' "$dir" "$dsmrun" -n 2 --timeout 60 "$@"
