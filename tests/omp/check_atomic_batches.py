#!/usr/bin/env python3
"""check_atomic_batches.py — atomic updates whose value nobody uses go to
their page's home in batches under hlrc (issue 85, point 4), from
--stats-json (docs/statistics.md).

  check_atomic_batches.py DSMRUN NODES PROGRAM
      runs PROGRAM (tests/omp/omp_atomic_own_order.c: it passes only when
      every count is exact) on NODES nodes under hlrc, and checks that
      every node but the master, which homes the program's words, sent
      updates in batches (ATOMICS_BATCHED), in a quarter as many messages
      or fewer (ATOMIC_BATCHES: the program's atomic reads flush the queue
      every few updates, its burst of updates alone every 128), and that
      the master served every one of them.
"""
import json
import os
import subprocess
import sys
import tempfile

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def main(dsmrun, nodes, prog):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "stats.json")
        cmd = [dsmrun, "-n", nodes, "--protocol", "hlrc", "--timeout", "100",
               "--stats-json", path, prog]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0 or "PASSED: 0 failed" not in p.stdout:
            print(p.stdout)
            sys.exit(f"FAILED: {' '.join(cmd)} exited {p.returncode}")
        with open(path) as f:
            per_node = json.load(f)["per_node"]
    batched = 0
    for node in per_node:
        c, rank = node["counters"], node["rank"]
        if rank == 0:
            served = c["ATOMICS_SERVED"]
            continue
        updates, messages = c.get("ATOMICS_BATCHED", 0), c.get("ATOMIC_BATCHES", 0)
        batched += updates
        check(updates > 0 and messages > 0,
              f"node {rank} sent {updates} updates in {messages} batches (some)")
        check(updates >= 4 * messages,
              f"node {rank}: {updates} updates in {messages} batches, four or more a batch")
    check(served >= batched, f"node 0 served {served} atomics, at least the {batched} batched")
    print(f"PASSED: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
