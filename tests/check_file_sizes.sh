#!/bin/sh
# check_file_sizes.sh SRC_DIR — one concern a file (docs/design.md): names
# every file of src/ above 800 lines, a file that may be holding more than
# one, and fails on any above 1,000, which is.
set -u
src=$1
soft=800
hard=1000
over=0
for f in "$src"/src/*/*.[ch]; do
    n=$(wc -l < "$f")
    if [ "$n" -gt "$hard" ]; then
        echo "${f#"$src"/}: $n lines, above $hard: split it by concern"
        over=$((over + 1))
    elif [ "$n" -gt "$soft" ]; then
        echo "${f#"$src"/}: $n lines, above $soft: does it hold one concern?"
    fi
done
[ "$over" = 0 ] || exit 1
echo "no file of src/ above $hard lines"
