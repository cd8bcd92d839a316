#!/usr/bin/env bash
# fuzz-smoke.sh SRC BUILD [RUNS] — the fuzz targets' short pass (make
# fuzz-smoke, and the ctest test fuzz.smoke): builds them with clang in
# BUILD (-DDSM_FUZZ=ON), then runs each over its seed corpus
# (fuzz/corpus/<target>/) and RUNS inputs in all (default 20000), new ones
# going to a temporary directory, never into the repository. Any crash, leak
# or failed check fails the pass. Exits 77 (ctest: skipped), saying why,
# when clang cannot build libFuzzer targets here.
set -u
src=$1 build=$2 runs=${3:-20000}
cc=${FUZZ_CC:-clang}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

if ! command -v "$cc" >/dev/null 2>&1; then
    echo "fuzz-smoke: SKIPPED: no $cc (tools/install-deps.sh installs it)"
    exit 77
fi
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' >"$tmp/probe.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$tmp/probe.c" -o "$tmp/probe" >/dev/null 2>&1; then
    echo "fuzz-smoke: SKIPPED: $cc cannot link -fsanitize=fuzzer (libFuzzer missing)"
    exit 77
fi

if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$src" -B "$build" -DDSM_FUZZ=ON -DCMAKE_C_COMPILER="$cc" -DDSM_WERROR=ON >/dev/null || exit 1
fi
cmake --build "$build" -j2 >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }

failed=0
for dir in "$src"/fuzz/corpus/*/; do
    t=$(basename "$dir")
    mkdir "$tmp/$t"
    if "$build/fuzz/$t" -runs="$runs" -max_len=1024 -print_final_stats=1 "$tmp/$t" "$dir" >"$tmp/$t.log" 2>&1; then
        echo "fuzz-smoke: $t: $(grep -o 'number_of_executed_units: [0-9]*' "$tmp/$t.log" | grep -o '[0-9]*$') runs, ok"
    else
        tail -50 "$tmp/$t.log"
        echo "fuzz-smoke: $t FAILED"
        failed=1
    fi
done
exit $failed
