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
for f in bin/dsmcc bin/dsmc++ bin/dsmfort bin/dsmrun bin/dsm-trace bin/dsm-model include/dsm.h include/tsm.h \
         include/dsm/parmacs.m4 include/dsm/parmacs-threads.m4 lib/libdsm.so lib/libdsm.a \
         lib/libdsm-start.a lib/pkgconfig/dsm.pc libexec/dsm/dsmcc-asm; do
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
# The installed dsmcc finds its inline-assembly step (libexec/dsm/dsmcc-asm).
printf 'int c;\nint main(void) { asm volatile("lock; incl %%0" : "+m"(c)); return c - 1; }\n' > "$prefix/a.c"
"$prefix/bin/dsmcc" -O2 -o "$prefix/a" "$prefix/a.c" && "$prefix/bin/dsmrun" -n 2 "$prefix/a" ||
    { echo "install: dsmcc's inline-assembly atomics"; fail=1; }
# The C++ and Fortran wrappers answer --help; each builds a program that runs
# when its compiler is installed (flang: tools/install-deps.sh installs it).
for w in dsmc++ dsmfort; do
    "$prefix/bin/$w" --help | grep -q "^usage: $w " || { echo "install: $w --help"; fail=1; }
done
if command -v c++ >/dev/null 2>&1; then
    cat > "$prefix/t.cpp" <<'CXX'
#include <cstdio>
#include <vector>
#include <dsm.h>
static std::vector<int> v(100, 1);
int main() { std::printf("installed c++: %d nodes %d\n", dsm_nodes(), v[99]); return 0; }
CXX
    "$prefix/bin/dsmc++" -O2 -o "$prefix/tcxx" "$prefix/t.cpp"
    out=$("$prefix/bin/dsmrun" -n 2 "$prefix/tcxx")
    [ "$out" = "installed c++: 2 nodes 1" ] || { echo "install: dsmc++'s program ran: '$out'"; fail=1; }
fi
if "$prefix/bin/dsmfort" --version >/dev/null 2>&1; then
    printf 'program t\n  integer :: c(4)\n  common /b/ c\n  c = 1\n  print "(a,i0)", "installed fortran: ", sum(c)\nend program\n' > "$prefix/t.f90"
    "$prefix/bin/dsmfort" -O2 -o "$prefix/tf" "$prefix/t.f90"
    out=$("$prefix/bin/dsmrun" -n 2 "$prefix/tf")
    [ "$out" = "installed fortran: 4" ] || { echo "install: dsmfort's program ran: '$out'"; fail=1; }
fi
[ "$fail" = 0 ] && echo "install: every file there, the tools run"
exit "$fail"
