#!/bin/bash
# mpirun_settings_differ.sh BUILD — nodes that mpirun starts with different
# dsm settings (as a setting exported on one host alone, without -x, does)
# end the job with one line naming the setting and both values, not a
# protocol error later: each setting below is given to node 1 alone (Open
# MPI's MPMD form, `env` setting it for that rank). Skipped (77) without mpirun.
set -u
build=$1
command -v mpirun >/dev/null || { echo "SKIP: needs mpirun (openmpi-bin)"; exit 77; }
mpirun=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)
prog="$build/tests/conf/test_fork_globals 64"
failed=0
# (The transport node 0 does not use: make test-ucx runs this with DSM_NET=ucx.)
other_net=ucx
[ "${DSM_NET:-udp}" = ucx ] && other_net=udp
for setting in DSM_NET=$other_net DSM_PAGE_SIZE=16K DSM_PROTOCOL=lrc DSM_THREADS=2; do
    name=${setting%%=*} value=${setting#*=}
    # shellcheck disable=SC2086  # prog is a program and its arguments
    out=$(timeout 120 "${mpirun[@]}" -n 1 $prog : -n 1 env "$setting" $prog 2>&1)
    status=$?
    want="node 1: this node runs with $name=$value where node 0 runs with $name="
    if [ $status -eq 0 ] || ! grep -q "$want" <<<"$out"; then
        echo "FAILED ($setting for node 1 alone, status $status): expected a line with '$want'"
        head -5 <<<"$out" | sed 's/^/  /'
        failed=1
    else
        echo "ok: $setting on node 1 alone: $(grep -m1 -o "this node runs with.*" <<<"$out" | cut -c1-90)..."
    fi
done
exit $failed
