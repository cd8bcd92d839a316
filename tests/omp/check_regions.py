#!/usr/bin/env python3
"""check_regions.py — what back-to-back parallel regions cost across nodes
(issue 85), from --stats-json (docs/statistics.md).

  check_regions.py empty DSMRUN NODES THREADS REGIONS PROGRAM
      runs `PROGRAM empty REGIONS` (regions that share no data) and checks
      that no node but the master fetched a page (the regions' descriptions
      travel in the creates), and that each node sent at most one message a
      region besides the barriers that end migration's windows at joins
      (one every DSM_MIGRATE_PERIOD-th join, docs/migration.md).
  check_regions.py homes DSMRUN NODES THREADS PAGES LOOPS PROGRAM
      runs `PROGRAM loops PAGES LOOPS` (separate parallel for loops over an
      array the master filled) and `... one` (the same loops in one
      region), and checks that homes moved in both (MIGRATE_HOMES), and
      that node 0 applied about as many diffs in the separate loops as in
      the one region (at most twice, and PAGES more).
"""
import json
import os
import subprocess
import sys
import tempfile

failures = []


def run(dsmrun, nodes, threads, args):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "stats.json")
        cmd = [dsmrun, "-n", nodes, "--threads", threads, "--timeout", "120",
               "--stats-json", path] + args
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0 or "PASSED" not in p.stdout:
            print(p.stdout)
            sys.exit(f"FAILED: {' '.join(cmd)} exited {p.returncode}")
        with open(path) as f:
            return json.load(f)["per_node"]


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def empty(dsmrun, nodes, threads, regions, prog):
    regions = int(regions)
    period = int(os.environ.get("DSM_MIGRATE_PERIOD", "4"))
    for node in run(dsmrun, nodes, threads, [prog, "empty", str(regions)]):
        c, m, rank = node["counters"], node["messages"], node["rank"]
        barrier = sum(m.get(k, {}).get("count", 0) for k in ("BARRIER_ARRIVE", "BARRIER_RELEASE"))
        sent = c["NET_MSGS_SENT"] - barrier
        if rank > 0:
            check(c["PAGES_FETCHED"] == 0,
                  f"node {rank} fetched {c['PAGES_FETCHED']} pages over {regions} regions (0)")
        # the creates (the master's to each node) or the ends, and a few
        # messages a node of the job's start and end
        limit = regions * (int(nodes) - 1 if rank == 0 else 1) + 8 * int(nodes)
        check(sent <= limit,
              f"node {rank} sent {sent} messages besides barriers over {regions} regions "
              f"(at most {limit})")
        check(c["BARRIERS"] <= regions // period + 2,
              f"node {rank} met {c['BARRIERS']} barriers over {regions} regions "
              f"(at most {regions // period + 2})")


def homes(dsmrun, nodes, threads, pages, loops, prog):
    sep = run(dsmrun, nodes, threads, [prog, "loops", pages, loops])
    one = run(dsmrun, nodes, threads, [prog, "loops", pages, loops, "one"])
    moved = sum(n["counters"]["MIGRATE_HOMES"] for n in sep)
    moved_one = sum(n["counters"]["MIGRATE_HOMES"] for n in one)
    check(moved_one > 0, f"one region: {moved_one} homes moved (> 0)")
    check(moved > 0, f"separate regions: {moved} homes moved (> 0)")
    applied, applied_one = sep[0]["counters"]["DIFFS_APPLIED"], one[0]["counters"]["DIFFS_APPLIED"]
    # Homes left on node 0 bring each loop's writes to the other nodes'
    # pages back to it as diffs: five times the one region's, in 20 loops.
    check(applied <= 2 * applied_one + int(pages),
          f"node 0 applied {applied} diffs in separate regions, {applied_one} in one region "
          f"(at most {2 * applied_one + int(pages)})")


if __name__ == "__main__":
    modes = {"empty": (empty, 5), "homes": (homes, 6)}
    if len(sys.argv) < 2 or sys.argv[1] not in modes or len(sys.argv) != 2 + modes[sys.argv[1]][1]:
        sys.exit(__doc__)
    fn, _ = modes[sys.argv[1]]
    fn(*sys.argv[2:])
    print(f"{'FAILED' if failures else 'PASSED'}: {len(failures)} failed")
    sys.exit(1 if failures else 0)
