#!/usr/bin/env python3
"""test_summaries.py — dsm-trace's barrier and fault summaries
(tools/dsmtrace.py: barrier_summary, fault_summary) on synthetic traces
whose answers are computed by hand, and the commands' output."""
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

US = 1000  # ns
NAMES = {1: "PAGE_REQ", 2: "PAGE_REP"}


def marks(end_us):
    return [(dt.MARK, dt.MARK_START, 0, 0, 0, 0, 0),
            (dt.MARK, dt.MARK_FINISH, 0, 0, end_us * US, 0, 0)]


def two_barriers(skew_us=0):
    """Epoch 1: node 0 enters at 10 us, its release ends at 14, it leaves at
    50; node 1 enters at 30, release to 31, leaves at 52. Epoch 2: node 1
    first (60, release to 70, leaves 100), node 0 at 80 (release to 81,
    leaves 99). Node 1's clock `skew_us` ahead."""
    s = skew_us
    n0 = [(dt.BARRIER, 0, 0, 1, 10 * US, 14 * US, 50 * US),
          (dt.BARRIER, 0, 0, 2, 80 * US, 81 * US, 99 * US)]
    n1 = [(dt.BARRIER, 0, 0, 1, (30 + s) * US, (31 + s) * US, (52 + s) * US),
          (dt.BARRIER, 0, 0, 2, (60 + s) * US, (70 + s) * US, (100 + s) * US)]
    m = marks(200 + s)
    return [trace_bytes(0, 2, [(0, m[:1] + n0 + m[1:])], NAMES),
            trace_bytes(1, 2, [(0, m[:1] + n1 + m[1:])], NAMES)]


def parsed(files):
    return [dt.parse(b, "t.%d" % i) for i, b in enumerate(files)]


class TestBarriers(unittest.TestCase):
    def test_split_on_one_clock(self):
        s = dt.barrier_summary(parsed(two_barriers()))
        # node 0: epoch 1 release 4, late 30 - 14 = 16, after 50 - 30 = 20;
        #         epoch 2 release 1, late 0 (it came last), after 18.
        self.assertEqual(s[0]["barriers"], 2)
        self.assertAlmostEqual(s[0]["ms"], (40 + 19) / 1e3)
        self.assertAlmostEqual(s[0]["release_ms"], 5 / 1e3)
        self.assertAlmostEqual(s[0]["late_ms"], 16 / 1e3)
        self.assertAlmostEqual(s[0]["after_ms"], 38 / 1e3)
        # node 1: epoch 1 release 1, late 0, after 21; epoch 2 release 10,
        #         late 80 - 70 = 10, after 20.
        self.assertAlmostEqual(s[1]["release_ms"], 11 / 1e3)
        self.assertAlmostEqual(s[1]["late_ms"], 10 / 1e3)
        self.assertAlmostEqual(s[1]["after_ms"], 41 / 1e3)
        self.assertTrue(s[0]["one_clock"] and s[1]["one_clock"])

    def test_clocks_apart_are_not_split(self):
        # Node 1's clock 1 s ahead: node 0 "leaves" epoch 1 before node 1
        # "enters" it, which one clock never shows.
        s = dt.barrier_summary(parsed(two_barriers(skew_us=1000000)))
        self.assertFalse(s[0]["one_clock"])
        self.assertIsNone(s[0]["late_ms"])
        self.assertIsNone(s[1]["after_ms"])
        self.assertAlmostEqual(s[1]["release_ms"], 11 / 1e3)


def faults():
    """Node 0's application thread: a write fault 0..100 us that sent a
    PAGE_REQ (10..12 us) and received datagrams stamped before the fault
    began (arrival 0.5 us; they end within it); a write fault 200..205 us
    with nothing inside; a read fault 300..340 us that sent one."""
    recs = marks(1000)[:1] + [
        (dt.SEND, 1, 1, 32, 10 * US, 12 * US, 0),
        (dt.DGRAM_IN, 0, 1, 7, US // 2, 90 * US, 91 * US),
        (dt.FAULT, 1, 0, 5, 0 * US + 1, 100 * US, 0),
        (dt.FAULT, 1, 0, 6, 200 * US, 205 * US, 0),
        (dt.SEND, 1, 1, 32, 301 * US, 302 * US, 0),
        (dt.FAULT, 0, 0, 9, 300 * US, 340 * US, 0),
    ] + marks(1000)[1:]
    return [trace_bytes(0, 2, [(0, recs)], NAMES), trace_bytes(1, 2, [(0, marks(1000))], NAMES)]


class TestFaults(unittest.TestCase):
    def test_asked_and_served(self):
        s = dt.fault_summary(parsed(faults()))
        w, r = s[0]["write"], s[0]["read"]
        self.assertEqual((w["faults"], w["asked"]), (2, 1))
        self.assertAlmostEqual(w["ms"], (100 - 0.001 + 5) / 1e3)
        self.assertAlmostEqual(w["asked_ms"], (100 - 0.001) / 1e3)
        self.assertEqual((r["faults"], r["asked"]), (1, 1))
        self.assertAlmostEqual(r["asked_ms"], 40 / 1e3)
        self.assertEqual(s[1]["write"]["faults"], 0)


class TestCommands(unittest.TestCase):
    def run_tool(self, cmd, files):
        with tempfile.TemporaryDirectory() as d:
            for rank, b in enumerate(files):
                with open(os.path.join(d, "t.%d" % rank), "wb") as f:
                    f.write(b)
            return subprocess.run([sys.executable, os.path.join(TOOLS, "dsm-trace"), cmd,
                                   os.path.join(d, "t")], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)

    def test_output(self):
        for cmd, files, want in (
                ("barriers", two_barriers(), "after it 0.0 ms"),
                ("barriers", two_barriers(1000000), "the nodes' clocks differ"),
                ("faults", faults(), "write faults 2, 0.1 ms: 1 asked another node")):
            r = self.run_tool(cmd, files)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(want, r.stdout)

    def test_locks_without_locks_is_one_line(self):
        r = self.run_tool("locks", faults())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(),
                         ["no locks: the program took none in the statistics' window (2 nodes)"])

    def test_locks_on_one_node_only(self):
        # node 0 takes lock 3 from node 1 (10..30 us, notices to 31); node 1 none
        recs = marks(1000)[:1] + [(dt.LOCK, 1, 0, 3, 10 * US, 30 * US, 31 * US)] + marks(1000)[1:]
        r = self.run_tool("locks", [trace_bytes(0, 2, [(0, recs)], NAMES),
                                    trace_bytes(1, 2, [(0, marks(1000))], NAMES)])
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], "node 0: 1 acquires, 1 needed another node (1 of 1 locks)")
        self.assertEqual(lines[-1], "node 1: no locks taken")

    def test_a_profile_is_named_with_its_tool(self):
        profile = b"DSMPROF1" + bytes(400)
        r = self.run_tool("counts", [profile])
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        self.assertIn("a dsm sharing profile (dsmrun --profile), not a trace: dsm-profile reads it",
                      r.stderr)


if __name__ == "__main__":
    unittest.main()
