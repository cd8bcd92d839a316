#!/bin/bash
# check_build_type.sh SRC TYPE CC — the library, libdsm-start and dsmrun
# built as a user builds them, in a scratch directory, in build type TYPE
# with compiler CC, warnings as errors (DSM_WERROR=ON). A user's build has
# them off; this is where a warning another build type or compiler finds
# (gcc's maybe-uninitialized at -O3, clang's own) fails instead.
set -u
src=$1 type=$2 cc=$3
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "build: SKIPPED: no $cc (tools/install-deps.sh installs gcc and clang)"
    exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# ccache, where installed, makes the next run of this test a few seconds.
launcher=
command -v ccache >/dev/null 2>&1 && launcher=-DCMAKE_C_COMPILER_LAUNCHER=ccache
if ! CC=$cc cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE="$type" -DDSM_WERROR=ON $launcher \
        >"$dir/build.log" 2>&1 ||
   ! cmake --build "$dir" -j2 --target dsm dsm_shared dsm_start dsmrun >>"$dir/build.log" 2>&1; then
    if grep -qE 'error|warning' "$dir/build.log"; then
        grep -E 'error|warning' "$dir/build.log" | head -20
    else
        tail -20 "$dir/build.log"
    fi
    echo "build: $type with $cc, warnings as errors: FAILED"
    exit 1
fi
echo "build: $type with $cc, warnings as errors: built"
