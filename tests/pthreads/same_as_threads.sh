#!/bin/sh
# same_as_threads.sh PLAIN DSMPROG DSMRUN NODES THREADS [ARGS...] — a
# pthreads program gives the same output built plainly (PLAIN, cc -pthread)
# as built with dsmcc (DSMPROG) with its threads spread over NODES nodes,
# THREADS per node (dsmrun --threads), and every node ran some of them
# (--stats: "program threads (pthread_create) run on this node", nonzero
# in every node's column; with one thread per node, node 0's is main, which
# the count leaves out: nonzero in every other node's). On one node the
# threads are the C library's, one process's: the outputs alone.
set -eu
plain=$1 prog=$2 dsmrun=$3 nodes=$4 threads=$5
shift 5
want=$("$plain" "$@")
out=$("$dsmrun" -n "$nodes" --threads "$threads" --timeout 120 --stats "$prog" "$@")
# The program's lines: what comes before the statistics' blank line and
# heading.
got=$(printf '%s\n' "$out" | sed '/^== dsm statistics/,$d' | sed '$ { /^$/d; }')
echo "plain: $want"
echo "dsm:   $got"
[ "$got" = "$want" ] || { echo "FAILED: the outputs differ"; exit 1; }
case $(printf '%s\n' "$want" | tail -n 1) in *": ok") ;; *) echo "FAILED: the program's own check"; exit 1 ;; esac
[ "$nodes" -gt 1 ] || { echo "PASSED"; exit 0; }
line=$(printf '%s\n' "$out" | grep "program threads (pthread_create) run on this node") || {
    echo "FAILED: no per-node thread count in --stats"; exit 1; }
echo "stats: $line"
counts=$(printf '%s\n' "$line" | sed 's/.*run on this node//')
n=0
for c in $counts; do
    if [ "$n" -gt 0 ] || [ "$threads" -gt 1 ]; then
        [ "$c" -gt 0 ] || { echo "FAILED: node $n ran no thread"; exit 1; }
    fi
    n=$((n + 1))
done
[ "$n" -eq "$nodes" ] || { echo "FAILED: $n nodes in the count, not $nodes"; exit 1; }
echo "PASSED"
