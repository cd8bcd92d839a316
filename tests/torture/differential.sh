#!/bin/sh
# differential.sh — the torture test's differential run (issue 54): the same
# generated programs on threads of one process (torture_hw: plain pthreads,
# hardware shared memory, no dsm), then on dsm, whose participant 0 compares
# every object's bytes with the threads run's after every phase (--dump,
# --reference; tests/torture/torture.c). A difference ends the job naming
# the program, the phase, the object, the byte and the write the model last
# saw there.
#
#   differential.sh DSMRUN TORTURE_HW TORTURE TIMEOUT NODES THREADS PROTOCOL [torture args..]
#
# THREADS above 1 runs dsm fork style under dsmrun --threads (hlrc), and the
# threads run with NODES x THREADS participants. The reference lies in a
# temporary file, removed at the end; KEEP_REFERENCE=FILE keeps it there.
# FLIP_REFERENCE_BYTE=N inverts byte N of the reference before the dsm run
# (the test that a difference is reported: byte 64 is the first object's
# first byte after the first program's allocation).
set -eu
if [ $# -lt 7 ]; then
    echo "usage: differential.sh DSMRUN TORTURE_HW TORTURE TIMEOUT NODES THREADS PROTOCOL [args..]" >&2
    exit 2
fi
dsmrun=$1 hw=$2 torture=$3 timeout=$4 nodes=$5 threads=$6 protocol=$7
shift 7
participants=$((nodes * threads))
if [ -n "${KEEP_REFERENCE:-}" ]; then
    ref=$KEEP_REFERENCE
else
    ref=$(mktemp "${TMPDIR:-/tmp}/torture-reference.XXXXXX")
    trap 'rm -f "$ref"' EXIT
fi
echo "differential: the threads run: $hw --participants $participants $* --dump $ref"
"$hw" --participants "$participants" "$@" --dump "$ref"
if [ -n "${FLIP_REFERENCE_BYTE:-}" ]; then
    old=$(od -An -tu1 -j "$FLIP_REFERENCE_BYTE" -N1 "$ref" | tr -d ' ')
    printf "$(printf '\\%03o' $((255 - old)))" |
        dd of="$ref" bs=1 seek="$FLIP_REFERENCE_BYTE" conv=notrunc status=none
    echo "differential: byte $FLIP_REFERENCE_BYTE of the reference inverted (was $old)"
fi
if [ "$threads" -gt 1 ]; then
    set -- --threads "$threads" "$torture" --fork "$@"
else
    set -- "$torture" "$@"
fi
echo "differential: on dsm: $dsmrun -n $nodes --timeout $timeout --protocol $protocol $* --reference $ref"
"$dsmrun" -n "$nodes" --timeout "$timeout" --protocol "$protocol" "$@" --reference "$ref"
