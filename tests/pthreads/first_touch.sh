#!/bin/sh
# first_touch.sh DSMRUN PROG NODES THREADS [ARGS...] — a dsmcc program's
# pages are homed where first touched with threads on a node too: its
# workers on node 1 fill their blocks at home. Node 1's diff bytes (--stats,
# homes kept where placed: DSM_MIGRATE_HOMES=0) by default must be under an
# eighth of what it creates with every page homed on the allocating node
# (DSM_HOME=local), and both runs must pass the program's own check.
set -eu
dsmrun=$1 prog=$2 nodes=$3 threads=$4
shift 4
diff_bytes() {
    out=$("$dsmrun" -n "$nodes" --threads "$threads" --timeout 120 --stats \
        --env DSM_MIGRATE_HOMES=0 "$@") || { echo "FAILED: the job failed ($*)"; exit 1; }
    printf '%s\n' "$out" | grep -q ': ok$' || { echo "FAILED: the program's own check ($*)"; exit 1; }
    printf '%s\n' "$out" | awk '/^  diff bytes created/ { print $5; found = 1 } END { if (!found) print "none" }'
}
first=$(diff_bytes "$prog" "$@")
local_=$(diff_bytes --env DSM_HOME=local "$prog" "$@")
echo "node 1's diff bytes: first touch (default) $first, DSM_HOME=local $local_"
case "$first$local_" in *none*) echo "FAILED: no diff bytes line in --stats"; exit 1 ;; esac
[ "$local_" -gt 0 ] || { echo "FAILED: no diff with every page homed on node 0: the test shows nothing"; exit 1; }
[ $((first * 8)) -lt "$local_" ] || { echo "FAILED: the default did not home the workers' pages where they wrote"; exit 1; }
echo "PASSED"
