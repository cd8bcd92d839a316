#!/bin/sh
# fortran_print_every_line.sh DSMRUN PROG NODES — runs test_fortran_print
# on NODES nodes and checks that every line every node printed arrived,
# whole and once: NODES x 200 distinct "line from T number I" lines, and
# nothing else but the master's last line.
dsmrun=$1 prog=$2 nodes=$3
out=$("$dsmrun" -n "$nodes" --timeout 60 "$prog" 2>&1) || { echo "$out" | tail -5; echo "fortran print: the run failed"; exit 1; }
want=$((nodes * 200))
lines=$(echo "$out" | grep -E '^line from [0-9]+ number [0-9]+$' | sort -u | wc -l)
# AddressSanitizer's one-time note on swapcontext (make sanitize) is its own.
other=$(echo "$out" | grep -v "^==[0-9]*==WARNING: ASan doesn't fully support makecontext" |
        grep -vcE "^(line from [0-9]+ number [0-9]+|printed on $nodes threads)\$")
if [ "$lines" -ne "$want" ] || [ "$other" -ne 0 ] || ! echo "$out" | grep -qx "printed on $nodes threads"; then
    echo "fortran print: $lines distinct lines of $want, $other lines garbled or unexpected"
    exit 1
fi
echo "fortran print: all $want lines on $nodes nodes"
