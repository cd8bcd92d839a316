#!/bin/bash
# mpirun.sh N BUILD — Open MPI's mpirun starting N nodes of dsm programs with
# no dsmrun: startup through PMIx (src/runtime/boot_pmix.c). A conformance
# program and an application must succeed; skipped (77) without mpirun.
set -u
n=$1 build=$2
command -v mpirun >/dev/null || { echo "SKIP: needs mpirun (openmpi-bin)"; exit 77; }
# Root may run it here; --oversubscribe: more nodes than this machine's cores.
mpirun=(mpirun --oversubscribe -n "$n")
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)
failed=0
for job in "$build/tests/conf/test_fork_globals 4096" "$build/bench/apps/mandel --size test"; do
    # shellcheck disable=SC2086  # job is a program and its arguments
    out=$(DSM_STATS=1 timeout 120 "${mpirun[@]}" $job 2>&1)
    status=$?
    if [ $status -ne 0 ] || ! grep -Eq ": ok$|check=ok" <<<"$out"; then
        echo "FAILED (status $status): mpirun -n $n $job"
        tail -20 <<<"$out" | sed 's/^/  /'
        failed=1
    else
        echo "ok: mpirun -n $n $(basename "${job%% *}"): $(grep -E ': ok$|check=ok' <<<"$out" | head -1)"
        grep '^startup:' <<<"$out" | sed 's/^/  /'
    fi
done
exit $failed
