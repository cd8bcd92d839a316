#!/usr/bin/env python3
"""check_trace.py — runs a traced job and checks what the trace says.

  check_trace.py DSMRUN NODES PROGRAM [ARGS...]
      runs `dsmrun -n NODES --trace T --stats-json S PROGRAM ARGS`; checks
      that every node's trace parses, that its messages sent by type (count
      and bytes, in the statistics' window) equal the statistics', that
      every send was received, and that the Chrome trace-event JSON of it
      validates (a process per node, named threads, one flow per message),
      and that its lock summary (dsm-trace locks) counts the acquires and
      those that needed another node as the statistics do, its fault
      summary (dsm-trace faults) the faults, and its barrier summary
      (dsm-trace barriers) parts that add up on one clock.
  check_trace.py --threads T DSMRUN NODES PROGRAM [ARGS...]
      the same with dsmrun --threads T; and the timelines name the
      application threads "application 0" .. "application T-1" (each node's
      that recorded anything; every one on some node), and no
      thread "service" records an application thread's waits (barriers).
  check_trace.py --tasks-stolen [--threads T] DSMRUN NODES PROGRAM [ARGS...]
      the same, for an OpenMP program whose tasks leave their node: some
      were stolen, and each stolen task is a flow from its creator's offer
      to the node that took it and one from its completion back (as every
      run checks: as many of each as the statistics' tasks stolen).
  check_trace.py --bad-path DSMRUN PROGRAM
      a trace that cannot be written ends the job with one clear line.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.realpath(__file__))
TOOLS = os.path.join(HERE, "..", "..", "tools")
sys.path.insert(0, TOOLS)
import dsmtrace as dt  # noqa: E402

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
    return ok


def main():
    if sys.argv[1] == "--bad-path":
        r = subprocess.run([sys.argv[2], "-n", "2", "--trace", "/nonexistent/dir/t", sys.argv[3]],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        # Refused by dsmrun before any node starts (runtime/settings.c).
        check(r.returncode == 2, "status %d with an unwritable trace" % r.returncode)
        check(len(r.stderr.splitlines()) == 1, "not one line: %r" % r.stderr[-300:])
        check("cannot write the trace /nonexistent/dir/t." in r.stderr,
              "no clear error line: %r" % r.stderr[-300:])
        return finish()
    threads = None
    tasks_stolen = sys.argv[1] == "--tasks-stolen"
    if tasks_stolen:
        del sys.argv[1]
    if sys.argv[1] == "--threads":
        threads = int(sys.argv[2])
        del sys.argv[1:3]
    dsmrun, nodes, prog = sys.argv[1], sys.argv[2], sys.argv[3:]
    if threads:
        prog = ["--threads", str(threads)] + prog
    tmp = tempfile.mkdtemp(prefix="check_trace-")
    prefix, stats = os.path.join(tmp, "t"), os.path.join(tmp, "stats.json")
    r = subprocess.run([dsmrun, "-n", nodes, "--timeout", "120", "--trace", prefix,
                        "--stats-json", stats] + prog, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=200)
    if not check(r.returncode == 0, "the job failed: %s" % r.stderr[-400:]):
        return finish()
    nodes_ = dt.load(prefix)
    check(len(nodes_) == int(nodes), "%d traces for %s nodes" % (len(nodes_), nodes))
    for n in nodes_:
        check(n.threads and n.threads[0].role == 0, "node %d: no application thread" % n.rank)
        check(any(r[0] == dt.SEND for _, r in n.records()), "node %d sent nothing" % n.rank)
    tool = os.path.join(TOOLS, "dsm-trace")
    c = subprocess.run([sys.executable, tool, "check", prefix, stats], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    check(c.returncode == 0 and "counts equal the statistics" in c.stdout,
          "counts differ from the statistics:\n%s%s" % (c.stdout, c.stderr))
    with open(stats) as f:
        per = {e["rank"]: e["counters"] for e in json.load(f)["per_node"]}
    for rank, s in dt.lock_summary(nodes_).items():
        want = (per[rank]["LOCK_ACQUIRES"], per[rank]["LOCK_REMOTE"])
        check((s["acquires"], s["remote"]) == want,
              "node %d: lock summary %d acquires, %d remote; statistics %d, %d"
              % ((rank, s["acquires"], s["remote"]) + want))
        check(s["remote"] == 0 or s["wait_ms"] > 0, "node %d: remote acquires took no time" % rank)
    lk = subprocess.run([sys.executable, tool, "locks", prefix], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
    # a run without locks is one line saying so, not a table of zeros
    none = all(per[r]["LOCK_ACQUIRES"] == 0 for r in per)
    check(lk.returncode == 0 and ("no locks:" if none else "node 0:") in lk.stdout,
          "dsm-trace locks: %s%s" % (lk.stdout[:200], lk.stderr))
    # Faults as the statistics count them; every barrier the trace has
    # (the statistics count a team's barriers on one node too), its parts
    # adding up, and the nodes on this host sharing one clock.
    for rank, kinds in dt.fault_summary(nodes_).items():
        for kind, counter in (("read", "READ_FAULTS"), ("write", "WRITE_FAULTS")):
            k = kinds[kind]
            check(k["faults"] == per[rank][counter],
                  "node %d: %d %s faults in the trace, %d in the statistics"
                  % (rank, k["faults"], kind, per[rank][counter]))
            check(0 <= k["asked"] <= k["faults"] and 0 <= k["asked_ms"] <= k["ms"] + 1e-9,
                  "node %d: %s faults asked %d of %d" % (rank, kind, k["asked"], k["faults"]))
    for rank, b in dt.barrier_summary(nodes_).items():
        check(b["one_clock"], "nodes of one host said to have clocks apart")
        check(b["barriers"] <= per[rank]["BARRIERS"] and (b["barriers"] > 0) == (per[rank]["BARRIERS"] > 0),
              "node %d: %d barriers in the trace, %d in the statistics"
              % (rank, b["barriers"], per[rank]["BARRIERS"]))
        if b["one_clock"]:
            parts = b["release_ms"] + b["late_ms"] + b["after_ms"]
            check(min(b["release_ms"], b["late_ms"], b["after_ms"]) >= 0 and
                  abs(parts - b["ms"]) < 1e-6 * max(1.0, b["ms"]),
                  "node %d: barrier parts %.3f ms, total %.3f ms" % (rank, parts, b["ms"]))
    for cmd, want in (("barriers", "barriers,"), ("faults", "write faults")):
        o = subprocess.run([sys.executable, tool, cmd, prefix], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        check(o.returncode == 0 and want in o.stdout, "dsm-trace %s failed: %s%s"
              % (cmd, o.stdout[-300:], o.stderr))
    msgs, lone_s, lone_r = dt.match_messages(nodes_)
    check(lone_r == 0, "%d receipts without a send" % lone_r)
    check(all(m.s0 <= m.s1 and m.s0 <= m.r1 <= m.r2 for m in msgs),
          "a message handled before it was sent, or times out of order")
    out = os.path.join(tmp, "t.json")
    j = subprocess.run([sys.executable, tool, "json", prefix, "-o", out],
                       stderr=subprocess.PIPE, text=True)
    check(j.returncode == 0, "dsm-trace json failed: %s" % j.stderr)
    with open(out) as f:
        doc = json.load(f)
    v = subprocess.run([sys.executable, tool, "validate", out], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    check(v.returncode == 0, "the JSON does not validate: %s" % v.stderr)
    ev = doc["traceEvents"]
    pids = {e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    check(pids == set(range(int(nodes))), "processes %s, expected one per node" % sorted(pids))
    if threads:
        names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        # A thread appears once it records something: a node's second
        # thread that neither stole, sent nor met a barrier proper (its
        # node mate went in for both: omp/task.c, gather_node_threads)
        # has no row. So each node's application rows are named within
        # "application 0" .. "application T-1" (or "application" alone),
        # and the job's rows name every one of them.
        want = {"application %d" % i for i in range(threads)}
        seen = set()
        for rank in range(int(nodes)):
            mine = {v for (p, _), v in names.items() if p == rank}
            apps = {v for v in mine if not v.startswith("service")}
            check(apps and apps <= want | {"application"},
                  "node %d: threads named %s, expected application threads among %s"
                  % (rank, sorted(mine), sorted(want)))
            seen |= apps
        check(want <= seen, "threads named %s over the job, expected %s among them"
              % (sorted(seen), sorted(want)))
        waits = {(e["pid"], e["tid"]) for e in ev if e["ph"] == "X" and e["name"].startswith("barrier")}
        check(not any(names.get(k, "").startswith("service") for k in waits),
              "a thread named service records barriers")
    flows = sum(1 for e in ev if e["ph"] == "s" and e["cat"] == "message")
    check(flows == len(msgs), "%d flows for %d messages" % (flows, len(msgs)))
    # OpenMP tasks that left their node: a steal flow from the creator to
    # the taker and a completion flow back, one each per task stolen (the
    # statistics' count), each between two different nodes.
    stolen = sum(c.get("PAR_TASKS_STOLEN", 0) for c in per.values())
    offered = sum(c.get("PAR_TASKS_OFFERED", 0) for c in per.values())
    task_flows = {}
    for e in ev:
        if e["ph"] in ("s", "f") and e["cat"] == "task":
            task_flows.setdefault((e["name"], e["id"]), {})[e["ph"]] = e["pid"]
    for kind in ("steal", "completion"):
        ends = [f for (k, _), f in task_flows.items() if k == kind]
        check(len(ends) == stolen, "%d %s flows for %d tasks stolen" % (len(ends), kind, stolen))
        check(all(f.get("s") is not None and f.get("f") is not None and f["s"] != f["f"]
                  for f in ends), "a %s flow within one node, or with one end" % kind)
    if tasks_stolen:
        check(stolen > 0, "no task left its node (offered %d)" % offered)
    print("%s nodes, %d messages, %d events, %d tasks stolen" % (nodes, len(msgs), len(ev), stolen))
    return finish()


def finish():
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
