#!/usr/bin/env python3
"""test_dsmprofile.py — the profile tool's pure pieces (tools/dsmprofile.py):
byte ranges and bitmaps, the true/false classifier, the interleave and the
advice, /proc maps, and the file's parser on good and broken input."""
import os
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.realpath(__file__))
TOOLS = os.path.join(HERE, "..", "..", "tools")
sys.path.insert(0, TOOLS)
import dsmprofile as dp  # noqa: E402


def rec_bytes(kind, sub=0, page=0, epoch=0, lock=0, t=0, dur=0, a=0, b=0, site=0, extra=()):
    return dp.REC.pack(kind, sub, len(extra), page, epoch, lock, t, dur, a, b, site) + \
        struct.pack("<%dQ" % len(extra), *extra)


def header(rank=0, nodes=1, nthreads=1, maps=b"", page_size=8192):
    return dp.HDR.pack(dp.MAGIC, dp.VERSION, rank, nodes, nthreads, page_size, 1000, 100,
                       0x200000000000, 0, 0, 0, 0, 1, 2, b"hlrc", b"/bin/true", len(maps)) + maps


class Bytes(unittest.TestCase):
    def test_runs_from_words(self):
        r = dp.Rec((dp.DIFF, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0), (0 | 64 << 32, 128 | 192 << 32), 0, 0)
        self.assertEqual(dp.runs_of_bits(dp.bits_of(r), 8192), [(0, 64), (128, 192)])

    def test_runs_from_bitmap(self):
        words = [0] * (8192 // 64)
        words[0] = 0xFF  # bytes 0-7
        words[1] = 1 << 63  # byte 127
        words[2] = 1  # byte 128: joins 127
        words[-1] = 1 << 63  # the last byte
        r = dp.Rec((dp.DIFF, dp.BITMAP, len(words), 0, 0, 0, 0, 0, 0, 0, 0), tuple(words), 0, 0)
        self.assertEqual(dp.runs_of_bits(dp.bits_of(r), 8192), [(0, 8), (127, 129), (8191, 8192)])

    def test_merge_intersect_bits(self):
        self.assertEqual(dp.merge_runs([(10, 20), (0, 5), (5, 8), (15, 30)]), [(0, 8), (10, 30)])
        self.assertEqual(dp.intersect([(0, 10), (20, 30)], [(5, 25)]), [(5, 10), (20, 25)])
        self.assertEqual(dp.intersect([(0, 10)], [(10, 20)]), [])
        bits = dp.bits_of_runs([(0, 8), (100, 104)])
        self.assertEqual(dp.count_bits(bits), 12)
        self.assertEqual(dp.runs_of_bits(bits, 8192), [(0, 8), (100, 104)])
        self.assertEqual(dp.runs_of_bits(bits, 102), [(0, 8), (100, 102)])
        self.assertEqual(dp.runs_of_bits(0, 8192), [])


class Classify(unittest.TestCase):
    def test_alternating_blocks_are_false_sharing(self):
        by = {0: [(i, i + 64) for i in range(0, 8192, 128)],
              1: [(i, i + 64) for i in range(64, 8192, 128)]}
        kind, shared, writers = dp.classify_writers(by)
        self.assertEqual((kind, shared, writers), ("false", [], [0, 1]))
        self.assertEqual(dp.interleave(by)[:2], (64, False))

    def test_same_bytes_are_true_sharing(self):
        kind, shared, writers = dp.classify_writers({0: [(0, 8)], 1: [(0, 8)], 2: [(64, 72)]})
        self.assertEqual((kind, shared, writers), ("true", [(0, 8)], [0, 1, 2]))

    def test_one_byte_in_common_is_true(self):
        kind, shared, _ = dp.classify_writers({0: [(0, 101)], 1: [(100, 200)]})
        self.assertEqual((kind, shared), ("true", [(100, 101)]))

    def test_one_writer_is_no_sharing(self):
        self.assertEqual(dp.classify_writers({0: [(0, 8)], 1: []})[0], None)

    def test_blocks_with_a_border_inside_the_page(self):
        by = {0: [(0, 3000)], 1: [(3000, 8192)]}
        self.assertEqual(dp.classify_writers(by)[0], "false")
        self.assertEqual(dp.interleave(by), (3000, True, [3000]))

    def test_advice(self):
        a = dp.advice("false", 8192, 64, False, [64, 128])
        self.assertIn("every 64 bytes", a)
        self.assertIn("8192", a)
        self.assertNotIn("DSM_PAGE_SIZE=4096", a)
        self.assertIn("DSM_PAGE_SIZE=4096 would", dp.advice("false", 8192, 4096, True, [4096]))
        b = dp.advice("false", 8192, 3000, True, [3000])
        self.assertIn("align", b)
        self.assertIn("only the 4 KiB around a border", b)
        self.assertIn("communicate", dp.advice("true", 8192))
        self.assertEqual(dp.advice(None, 8192), "")


class Sample(unittest.TestCase):
    def test_every_page_in_the_first_intervals_then_fewer(self):
        self.assertTrue(all(dp.bytes_wanted(p, e) for p in range(50) for e in range(dp.BYTES_ALL)))
        for e, r in ((64, 2), (256, 8), (4096, 128)):
            kept = sum(dp.bytes_wanted(p, e) for p in range(20000))
            self.assertAlmostEqual(kept / 20000, 1 / r, delta=0.3 / r)
        # the same choice for a page and interval wherever it is made
        self.assertEqual([dp.bytes_wanted(7, e) for e in range(1000)],
                         [dp.bytes_wanted(7, e) for e in range(1000)])


class Files(unittest.TestCase):
    def write(self, data, rank=0):
        d = tempfile.mkdtemp(prefix="test_dsmprofile-")
        path = os.path.join(d, "p")
        with open("%s.%d" % (path, rank), "wb") as f:
            f.write(data)
        return path

    def test_maps(self):
        text = ("555555554000-555555556000 r--p 00000000 08:01 10 /usr/bin/prog\n"
                "555555556000-555555558000 r-xp 00002000 08:01 10 /usr/bin/prog\n"
                "7ffff7dd0000-7ffff7df0000 r-xp 00000000 00:00 0 \n"
                "7ffff7e00000-7ffff7e10000 r-xp 00001000 08:01 11 /lib/libc.so.6\n")
        m = dp.parse_maps(text)
        self.assertEqual([(x.start, x.offset, x.path) for x in m],
                         [(0x555555556000, 0x2000, "/usr/bin/prog"),
                          (0x7ffff7e00000, 0x1000, "/lib/libc.so.6")])

    def test_a_good_file_reads_back(self):
        recs = rec_bytes(dp.FAULT, dp.WRITE, page=3, t=10, dur=5, a=0x401000, b=72 | 1 << 32) + \
            rec_bytes(dp.DIFF, 0, page=3, a=12, b=8, extra=(64 | 72 << 32,))
        data = header(maps=b"") + dp.THREAD.pack(0, 0, len(recs)) + recs
        nodes = dp.load(self.write(data))
        self.assertEqual(len(nodes), 1)
        rs = list(nodes[0].records())
        self.assertEqual([r.kind for r in rs], [dp.FAULT, dp.DIFF])
        self.assertEqual((rs[0].page, rs[0].b >> 32, rs[0].b & 0xFFFFFFFF), (3, 1, 72))
        self.assertEqual(dp.runs_of_bits(dp.bits_of(rs[1]), 8192), [(64, 72)])
        self.assertEqual(nodes[0].page_addr(3), 0x200000000000 + 3 * 8192)

    def test_broken_files_are_one_line_errors(self):
        good = rec_bytes(dp.FAULT)
        cases = {
            "not a dsm profile": b"NOTAPROF" + header()[8:],
            "a dsm trace (dsmrun --trace), not a profile: dsm-trace and dsm-model read it":
                b"DSMTRACE" + bytes(56),
            "too short": b"DSMPROF1",
            "cut short": header() + dp.THREAD.pack(0, 0, len(good)) + good[:-3],
            "unknown kind": header() + dp.THREAD.pack(0, 0, len(good)) + b"\x63" + good[1:],
            "extra words cut short": header() + dp.THREAD.pack(0, 0, 56) + rec_bytes(
                dp.DIFF, extra=(1,))[:56],
            "profile version": dp.HDR.pack(dp.MAGIC, 99, 0, 1, 0, 8192, 1, 1, 0, 0, 0, 0, 0, 0,
                                           0, b"", b"", 0),
        }
        for want, data in cases.items():
            with self.assertRaises(dp.ProfileError) as e:
                dp.load(self.write(data))
            self.assertIn(want, str(e.exception))
            self.assertNotIn("\n", str(e.exception))

    def test_a_trace_given_to_the_tool_names_its_tool(self):
        path = self.write(b"DSMTRACE" + bytes(56))
        r = subprocess.run([sys.executable, os.path.join(TOOLS, "dsm-profile"), path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr, "dsm-profile: %s.0: a dsm trace (dsmrun --trace), not a "
                         "profile: dsm-trace and dsm-model read it; dsmrun --profile FILE "
                         "writes a profile\n" % path)

    def test_one_nodes_file_names_the_run(self):
        path = self.write(header() + dp.THREAD.pack(0, 0, 0))
        self.assertEqual(len(dp.load(path + ".0")), 1)

    def test_missing_node_is_an_error(self):
        path = self.write(header(nodes=2) + dp.THREAD.pack(0, 0, 0))
        with self.assertRaises(dp.ProfileError) as e:
            dp.load(path)
        self.assertIn("cannot read", str(e.exception))


class FakeSymbols:
    """Every program counter is main at line pc of prog.c; no globals."""

    def want(self, maps, pc):
        return None, pc

    def resolve(self):
        pass

    def loc(self, maps, pc):
        return dp.Loc("main", "/u/prog.c", pc, "/u/prog")

    def globals_of(self, exe):
        return []


class Neighbours(unittest.TestCase):
    """A page holding the end of one allocation and the start of the next,
    each written by one node: both are false sharing across data, their
    examples in their own bytes, no grain; inside one allocation the
    alternating blocks are its own false sharing, with their grain."""

    def profile(self, writes):
        base = 0x200000000000
        paths = []
        tmp = tempfile.mkdtemp(prefix="test_dsmprofile-")
        for rank in (0, 1):
            recs = b""
            if rank == 0:  # a at page offset 0, b at 4096, allocated at lines 10 and 20
                recs += rec_bytes(dp.ALLOC, 0, t=1, a=base, b=4096, site=11)
                recs += rec_bytes(dp.ALLOC, 0, t=2, a=base + 4096, b=4096, site=21)
            for s_, e in writes[rank]:
                recs += rec_bytes(dp.DIFF, 0, page=0, t=5, a=e - s_, b=e - s_,
                                  extra=(s_ | e << 32,))
            data = header(rank=rank, nodes=2) + dp.THREAD.pack(0, 0, len(recs)) + recs
            path = os.path.join(tmp, "p.%d" % rank)
            with open(path, "wb") as f:
                f.write(data)
            paths.append(path)
        j = dp.to_json(dp.Profile(dp.load(os.path.join(tmp, "p")), FakeSymbols()), top=10)
        return {d["site"]: d for d in j["data"]}

    def test_neighbouring_allocations(self):
        d = self.profile({0: [(0, 64)], 1: [(4096, 4160)]})
        a, b = d["allocated at main (u/prog.c:10)"], d["allocated at main (u/prog.c:20)"]
        for x, other, node, runs in ((a, b, "0", [[0, 64]]), (b, a, "1", [[0, 64]])):
            sh = x["sharing"]
            self.assertEqual((sh["kind"], sh["false_within_page_intervals"]), ("false", 0))
            self.assertEqual(sh["neighbours"], {other["site"]: 1})
            self.assertEqual(sh["examples"]["false"]["bytes_by_node"], {node: runs})
            self.assertIsNone(sh["grain"])
            self.assertIn("neighbouring data", x["advice_false"])
            self.assertNotIn("alternate", x["advice_false"])

    def test_alternating_blocks_inside_one_allocation(self):
        d = self.profile({0: [(0, 64), (128, 192)], 1: [(64, 128), (4096, 4160)]})
        a = d["allocated at main (u/prog.c:10)"]["sharing"]
        self.assertEqual((a["kind"], a["false_within_page_intervals"], a["grain"]), ("false", 1, 64))
        self.assertEqual(a["neighbours"], {})
        self.assertEqual(sorted(a["examples"]["false"]["bytes_by_node"]), ["0", "1"])


class Report(unittest.TestCase):
    """The HTML report of a run with a lock and a barrier: its sections
    begin with their titles, its bars carry their labels."""

    def test_html_sections_and_bars(self):
        base = 0x200000000000
        recs = (rec_bytes(dp.ALLOC, 0, t=1, a=base, b=8192, site=11) +
                rec_bytes(dp.FAULT, dp.WRITE, page=0, t=2, dur=3000000, a=31, b=8) +
                rec_bytes(dp.LOCKSTAT, 0, page=3, dur=2000000, a=10, b=4, site=41) +
                rec_bytes(dp.LOCK, 0, page=3, dur=900000, a=1) +
                rec_bytes(dp.BARRIER, 0, page=0, t=5, dur=1000000, site=51))
        tmp = tempfile.mkdtemp(prefix="test_dsmprofile-")
        for rank in (0, 1):
            with open(os.path.join(tmp, "p.%d" % rank), "wb") as f:
                f.write(header(rank=rank, nodes=2) + dp.THREAD.pack(0, 0, len(recs)) + recs)
        p = dp.Profile(dp.load(os.path.join(tmp, "p")), FakeSymbols())
        html = dp.to_html(p)
        self.assertNotIn(", by time waited and hand-overs --", html)
        self.assertIn("<h3>Locks, by time waited and hand-overs</h3><pre>lock 3: 10/10 acquires",
                      html)
        self.assertIn("<h3>Barriers, by time waited</h3><pre>main (u/prog.c:50): 1/1 passed", html)
        self.assertIn("white-space:pre-wrap", html)
        self.assertIn(">1. allocated at main (u/prog.c:10)<", html)  # the data's bar
        self.assertIn(">1. main (u/prog.c:31)<", html)                # the code's bar
        text = dp.to_text(p)
        self.assertIn("-- locks, by time waited and hand-overs --\nlock 3: 10/10 acquires", text)


class OutlinedSymbols(dp.Symbols):
    """clang's OpenMP program: the symbol .omp_outlined..24 at 0x1000 holds
    the body .omp_outlined._debug__.19 (the construct at prog.c:74) inlined;
    a fault at 0x1010 is its line 80, one at 0x1020 has no line."""

    def __init__(self):
        super().__init__(addr2line="/bin/true", nm="/bin/true")

    def _symbols(self, obj, kinds):
        return [(0x1000, 0x100, ".omp_outlined..24")] if "t" in kinds else []

    def _addr2line(self, obj, vas):
        body = ".omp_outlined._debug__.19"
        table = {0x1000: dp.Loc(body, "/u/prog.c", 74, obj,
                                ((".omp_outlined..24", "/u/prog.c", 74),)),
                 0x1010: dp.Loc(body, "/u/prog.c", 80, obj),
                 0x1020: dp.Loc(body, "/u/prog.c", 0, obj)}
        return [table.get(v, dp.Loc("??", "??", 0, obj)) for v in vas]


class OpenMP(unittest.TestCase):
    def test_outlined_function_is_named_by_its_construct(self):
        sym = OutlinedSymbols()
        maps = [dp.Mapping(0, 0x10000, "r-xp", 0, "/u/prog")]
        sym.loads["/u/prog"] = (2, [])  # ET_EXEC: addresses as they are
        self.assertEqual(sym.loc(maps, 0x1010).text(), "OpenMP region at u/prog.c:74 (u/prog.c:80)")
        self.assertEqual(sym.loc(maps, 0x1020).text(), "OpenMP region at u/prog.c:74 (line unknown)")

    def test_runtime_region_data_is_dsms(self):
        class Sym(FakeSymbols):
            def loc(self, maps, pc):  # site 100: inside dsm's OpenMP runtime
                if pc == 99:
                    return dp.Loc("fork_region", "/x/src/omp/region.c", 440, "/u/prog")
                return dp.Loc("main", "/u/prog.c", pc, "/u/prog")
        base = 0x200000000000
        recs = (rec_bytes(dp.ALLOC, 0, t=1, a=base, b=64, site=100) +
                rec_bytes(dp.ALLOC, 0, t=1, a=base + 64, b=64, site=11) +
                rec_bytes(dp.FAULT, dp.WRITE, page=0, t=2, dur=1000, a=31, b=8) +
                rec_bytes(dp.FAULT, dp.WRITE, page=0, t=2, dur=1000, a=31, b=72))
        path = Files.write(self, header() + dp.THREAD.pack(0, 0, len(recs)) + recs)
        j = dp.to_json(dp.Profile(dp.load(path), Sym()))
        # the program's data apart from dsm's, which is named by what it is
        self.assertEqual([d["site"] for d in j["data"]], ["allocated at main (u/prog.c:10)"])
        self.assertEqual([d["site"] for d in j["dsm_data"]],
                         ["dsm's own data, not the program's: OpenMP region descriptions "
                          "(made by fork_region, omp/region.c)"])
        self.assertIn("-- dsm's own data", dp.to_text(dp.Profile(dp.load(path), Sym())))

    def test_outlined_body_inlined_into_its_symbol_is_named_by_its_construct(self):
        # clang -O2: .omp_outlined._debug__.1 inlined into .omp_outlined..2
        class Sym(OutlinedSymbols):
            def _addr2line(self, obj, vas):
                if vas == [0x1000]:
                    return [dp.Loc(".omp_outlined..24", "/u/prog.c", 74, obj)]
                return [dp.Loc(".omp_outlined._debug__.1", "/u/prog.c", 80, obj,
                               ((".omp_outlined..24", "/u/prog.c", 74),))]
        sym = Sym()
        maps = [dp.Mapping(0, 0x10000, "r-xp", 0, "/u/prog")]
        sym.loads["/u/prog"] = (2, [])
        self.assertEqual(sym.loc(maps, 0x1010).text(), "OpenMP region at u/prog.c:74 (u/prog.c:80)")

    def test_dsms_own_data_is_told_from_the_programs_by_the_caller(self):
        own = dp.Loc("pt_table_grow", "/x/src/runtime/pthreads.c", 131, "/u/libdsm.so")
        self.assertTrue(own.dsm_own())
        self.assertTrue(dp.Loc("omp_fork", "/x/src/omp/region.c", 440, "/u/libdsm.so").dsm_own())
        # the program's malloc and omp_alloc are dsm's code allocating for the program
        self.assertFalse(dp.Loc("malloc", "/x/src/runtime/heap.c", 80, "/u/libdsm.so").dsm_own())
        self.assertFalse(dp.Loc("omp_alloc", "/x/src/omp/omp_api.c", 9, "/u/libdsm.so").dsm_own())
        self.assertFalse(dp.Loc("main", "/u/prog.c", 9, "/u/prog").dsm_own())
        p = dp.Profile.__new__(dp.Profile)
        p.sites, p.n = {}, 1
        self.assertEqual(p.dsm_site(own).label, "dsm's own data, not the program's: pthreads "
                         "tables (made by pt_table_grow, runtime/pthreads.c)")


GDB_SCOPE = """Symbol i is a constant with value 0 (0x0), length 4.
Symbol argc is multi-location:
  Range 0x11d0-0x11f0: a variable in $rdi
  Range 0x11f0-0x1464: a complex DWARF expression:
     0: DW_OP_entry_value
       2: DW_OP_reg5 [$rdi]
     3: DW_OP_stack_value

, length 4.
Symbol partial is a variable at frame base reg $rsp offset 0+32, length 512.
Symbol steps is multi-location:
  Range 0x11ff-0x125f: a variable in $r12
  Range 0x125f-0x12a5: a complex DWARF expression:
     0: DW_OP_breg7 24 [$rsp]

  Range 0x12a5-0x145c: a variable in $r12
, length 4.
Symbol x is a variable at frame base reg $rbp offset 16+-20, length 8.
Symbol y is a variable with complex DWARF expression locating its address in memory, length 4.
Symbol z is a complex DWARF expression:
     0: DW_OP_fbreg -28
, length 4.
"""


class StackVariables(unittest.TestCase):
    def test_gdb_scope_gives_the_locals_in_memory(self):
        self.assertEqual(dp.parse_scope(GDB_SCOPE, 0x1290),
                         [("partial", "sp", 32, 512), ("steps", "sp", 24, 4), ("x", "fp", -4, 8),
                          ("z", "cfa", -28, 4)])
        # outside the range where it is in memory, steps is a register's
        self.assertNotIn("steps", [v[0] for v in dp.parse_scope(GDB_SCOPE, 0x1300)])

    def test_a_shared_stack_is_cut_into_its_frames_variables(self):
        base = 0x200000000000
        top = base + 8192
        sp, cfa = top - 0x260, top - 0x20  # main's frame, seen at a region's fork

        class Sym(FakeSymbols):
            def place(self, maps, pc):
                return "/u/prog", pc

            def locals_at(self, obj, vas):
                return {v: [("partial", "sp", 32, 512)] for v in vas}
        # node 0's thread wrote partial[0], node 1's partial[1], in one interval
        words0, words1 = [(sp + 32 - base) | (sp + 40 - base) << 32], \
            [(sp + 40 - base) | (sp + 48 - base) << 32]
        paths = []
        tmp = tempfile.mkdtemp(prefix="test_dsmprofile-")
        for rank, words in ((0, words0), (1, words1)):
            recs = b""
            if rank == 0:
                recs += rec_bytes(dp.ALLOC, dp.ALLOC_STACK, t=1, a=base, b=8192, site=0)
                recs += rec_bytes(dp.FRAMES, t=1, a=1, extra=(41, cfa, sp))
            recs += rec_bytes(dp.DIFF, 0, page=0, epoch=1, t=5, a=100, b=8, extra=words)
            recs += rec_bytes(dp.FAULT, dp.WRITE, page=0, epoch=1, t=4, dur=1000, a=31,
                              b=sp + 32 + 8 * rank - base)
            path = os.path.join(tmp, "p.%d" % rank)
            with open(path, "wb") as f:
                f.write(header(rank=rank, nodes=2) + dp.THREAD.pack(0, 0, len(recs)) + recs)
            paths.append(path)
        j = dp.to_json(dp.Profile(dp.load(os.path.join(tmp, "p")), Sym()))
        d = [d for d in j["data"] if "partial" in d["site"]]
        self.assertEqual(len(d), 1, [x["site"] for x in j["data"]])
        self.assertEqual(d[0]["site"], "local variable partial of main (u/prog.c), on a shared stack")
        self.assertEqual(d[0]["sharing"]["kind"], "false")
        self.assertEqual(d[0]["sharing"]["grain"], 8)


class Locations(unittest.TestCase):
    def test_runtime_frames_are_told_from_the_programs(self):
        self.assertTrue(dp.Loc("dsm_malloc", "/x/src/mem/alloc.c", 3, "/a.out").runtime())
        self.assertTrue(dp.Loc("memset", "??", 0, "/lib/x86_64-linux-gnu/libc.so.6").runtime())
        self.assertTrue(dp.Loc("__kmpc_barrier", "??", 0, "/a.out").runtime())
        self.assertFalse(dp.Loc("main", "/home/u/sharing.c", 40, "/home/u/a.out").runtime())
        self.assertFalse(dp.Loc(".omp_outlined.", "/home/u/bt.c", 40, "/home/u/bt").runtime())
        self.assertEqual(dp.Loc("main", "/nowhere/x/y.c", 4, "/a").text(), "main (x/y.c:4)")


if __name__ == "__main__":
    unittest.main(verbosity=1)
