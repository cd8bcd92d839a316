#!/usr/bin/env python3
"""test_model.py — the cost model's pure functions against hand-computed
cases, a synthetic trace's replay, and clear errors for bad input."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.realpath(__file__))
TOOLS = os.path.join(HERE, "..", "..", "tools")
sys.path.insert(0, TOOLS)
import dsmtrace as dt  # noqa: E402
import dsmmodel as dm  # noqa: E402

US = 1000  # ns


def trace_bytes(rank, nodes, threads, names=None, delay_ns=0, magic=b"DSMTRACE", version=1,
                ntypes=256):
    """A trace file as src/base/trace.c writes it (ntypes=64: as it wrote them before
    message types numbered beyond 63); threads: [(role, [rec, ...])]."""
    tn = b"".join((names or {}).get(i, "").encode().ljust(24, b"\0") for i in range(ntypes))
    out = dt.HDR.pack(magic, version, rank, nodes, len(threads), 8192, 61440, delay_ns,
                      b"hlrc".ljust(16, b"\0"), ntypes, 24) + tn
    for i, (role, recs) in enumerate(threads):
        out += dt.THREAD.pack(i, role, len(recs))
        out += b"".join(dt.REC.pack(*r) for r in recs)
    return out


NAMES = {1: "PAGE_REQ", 2: "PAGE_REP"}
REQ, REP = 1, 2


def fault_run():
    return [dt.parse(b, "t.%d" % i) for i, b in enumerate(fault_run_bytes())]


def fault_run_bytes():
    """Node 0 faults at 0 us, sends a 64-byte PAGE_REQ (0..1 us); node 1's
    service thread handles it 10..12 us and sends an 8256-byte PAGE_REP
    (11..11.5 us); node 0's service thread handles it 20..21 us; the fault
    ends at 22 us; marks: start 0, finish 30 us (node 0), 25 us (node 1)."""
    n0 = trace_bytes(0, 2, [
        (0, [(dt.MARK, dt.MARK_START, 0, 0, 0, 0, 0),
             (dt.SEND, REQ, 1, 64, 0, 1 * US, 0),
             (dt.FAULT, 0, 0, 7, 0, 22 * US, 0),
             (dt.MARK, dt.MARK_FINISH, 0, 0, 30 * US, 0, 0)]),
        (1, [(dt.RECV, REP, 1, 8256, 20 * US, 20 * US, 21 * US)])], NAMES)
    n1 = trace_bytes(1, 2, [
        (0, [(dt.MARK, dt.MARK_START, 0, 0, 0, 0, 0),
             (dt.MARK, dt.MARK_FINISH, 0, 0, 25 * US, 0, 0)]),
        (1, [(dt.RECV, REQ, 0, 64, 10 * US, 10 * US, 12 * US),
             (dt.SEND, REP, 0, 8256, 11 * US, int(11.5 * US), 0)])], NAMES)
    return [n0, n1]


class TestNet(unittest.TestCase):
    def test_packets_round_up(self):
        n = dm.Net("x", mtu=1472)
        self.assertEqual([n.packets(s) for s in (0, 1, 1472, 1473, 8192)], [1, 1, 1, 2, 6])

    def test_latency_is_overheads_plus_wire(self):
        n = dm.Net("x", send0=2, send_per_byte=0.001, recv0=3, recv_per_byte=0.002,
                   per_packet=1, irq=4, irq_send=7, wire=5, bandwidth=100, mtu=1000)
        # 1500 B: 2 packets. send 2 + 1.5 + 2*1 + 7 = 12.5; recv 3 + 3 + 2*(1+4) = 16
        self.assertAlmostEqual(n.send_overhead(1500), 12.5)
        self.assertAlmostEqual(n.recv_overhead(1500), 16.0)
        # latency leaves out the sender's interrupt: 5.5 + 5 + 15 + 16
        self.assertAlmostEqual(n.latency(1500), 41.5)

    def test_seed_table2_presets_in_cycles(self):
        nets = dm.presets(100.0)  # 100 MHz: 1 cycle = 0.01 us
        loh, hb, eth = nets["loh"], nets["loh-hb"], nets["eth"]
        # LOH, 8192 B: 400 cy + 8192/12.5 + 400 cy + 3000 cy = 4 + 655.36 + 4 + 30
        self.assertAlmostEqual(loh.latency(8192), 693.36)
        # LOH-HB: I/O bus (132 MB/s) is the bottleneck over 1 Gb/s (125 MB/s)? no: min is 125
        self.assertAlmostEqual(hb.latency(8192), 4 + 8192 / 125.0 + 4 + 30)
        self.assertAlmostEqual(loh.send_overhead(64), 4 + 30)
        # Eth, 64 B: one packet. send 15 + 64/132 + 40; recv 15 + 64/132 + 40 + 30; wire 64/12.5
        self.assertAlmostEqual(eth.latency(64), 55 + 64 / 132 + 85 + 64 / 132 + 64 / 12.5)
        self.assertEqual(eth.packets(8192), 6)

    def test_bad_parameters_are_one_line_errors(self):
        n = dm.Net("x")
        for k, v, msg in (("wire", "abc", "wire=abc: expected a number"),
                          ("bandwidth", "0", "bandwidth=0: expected a positive number"),
                          ("send0", "-1", "send0=-1: expected a non-negative finite number"),
                          ("nope", "1", "unknown network parameter 'nope'")):
            with self.assertRaises(dm.ParamError) as c:
                n.set(k, v)
            self.assertIn(msg, str(c.exception))
            self.assertNotIn("\n", str(c.exception))
        with self.assertRaises(dm.ParamError):
            dm.apply_settings(n, ["wire"])


class TestFit(unittest.TestCase):
    def test_fit_line_exact(self):
        a, b = dm.fit_line([(0, 3), (10, 23), (20, 43)])
        self.assertAlmostEqual(a, 3)
        self.assertAlmostEqual(b, 2)
        self.assertEqual(dm.fit_line([(5, 1), (5, 3)]), (2, 0.0))

    def test_fit_this_from_messages(self):
        msgs = []
        for size, send, lat in ((100, 2.01, 10.2), (1100, 2.11, 12.2), (10100, 3.01, 30.2)):
            for _ in range(5):
                msgs.append(dt.Msg(size=size, s0=0, s1=send * US, r1=lat * US))
        net, rows = dm.fit_this(msgs)
        self.assertEqual([r[0] for r in rows], [100, 1100, 10100])
        # send = 2 + 0.0001 s, latency = 10 + 0.002 s, so receive = 8 + 0.0019 s
        for k, v in (("send0", 2), ("send_per_byte", 0.0001), ("recv0", 8),
                     ("recv_per_byte", 0.0019)):
            self.assertAlmostEqual(net.p[k], v)
        self.assertAlmostEqual(net.latency(10100), 30.2)

    def test_fit_needs_two_sizes(self):
        with self.assertRaises(dm.ParamError):
            dm.fit_this([dt.Msg(size=8, s0=0, s1=1, r1=2)] * 10)


class TestRun(unittest.TestCase):
    def test_messages_match_by_type_and_order(self):
        msgs, ls, lr = dt.match_messages(fault_run())
        self.assertEqual((len(msgs), ls, lr), (2, 0, 0))
        self.assertEqual([(m.src, m.dst, m.size) for m in msgs], [(0, 1, 64), (1, 0, 8256)])

    def test_replay_unchanged_is_the_trace(self):
        run = dm.Run(fault_run())
        self.assertEqual(dm.replay(run, lambda m: 0), {0: 0.030, 1: 0.025})

    def test_replay_adds_delay_along_the_fault(self):
        # +5 us a message: REQ arrives 15 (handler 15..17), REP sent at 16
        # arrives 16 + 9 + 5 = 30 (handler 30..31), fault ends 32, node 0's
        # finish 40 us. Node 1's application thread did not wait: 25 us.
        run = dm.Run(fault_run())
        got = dm.replay(run, lambda m: 5)
        self.assertAlmostEqual(got[0], 0.040)
        self.assertAlmostEqual(got[1], 0.025)

    def test_replay_send_overhead_moves_the_sender(self):
        # The REQ's send call 3 us longer: node 0's fault sends at 0..4, the
        # REQ still arrives at 10 (its latency counts from the send's start).
        run = dm.Run(fault_run())
        self.assertAlmostEqual(dm.replay(run, lambda m: 0, lambda m: 3)[0], 0.030)

    def test_costs_split_latency_and_overhead(self):
        run = dm.Run(fault_run())
        net = dm.Net("x", send0=1, recv0=2, wire=10)
        c0, c1 = dm.costs(run, net, 0), dm.costs(run, net, 1)
        # node 0's read fault: REQ and REP, 13 us each
        self.assertEqual(c0["read fault"][:2], (2, 64 + 8256))
        self.assertAlmostEqual(c0["read fault"][2], 0.026)
        # node 1 served it: receive 2 + send 1
        self.assertEqual(c1["request service"][:2], (2, 64 + 8256))
        self.assertAlmostEqual(c1["request service"][2], 0.003)
        self.assertEqual(c1["request service"][3], "overhead")

    def test_time_split(self):
        s = dm.Run(fault_run()).time_split(0)
        self.assertAlmostEqual(s["read fault"], 0.022)
        self.assertAlmostEqual(s["computing"], 0.008)


class TestMalformed(unittest.TestCase):
    def test_errors_are_one_line(self):
        good = trace_bytes(0, 1, [(0, [(dt.MARK, 1, 0, 0, 0, 0, 0)])])
        cases = [(b"", "shorter than a trace header"),
                 (b"X" * 1700, "not a dsm trace (bad magic"),
                 (trace_bytes(0, 1, [], version=9), "trace version 9"),
                 (good[:-5], "claims 1 records"),
                 (good + b"junk", "4 bytes after the last thread"),
                 (good[:-32] + dt.REC.pack(99, 0, 0, 0, 0, 0, 0), "unknown kind 99"),
                 (trace_bytes(3, 2, []), "inconsistent header"),
                 (trace_bytes(0, 1, [], ntypes=0), "inconsistent header"),
                 (good[:dt.HDR.size + 100], "cut short in the message types' names")]
        for data, msg in cases:
            with self.assertRaises(dt.TraceError) as c:
                dt.parse(data, "f")
            self.assertIn(msg, str(c.exception))
            self.assertNotIn("\n", str(c.exception))

    def test_names_beyond_64_types(self):
        for ntypes in (64, 256):
            n = dt.parse(trace_bytes(0, 1, [], {1: "PAGE_REQ", 63: "LAST_OLD", 64: "SIGACTION"},
                                     ntypes=ntypes), "f")
            self.assertEqual((n.type_name(1), n.type_name(63)), ("PAGE_REQ", "LAST_OLD"))
            self.assertEqual(n.type_name(64), "SIGACTION" if ntypes > 64 else "type_64")

    def test_tools_exit_2_with_one_line(self):
        tmp = tempfile.mkdtemp()
        with open(os.path.join(tmp, "t.0"), "wb") as f:
            f.write(b"garbage")
        for tool, args in (("dsm-trace", ["json", os.path.join(tmp, "t")]),
                           ("dsm-model", ["report", os.path.join(tmp, "t")]),
                           ("dsm-trace", ["counts", os.path.join(tmp, "missing")])):
            r = subprocess.run([sys.executable, os.path.join(TOOLS, tool)] + args,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertTrue(r.stderr.startswith(tool + ": "), r.stderr)
        # A small trace, no --params: the missing fit in the user's terms,
        # not a sweep nobody asked for.
        for rank, n in enumerate(fault_run_bytes()):
            with open(os.path.join(tmp, "small.%d" % rank), "wb") as f:
                f.write(n)
        r = subprocess.run([sys.executable, os.path.join(TOOLS, "dsm-model"), "report",
                            os.path.join(tmp, "small")], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("no --params", r.stderr)
        self.assertIn("dsm-model fit -o PARAMS.json", r.stderr)
        self.assertNotIn("the sweep", r.stderr)
        # nets without --params says which networks need it.
        r = subprocess.run([sys.executable, os.path.join(TOOLS, "dsm-model"), "nets"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("udp-10g, udp-25g, udp-100g and this", r.stdout)
        r = subprocess.run([sys.executable, os.path.join(TOOLS, "dsm-model"), "nets",
                            "--base", "eth", "--set", "bandwidth=fast"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr.strip(), "dsm-model: bandwidth=fast: expected a number")


def bench_model():
    """bench/model, a script without .py, as a module."""
    import importlib.machinery
    import importlib.util
    path = os.path.join(HERE, "..", "..", "bench", "model")
    loader = importlib.machinery.SourceFileLoader("bench_model", path)
    spec = importlib.util.spec_from_loader("bench_model", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


class TestFigures(unittest.TestCase):
    """bench/model tables' figures: round ticks, an axis that fits the
    bars, and bars across the whole width however few they are."""

    def test_ticks_are_round_and_fit(self):
        bm = bench_model()
        for vmax, want in ((2243, (500, 2500)), (1804, (500, 2000)), (9.5, (2, 10)),
                           (100, (20, 100)), (101, (20, 120)), (0.3, (0.05, 0.3))):
            step, top = bm.axis_ticks(vmax)
            self.assertAlmostEqual(step, want[0])
            self.assertAlmostEqual(top, want[1])
            self.assertTrue(4 <= round(top / step) <= 8)
        self.assertEqual(bm.tick_text(0.15, 0.05), "0.15")
        self.assertEqual(bm.tick_text(1500, 500), "1500")

    def test_figure_spans_its_width(self):
        import re
        bm = bench_model()
        run = {"total": 2243.0, "split": {"computing": 600.0}}
        for net in ("this", "eth", "loh", "loh-hb"):
            run[net] = {"pred": 2000.0, "cost": {"PAGE_REQ": [1, 1, 300.0, "latency"]}}
        res = {"sor": {"seq_ms": 1500.0, "runs": {"hlrc.2": run}}}
        path = os.path.join(tempfile.mkdtemp(), "fig.svg")
        bm.write_fig(path, res, "sor", [2], ["hlrc"])
        svg = open(path).read()
        ticks = re.findall(r'text-anchor="end">([0-9.]+)<', svg)
        self.assertEqual(ticks, ["0", "500", "1000", "1500", "2000", "2500"])
        width = int(re.search(r'<svg [^>]*width="(\d+)"', svg).group(1))
        xs = [float(x) for x in re.findall(r'<rect x="([0-9.]+)"[^>]*><title>', svg)]
        self.assertGreater(max(xs), width / 2, "the bars end in the left half")


if __name__ == "__main__":
    unittest.main()
