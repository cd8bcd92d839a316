#!/bin/bash
# check_install.sh BUILD — `make install` into a fresh prefix: every program,
# header and tool the README names is there, the tools run from it, and a
# program built with the installed dsmcc runs under the installed dsmrun;
# the library installs as a library others depend on: libdsm.so.ABI with its
# SONAME, dsm.pc with plain paths, a CMake package a project's
# find_package(dsm CONFIG REQUIRED) finds and builds with, and dsmcc's
# --showme flags, with which a build system compiles and links itself.
set -eu
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
fail=0
for f in bin/dsmcc bin/dsmc++ bin/dsmfort bin/dsmrun bin/dsm-trace bin/dsm-model bin/dsm-profile \
         include/dsm.h include/tsm.h \
         include/dsm/parmacs.m4 include/dsm/parmacs-threads.m4 lib/libdsm.so lib/libdsm.a \
         lib/libdsm-start.a lib/pkgconfig/dsm.pc libexec/dsm/dsmcc-asm \
         lib/cmake/dsm/dsmConfig.cmake lib/cmake/dsm/dsmConfigVersion.cmake; do
    [ -e "$prefix/$f" ] || { echo "install: $f missing"; fail=1; }
done
"$prefix/bin/dsm-trace" --help >/dev/null || { echo "install: dsm-trace does not run"; fail=1; }
"$prefix/bin/dsm-model" nets >/dev/null || { echo "install: dsm-model does not run"; fail=1; }
"$prefix/bin/dsm-profile" --help >/dev/null || { echo "install: dsm-profile does not run"; fail=1; }
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
# The shared library under its SONAME, libdsm.so a link to it.
soname=$(readelf -d "$prefix/lib/libdsm.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
case $soname in
libdsm.so.[0-9]*) [ -e "$prefix/lib/$soname" ] || { echo "install: lib/$soname (the SONAME) missing"; fail=1; } ;;
*) echo "install: libdsm.so's SONAME is '$soname', not libdsm.so.ABI"; fail=1 ;;
esac
# pkg-config: the prefix itself, no detour through lib/pkgconfig/../..
pc=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs dsm)
case $pc in
*/../*|*/./*) echo "install: pkg-config's paths are not plain: $pc"; fail=1 ;;
*"-I$prefix/include "*"-L$prefix/lib "*) ;;
*) echo "install: pkg-config names other paths: $pc"; fail=1 ;;
esac
# A CMake project that depends on dsm: find_package, dsm::dsm, and the
# package's dsmrun running what it built.
mkdir -p "$prefix/consumer"
cat > "$prefix/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(consumer C)
find_package(dsm 0.1 CONFIG REQUIRED)
add_executable(hello hello.c)
target_link_libraries(hello PRIVATE dsm::dsm)
file(WRITE ${CMAKE_BINARY_DIR}/dsmrun.path "${DSM_DSMRUN}")
CM
cat > "$prefix/consumer/hello.c" <<'C'
#include <stdio.h>
#include <dsm.h>
int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    long *sum = NULL;
    if (dsm_rank() == 0)
        sum = dsm_malloc(sizeof *sum);
    dsm_bcast(&sum, sizeof sum, 0);
    dsm_lock(0);
    *sum += dsm_rank() + 1;
    dsm_unlock(0);
    dsm_barrier();
    if (dsm_rank() == 0)
        printf("cmake consumer: %d nodes, sum %ld\n", dsm_nodes(), *sum);
    dsm_finish();
    return 0;
}
C
if cmake -S "$prefix/consumer" -B "$prefix/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" >"$prefix/cm.log" 2>&1 &&
   cmake --build "$prefix/consumer/build" >>"$prefix/cm.log" 2>&1; then
    run=$(cat "$prefix/consumer/build/dsmrun.path")
    [ "$run" = "$prefix/bin/dsmrun" ] || { echo "install: the package's DSM_DSMRUN is '$run'"; fail=1; }
    out=$("$run" -n 4 "$prefix/consumer/build/hello")
    [ "$out" = "cmake consumer: 4 nodes, sum 10" ] || { echo "install: the CMake consumer ran: '$out'"; fail=1; }
else
    echo "install: a project's find_package(dsm CONFIG REQUIRED) failed:"; sed 's/^/  /' "$prefix/cm.log"; fail=1
fi
# A build system that runs the compiler itself, with dsmcc's flags: the
# program is in the shared-memory model (main once, on the master).
printf '#include <stdio.h>\n#include <dsm.h>\nint g = 7;\nint main(void) { printf("showme: %%d nodes, g %%d\\n", dsm_nodes(), g); return 0; }\n' > "$prefix/s.c"
if cc $("$prefix/bin/dsmcc" --showme:compile) -c -o "$prefix/s.o" "$prefix/s.c" &&
   cc -o "$prefix/s" "$prefix/s.o" $("$prefix/bin/dsmcc" --showme:link); then
    out=$("$prefix/bin/dsmrun" -n 2 "$prefix/s")
    [ "$out" = "showme: 2 nodes, g 7" ] || { echo "install: built with --showme flags, it ran: '$out'"; fail=1; }
else
    echo "install: cc with dsmcc --showme:compile and --showme:link failed"; fail=1
fi
[ "$fail" = 0 ] && echo "install: every file there, the tools run"
exit "$fail"
