#!/bin/bash
# help_env.sh DSMRUN PROG — dsmrun --help-env says true things, readably:
# lines of at most 100 characters; the region's largest size it names is
# accepted and the next one refused; settings that are not files are not
# typed `path`.
set -u
dsmrun=$1 prog=$2
help=$("$dsmrun" --help-env=all)
fail=0
long=$(printf '%s\n' "$help" | awk 'length($0) > 100')
[ -z "$long" ] || { echo "lines over 100 characters:"; printf '%s\n' "$long"; fail=1; }
most=$(printf '%s\n' "$help" | sed -n 's/^  DSM_REGION_SIZE .* range [^ ]* \.\. \([0-9]*\)T .*/\1/p')
if [ -z "$most" ]; then
    echo "no DSM_REGION_SIZE range in T"; fail=1
else
    DSM_REGION_SIZE=${most}T "$dsmrun" -n 1 "$prog" >/dev/null 2>&1 ||
        { echo "DSM_REGION_SIZE=${most}T, the most --help-env names, is refused"; fail=1; }
    DSM_REGION_SIZE=$((most + 1))T "$dsmrun" -n 1 "$prog" >/dev/null 2>&1 &&
        { echo "DSM_REGION_SIZE=$((most + 1))T, above the most --help-env names, is accepted"; fail=1; }
fi
for v in DSM_NET_BIND DSM_OMP_STATIC; do
    printf '%s\n' "$help" | grep -Eq "^  $v +path " && { echo "$v is typed path"; fail=1; }
done
[ "$fail" = 0 ] && echo "help-env: true ranges, right types, lines of 100 at most"
exit "$fail"
