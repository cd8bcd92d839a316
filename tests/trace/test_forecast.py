#!/usr/bin/env python3
"""test_forecast.py — dsm-model forecast and predict on a synthetic trace
whose answer is known by hand, and their one-line errors for bad input.

The trace (written by faults_and_barrier below, as src/base/trace.c writes
one): two nodes. Node 0 computes G us, then takes K read faults, each
G us apart: a 64-byte PAGE_REQ to node 1 (latency A), served in 2 us, an
8256-byte PAGE_REP back (latency B), the fault ends 1 us after its handler,
so a fault takes A + B + 3 us. Then node 0, the barrier's manager, enters
the barrier last: its release takes R us, it sends BARRIER_RELEASE, leaves
2 us after entering plus R, and finishes T us later. Node 1 entered at
5 us, released in R us, sent BARRIER_ARRIVE, and waits for the release;
it leaves 1 us after handling it and finishes T us later.

Every message D us slower makes each fault 2D longer and node 1's wait
for the release D more: node 1, the slowest, finishes at
FIN1 + (2K + 1) D (hand-computed in expected_*).
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.realpath(__file__))
TOOLS = os.path.join(HERE, "..", "..", "tools")
sys.path.insert(0, TOOLS)
sys.path.insert(0, HERE)
import dsmtrace as dt  # noqa: E402
from test_model import trace_bytes  # noqa: E402

US = 1000
NAMES = {1: "PAGE_REQ", 2: "PAGE_REP", 3: "BARRIER_ARRIVE", 4: "BARRIER_RELEASE"}
REQ, REP, ARRIVE, RELEASE = 1, 2, 3, 4
G, K, A, B, R, T = 100, 3, 10, 20, 5, 50
F = A + B + 3                  # one fault, us
E = G + K * (F + G)            # node 0 enters the barrier
FIN0 = E + R + 2 + T           # node 0's finish
EXIT1 = E + R + A + 2          # node 1 leaves the barrier
FIN1 = EXIT1 + T               # node 1's finish


def faults_and_barrier():
    """The two nodes' trace files, as bytes."""
    app0, svc0 = [(dt.MARK, dt.MARK_START, 0, 0, 0, 0, 0)], []
    app1 = [(dt.MARK, dt.MARK_START, 0, 0, 0, 0, 0),
            (dt.BARRIER, 0, 0, 1, 5 * US, (5 + R) * US, EXIT1 * US),
            (dt.SEND, ARRIVE, 0, 16, (5 + R) * US, (6 + R) * US, 0),
            (dt.MARK, dt.MARK_FINISH, 0, 0, FIN1 * US, 0, 0)]
    svc1 = []
    svc0.append((dt.RECV, ARRIVE, 1, 16, (5 + R + A) * US, (5 + R + A) * US,
                 (6 + R + A) * US))
    for i in range(K):
        f0 = G + i * (F + G)
        app0.append((dt.FAULT, 0, 0, 7 + i, f0 * US, (f0 + F) * US, 0))
        app0.append((dt.SEND, REQ, 1, 64, f0 * US, (f0 + 1) * US, 0))
        svc1.append((dt.RECV, REQ, 0, 64, (f0 + A) * US, (f0 + A) * US, (f0 + A + 2) * US))
        svc1.append((dt.SEND, REP, 0, 8256, (f0 + A + 1) * US, int((f0 + A + 1.5) * US), 0))
        svc0.append((dt.RECV, REP, 1, 8256, (f0 + A + 1 + B) * US, (f0 + A + 1 + B) * US,
                     (f0 + A + 2 + B) * US))
    app0.append((dt.BARRIER, 0, 0, 1, E * US, (E + R) * US, (E + R + 2) * US))
    app0.append((dt.SEND, RELEASE, 1, 16, (E + R) * US, (E + R + 1) * US, 0))
    app0.append((dt.MARK, dt.MARK_FINISH, 0, 0, FIN0 * US, 0, 0))
    svc1.append((dt.RECV, RELEASE, 0, 16, (E + R + A) * US, (E + R + A) * US,
                 (E + R + A + 1) * US))
    for th in (app0, svc0, app1, svc1):
        th.sort(key=lambda r: r[4])
    return [trace_bytes(0, 2, [(0, app0), (1, svc0)], NAMES),
            trace_bytes(1, 2, [(0, app1), (1, svc1)], NAMES)]


