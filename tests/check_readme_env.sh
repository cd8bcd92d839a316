#!/usr/bin/env bash
# The README's environment table must list every variable of the config table.
set -u
dsmrun=$1 readme=$2
missing=0
for v in $("$dsmrun" --help-env=all | awk '/^  DSM_/ {print $1}'); do
  grep -q "\`$v\`" "$readme" || { echo "README.md does not document $v"; missing=1; }
done
n=$("$dsmrun" --help-env=all | grep -c '^  DSM_')
[ "$n" -gt 0 ] || { echo "dsmrun --help-env listed no variables"; exit 1; }
[ $missing -eq 0 ] && echo "README documents all $n variables"
exit $missing
