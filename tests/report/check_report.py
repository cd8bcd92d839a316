#!/usr/bin/env python3
"""check_report.py — runs a job with statistics on and checks the report.

  check_report.py json DSMRUN NODES PROGRAM [ARGS...]
      runs `dsmrun -n NODES --stats-json FILE PROGRAM ARGS` and checks that
      FILE is valid JSON of the documented shape (docs/statistics.md), with
      one entry per node, in rank order.
  check_report.py text DSMRUN NODES PROGRAM [ARGS...]
      runs `dsmrun -n NODES --stats PROGRAM ARGS` and checks that the printed
      report has its header, protocol line, three sections and the footnote,
      each section with a column per node.
  check_report.py threads DSMRUN NODES T PROGRAM [ARGS...]
      runs it with --threads T, --stats and --stats-json: the split is of
      thread-time, T x the run (docs/statistics.md): the printed total is
      T x the JSON's, and computing is that less the threads' waits, so the
      rows add up to it.
  check_report.py computing DSMRUN NODES T PROGRAM [ARGS...]
      the same checks as threads, and every node's computing is above 0 (a
      pthreads program, whose waits summed over a node's threads may pass
      its thread-time while one of them computes).
  check_report.py tasks DSMRUN NODES T TASKS PROGRAM [ARGS...]
      runs it with --threads T, --stats and --stats-json: the printed rows of
      OpenMP tasks created and run hold the JSON's counts, a column per
      node, and each adds up to TASKS over the nodes, however the tasks
      were divided (a task another node takes is run there, and its
      children are made there).
"""
import json
import os
import subprocess
import sys
import tempfile

TIME_KEYS = ["total", "computing", "barrier", "read_fault", "write_fault",
             "request_service", "lock", "idle"]
SOME_COUNTERS = ["NET_MSGS_SENT", "READ_FAULTS", "WRITE_FAULTS", "T_TOTAL_NS"]

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
    return ok


def run(dsmrun, nodes, options, program):
    cmd = [dsmrun, "-n", str(nodes), "--timeout", "60"] + options + program
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited with status {p.returncode}\n{p.stderr}")
    return p.stdout


