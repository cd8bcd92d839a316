#!/bin/bash
# check_install.sh BUILD — `make install` into a fresh prefix: every program,
# header and tool the README names is there, the tools run from it, and a
# program built with the installed dsmcc runs under the installed dsmrun.
set -eu
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
fail=0
for f in bin/dsmcc bin/dsmrun bin/dsm-trace bin/dsm-model include/dsm.h include/tsm.h \
         include/dsm/parmacs.m4 include/dsm/parmacs-threads.m4 lib/libdsm.so lib/libdsm.a \
         lib/libdsm-start.a lib/pkgconfig/dsm.pc; do
    [ -e "$prefix/$f" ] || { echo "install: $f missing"; fail=1; }
done
"$prefix/bin/dsm-trace" --help >/dev/null || { echo "install: dsm-trace does not run"; fail=1; }
"$prefix/bin/dsm-model" nets >/dev/null || { echo "install: dsm-model does not run"; fail=1; }
cat > "$prefix/t.c" <<'C'
#include <stdio.h>
#include <tsm.h>
int counter;
int main(void) { printf("installed: %d nodes\n", dsm_nodes()); return counter; }
C
"$prefix/bin/dsmcc" -O2 -o "$prefix/t" "$prefix/t.c"
out=$("$prefix/bin/dsmrun" -n 2 "$prefix/t")
[ "$out" = "installed: 2 nodes" ] || { echo "install: the installed tools ran: '$out'"; fail=1; }
[ "$fail" = 0 ] && echo "install: every file there, the tools run"
exit "$fail"
