#!/bin/bash
# readme_exit_statuses.sh — every exit status dsmrun chooses itself
# (tools/launcher.h's EXIT_* but EXIT_EXEC_FAILED, which is a node's own
# status, "the first failing node's"), and 255, ssh's for a lost connection,
# which a multi-host job passes on, are in README.md's list of dsmrun's exit
# statuses.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
# The README's sentence, from "Exit status:" to its end.
list=$(tr '\n' ' ' <"$root/README.md" | grep -o 'Exit status: [^.]*\.' | head -1)
[ -n "$list" ] || { echo "FAILED: README.md has no 'Exit status:' sentence"; exit 1; }
failed=0
while read -r name value; do
    [ "$name" = EXIT_EXEC_FAILED ] && continue
    grep -Eq "(^|[^0-9])$value([^0-9]|$)" <<<"$list" ||
        { echo "FAILED: README.md's exit statuses lack $value ($name)"; failed=1; }
done < <(sed -nE 's/^#define (EXIT_[A-Z_]+) +([0-9]+).*/\1 \2/p' "$root/tools/launcher.h"
         echo "ssh's_lost_connection 255")
[ $failed -eq 0 ] && echo "ok: $list"
exit $failed