def is_count(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def stats_of(dsmrun, nodes, args, program):
    """The job's output with ARGS and --stats-json, and the JSON it wrote."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "stats.json")
        out = run(dsmrun, nodes, args + ["--stats-json", path], program)
        with open(path) as f:
            return out, json.load(f)  # raises, failing the test, if not valid JSON


def run_stats(dsmrun, nodes, threads, program):
    """--stats and --stats-json on THREADS threads a node: the report's lines and the JSON."""
    out, doc = stats_of(dsmrun, nodes, ["--threads", str(threads), "--stats"], program)
    return out.splitlines(), doc


def check_json(dsmrun, nodes, program):
    _, doc = stats_of(dsmrun, nodes, [], program)
    check(doc.get("nodes") == nodes, f"nodes is {doc.get('nodes')!r}, expected {nodes}")
    check(doc.get("protocol") == "hlrc", f"protocol is {doc.get('protocol')!r}")
    per_node = doc.get("per_node")
    if not check(isinstance(per_node, list) and len(per_node) == nodes,
                 f"per_node is not a list of {nodes} entries"):
        return
    check([e.get("rank") for e in per_node] == list(range(nodes)),
          "per_node is not in rank order 0..N-1")
    message_types = None
    for e in per_node:
        r = e.get("rank")
        t = e.get("time_ms", {})
        for k in TIME_KEYS:
            check(isinstance(t.get(k), (int, float)) and t[k] >= 0,
                  f"node {r}: time_ms.{k} missing or negative")
        if all(isinstance(t.get(k), (int, float)) for k in TIME_KEYS):
            check(t["total"] > 0, f"node {r}: total time is 0")
            check(t["computing"] <= t["total"] + 1e-3,
                  f"node {r}: computing exceeds total")
            waits = t["barrier"] + t["read_fault"] + t["write_fault"] + t["lock"] + t["idle"]
            check(abs(t["computing"] - max(t["total"] - waits, 0)) < 2e-3,
                  f"node {r}: computing is not total - (barrier + faults + lock + idle)")
        c = e.get("counters", {})
        for k in SOME_COUNTERS:
            check(k in c, f"node {r}: counter {k} missing")
        check(all(is_count(v) for v in c.values()), f"node {r}: a counter is not a count")
        check(c.get("NET_MSGS_SENT", 0) > 0, f"node {r}: sent no messages")
        check(abs(c.get("T_TOTAL_NS", 0) / 1e6 - t.get("total", -1)) < 1e-3,
              f"node {r}: T_TOTAL_NS and time_ms.total differ")
        m = e.get("messages", {})
        check(isinstance(m, dict) and m, f"node {r}: messages missing or empty")
        for name, v in m.items():
            check(isinstance(v, dict) and is_count(v.get("count")) and is_count(v.get("bytes")),
                  f"node {r}: messages.{name} is not {{count, bytes}}")
        check(sum(v.get("count", 0) for v in m.values()) > 0, f"node {r}: no message counted")
        if message_types is None:
            message_types = list(m)
        check(list(m) == message_types, f"node {r}: message types differ from node 0's")


def check_text(dsmrun, nodes, program):
    out = run(dsmrun, nodes, ["--stats"], program).splitlines()
    columns = [f"node {n}" for n in range(nodes)]

    def line_starting(prefix):
        return next((l for l in out if l.startswith(prefix)), None)

    check(f"== dsm statistics: {nodes} nodes ==" in out, "header line missing")
    check("protocol: hlrc" in out, "protocol line missing")
    for title in ["time split, ms (% of total)", "counts",
                  "messages sent by type (messages/bytes)"]:
        head = line_starting(title)
        if check(head is not None, f"section '{title}' missing"):
            check(head.split()[-2 * nodes:] == " ".join(columns).split(),
                  f"section '{title}' lacks a column per node: {head!r}")
    for row in ["total", "computing", "barrier", "read fault", "write fault",
                "request service *", "lock", "idle ***", "twin", "diff creation", "diff send",
                "diff apply"]:
        check(any(l.strip().startswith(row + " ") for l in out), f"time row '{row}' missing")
    check(any("not subtracted from computing" in l for l in out),
          "request service footnote missing")


WAIT_ROWS = ["barrier", "read fault", "write fault", "lock", "idle ***"]


def check_threads(dsmrun, nodes, threads, program, every_node_computes=False):
    out, doc = run_stats(dsmrun, nodes, threads, program)
    if every_node_computes:
        for n, e in enumerate(doc["per_node"]):
            check(e["time_ms"]["computing"] > 0,
                  f"node {n}: computing is {e['time_ms']['computing']} ms, though it ran threads")
    title = f"time split, ms of thread-time ({threads} threads x the run; % of it)"
    check(any(l.startswith(title) for l in out), f"title '{title}' missing")

    def row(label):
        l = next((l for l in out if l.strip().startswith(label + " ")), None)
        if not check(l is not None, f"time row '{label}' missing"):
            return [0.0] * nodes
        cells = l.strip()[len(label):].split()
        return [float(cells[2 * n]) for n in range(nodes)]
    total, computing = row("total"), row("computing")
    waits = [row(r) for r in WAIT_ROWS]
    for n, e in enumerate(doc["per_node"]):
        t = e["time_ms"]
        check(e.get("threads") == threads, f"node {n}: JSON threads is {e.get('threads')!r}")
        check(abs(total[n] - threads * t["total"]) < 0.1 + 1e-9,
              f"node {n}: printed total {total[n]} is not {threads} x the run's {t['total']:.3f} ms")
        w = t["barrier"] + t["read_fault"] + t["write_fault"] + t["lock"] + t["idle"]
        # Each value is printed to 0.001 ms: computing, the total (times
        # the threads) and the waits each carry half of that in rounding.
        rounding = 0.0005 * (1 + threads + len(WAIT_ROWS)) + 1e-9
        check(abs(t["computing"] - max(threads * t["total"] - w, 0)) <= rounding,
              f"node {n}: JSON computing is not {threads} x total less the waits")
        if w <= threads * t["total"]:
            summed = computing[n] + sum(r[n] for r in waits)
            check(abs(summed - total[n]) < 0.05 * (len(WAIT_ROWS) + 2),
                  f"node {n}: computing and the waits add up to {summed:.1f}, not {total[n]}")


TASK_ROWS = {"PAR_TASKS_CREATED": "OpenMP tasks created on this node (explicit and taskloop's)",
             "PAR_TASKS_RUN": "OpenMP tasks run on this node"}


def check_tasks(dsmrun, nodes, threads, tasks, program):
    out, doc = run_stats(dsmrun, nodes, threads, program)
    for counter, label in TASK_ROWS.items():
        counts = [e["counters"].get(counter) for e in doc["per_node"]]
        if not check(all(is_count(c) for c in counts), f"counter {counter} missing: {counts}"):
            continue
        check(sum(counts) == tasks, f"{counter} adds up to {sum(counts)} over the nodes "
                                    f"({counts}), not {tasks}")
        l = next((l for l in out if l.strip().startswith(label + " ")), None)
        if check(l is not None, f"row '{label}' missing"):
            cells = l.strip()[len(label):].split()
            check(cells == [str(c) for c in counts],
                  f"row '{label}' prints {cells}, the JSON says {counts}")


def main():
    if len(sys.argv) >= 6 and sys.argv[1] in ("threads", "computing"):
        check_threads(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:],
                      sys.argv[1] == "computing")
    elif len(sys.argv) >= 7 and sys.argv[1] == "tasks":
        check_tasks(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]),
                    sys.argv[6:])
    elif len(sys.argv) < 5 or sys.argv[1] not in ("json", "text"):
        sys.exit(__doc__)
    else:
        mode, dsmrun, nodes, program = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
        (check_json if mode == "json" else check_text)(dsmrun, nodes, program)
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