def expected_parts(d):
    """Node 1's parts (ms) at D = d us more a message, on 2 hosts: it
    computes 5 + T us, releases in R, waits for node 0 (late) until node
    0 enters at E + 2Kd, then for node 0's release and its message
    (R + A + d + 2 us)."""
    late = E + 2 * K * d - (5 + R)
    return {"computing": (5 + T) / 1e3, "diff traffic": R / 1e3, "faults": 0.0,
            "lock hand-offs": 0.0, "barrier late": late / 1e3,
            "barrier wait": (late + R + A + d + 2) / 1e3}


def write(tmp, name, blobs):
    for rank, b in enumerate(blobs):
        with open(os.path.join(tmp, "%s.%d" % (name, rank)), "wb") as f:
            f.write(b)
    return os.path.join(tmp, name)


def params(tmp):
    """This machine's fit: 5 us a side, nothing per byte (latency 10 us)."""
    path = os.path.join(tmp, "this.json")
    with open(path, "w") as f:
        json.dump({"params": {"send0": 5.0, "recv0": 5.0}}, f)
    return path


def tool(*args):
    return subprocess.run([sys.executable, os.path.join(TOOLS, "dsm-model")] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class TestKnownAnswer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dsm-forecast-")
        cls.trace = write(cls.tmp, "fb", faults_and_barrier())
        cls.params = params(cls.tmp)

    def forecast(self, d, hosts="2"):
        """dsm-model forecast with a network every message of which is d us
        slower than this machine's (wire = d), its rows from --json."""
        out = os.path.join(self.tmp, "f%g-%s.json" % (d, hosts))
        r = tool("forecast", self.trace, "--params", self.params, "--nets", "this",
                 "--set", "wire=%g" % d, "--hosts", hosts, "--json", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            return json.load(f)["rows"], r.stdout

    def test_predict_adds_the_delay_along_faults_and_barrier(self):
        for d in (0, 100, 500):
            r = tool("predict", self.trace, "--delay-us", str(d))
            self.assertEqual(r.returncode, 0, r.stderr)
            got = {int(l.split()[0]): float(l.split()[2]) for l in r.stdout.splitlines()[1:]}
            self.assertAlmostEqual(got[0], (FIN0 + 2 * K * d) / 1e3, places=1)
            self.assertAlmostEqual(got[1], (FIN1 + (2 * K + 1) * d) / 1e3, places=1)

    def test_forecast_measured_row_is_the_trace(self):
        rows, out = self.forecast(0)
        m = rows[0]
        self.assertEqual((m["net"], m["hosts"], m["rank"]), ("measured", 2, 1))
        self.assertAlmostEqual(m["ms"], FIN1 / 1e3)
        for k, v in expected_parts(0).items():
            self.assertAlmostEqual(m["parts"][k], v, msg=k)
        self.assertEqual(m["dominant"], "barrier wait")
        self.assertIn("measured", out)

    def test_forecast_at_the_traced_hosts_is_the_replay(self):
        for d in (0, 100, 500):
            rows, _ = self.forecast(d)
            row = [r for r in rows if r.get("net") == "custom"][0]
            self.assertEqual(row["hosts"], 2)
            self.assertFalse(row["scaled"])
            self.assertAlmostEqual(row["ms"], (FIN1 + (2 * K + 1) * d) / 1e3)
            for k, v in expected_parts(d).items():
                self.assertAlmostEqual(row["parts"][k], v, msg="%s at %g us" % (k, d))
            # The band: the validation's errors -7% .. +24% (docs/tracing.md).
            lo, hi = row["band"]
            self.assertAlmostEqual(lo, row["ms"] / 1.24)
            self.assertAlmostEqual(hi, row["ms"] / 0.93)

    def test_forecast_scales_to_more_hosts(self):
        # 4 hosts from 2: computing halves, the release and the wait for
        # the last node stay, the tree's part doubles (log2 4 / log2 2).
        d = 100
        rows, out = self.forecast(d, "4")
        row = [r for r in rows if r.get("net") == "custom"][0]
        p = expected_parts(d)
        want = p["computing"] / 2 + p["diff traffic"] + p["barrier late"] + \
            2 * (p["barrier wait"] - p["barrier late"])
        self.assertTrue(row["scaled"])
        self.assertAlmostEqual(row["ms"], want)
        self.assertIn("~4", out)

    def test_forecast_refuses_beyond_four_times_the_trace(self):
        rows, out = self.forecast(0, "4,16")
        self.assertEqual([r["hosts"] for r in rows if r.get("refused")], [16])
        self.assertEqual(len([l for l in out.splitlines()
                              if l.split()[:3] == ["16", "not", "forecast"]]), 1)

    def test_forecast_explains_networks_and_assumptions(self):
        r = tool("forecast", self.trace, "--params", self.params)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [l.split() for l in r.stdout.splitlines() if l.strip()]
        for net in ("udp-10g", "udp-25g", "rdma", "eth", "loh", "loh-hb"):
            # a row for 2, 4 and 8 hosts, and a line saying what it is
            self.assertEqual([l[0] for l in lines if len(l) > 1 and l[1] == net],
                             ["2", "~4", "~8"], net)
            self.assertEqual(sum(1 for l in lines if l[0] == net), 1, net)
        for words in ("one dsm process a host", "band: docs/tracing.md", "ceil(log2 P)"):
            self.assertIn(words, r.stdout)


class TestBadInput(unittest.TestCase):
    """One line naming what is wrong and where, exit status 2."""

    def check(self, args, *words):
        r = tool(*args)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertTrue(r.stderr.startswith("dsm-model: "), r.stderr)
        for w in words:
            self.assertIn(w, r.stderr)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="dsm-forecast-bad-")
        self.params = params(self.tmp)

    def test_truncated_trace(self):
        b = faults_and_barrier()
        t = write(self.tmp, "cut", [b[0], b[1][:-40]])
        self.check(["forecast", t, "--params", self.params], t + ".1", "claims")

    def test_other_version(self):
        t = write(self.tmp, "v9", [trace_bytes(0, 1, [], version=9)])
        self.check(["forecast", t, "--params", self.params], t + ".0", "trace version 9")

    def test_missing_file(self):
        t = os.path.join(self.tmp, "nothing")
        self.check(["forecast", t, "--params", self.params], t, "no such trace")
        b = faults_and_barrier()
        t = write(self.tmp, "half", b[:1])
        self.check(["forecast", t, "--params", self.params], t + ".1")

    def test_unknown_network(self):
        t = write(self.tmp, "ok", faults_and_barrier())
        self.check(["forecast", t, "--params", self.params, "--nets", "udp-10g,warp"],
                   "--nets", "'warp'")

    def test_bad_hosts_and_one_node(self):
        t = write(self.tmp, "ok", faults_and_barrier())
        self.check(["forecast", t, "--params", self.params, "--hosts", "2,x"], "--hosts")
        self.check(["forecast", t, "--params", self.params, "--hosts", "1"], "--hosts", "1 hosts")
        one = write(self.tmp, "one", [trace_bytes(0, 1, [(0, [
            (dt.MARK, dt.MARK_START, 0, 0, 0, 0, 0),
            (dt.MARK, dt.MARK_FINISH, 0, 0, 5 * US, 0, 0)])])])
        self.check(["forecast", one, "--params", self.params], one, "1-node")

    def test_missing_profile(self):
        t = write(self.tmp, "ok", faults_and_barrier())
        p = os.path.join(self.tmp, "noprof")
        self.check(["forecast", t, "--params", self.params, "--profile", p], p, "--profile")


if __name__ == "__main__":
    unittest.main()
