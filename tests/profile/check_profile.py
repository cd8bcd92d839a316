#!/usr/bin/env python3
"""check_profile.py — profiles a program whose sharing is known, and checks
that the report says what is known (tests/profile/sharing.c).

  check_profile.py DSMRUN PROGRAM SOURCE PROTOCOL NODES [ROUNDS]
      runs `dsmrun -n NODES --protocol PROTOCOL --profile P PROGRAM`, then
      checks the report: the false-sharing array is named by its
      allocation line and said to be false sharing, with the 64-byte grain
      and every node as a writer; the counter under lock 1 is true sharing;
      the buffer a producer fills is read by true misses; the source lines
      that write and read them are named, with their data; lock 1's
      acquires, its call site and the counter it protects; both barriers'
      sites, passed ROUNDS (default 12) times by every node; the text, the
      JSON of tools/dsm-profile and the HTML. With more rounds than
      PROFILE_BYTES_ALL the diffs' bytes are sampled: every diff kept is
      in the sample the tool computes, and the verdicts stay right.
  check_profile.py DSMRUN REGIONS SOURCE --regions PROTOCOL NODES
      tests/profile/regions.c: successive fork-style regions (an OpenMP
      program's) with no barrier between them are successive intervals:
      an array written whole by one node a region is not shared, and
      another whose 64-byte blocks every node writes in each region is
      false sharing.
  check_profile.py DSMRUN PROGRAM SOURCE --bad-path
      a profile that cannot be written ends the job with one clear line.
  check_profile.py DSMRUN PROGRAM - --smoke NODES [DSMRUN_ARGS...] -- [ARGS...]
      any program profiled (threads on a node, say): the job ends well, the
      report reads every node's file, and every node faulted and passed
      barriers in it.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.dom.minidom

HERE = os.path.dirname(os.path.realpath(__file__))
TOOLS = os.path.join(HERE, "..", "..", "tools")
sys.path.insert(0, TOOLS)
import dsmprofile as dp  # noqa: E402

failures = []
SOURCE = "sharing.c"  # the program's source file, whose lines the report names


def check(ok, what):
    if not ok:
        failures.append(what)
    return ok


def profiled(dsmrun, nodes, dsmrun_args, prog, args):
    """Runs the program profiled; the profile's prefix, or None (a failure
    noted) when the job failed."""
    prefix = os.path.join(tempfile.mkdtemp(prefix="check_profile-"), "p")
    r = subprocess.run([dsmrun, "-n", str(nodes), "--timeout", "200", "--profile", prefix] +
                       dsmrun_args + [prog] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=260)
    if not check(r.returncode == 0, "the job failed (%d): %s" % (r.returncode, r.stderr[-600:])):
        return None
    return prefix


def markers(src):
    """{"FALSE-SHARING ALLOC": line, ...}: the lines marked in capitals."""
    out = {}
    with open(src) as f:
        for i, line in enumerate(f, 1):
            m = re.search(r"/\* ([A-Z][A-Z -]+[A-Z]) \*/", line)
            if m:
                out[m.group(1)] = i
    return out


def at(line):
    return "%s:%d)" % (SOURCE, line)


def find_site(j, line):
    for d in j["data"]:
        if at(line) in d["site"]:
            return d
    return None


def text_section(text, line):
    """The text report's block for the data allocated at sharing.c:LINE."""
    m = re.search(r"(?ms)^\d+\. [^\n]*%s.*?(?=^\d+\. |^-- )" % re.escape(at(line)), text)
    return m.group(0) if m else ""


def find_line(j, line):
    for c in j["code"]:
        if c["file"].endswith(SOURCE) and c["lineno"] == line:
            return c
    return None


def main():
    dsmrun, prog, src = sys.argv[1:4]
    if sys.argv[4] == "--bad-path":
        r = subprocess.run([dsmrun, "-n", "2", "--profile", "/nonexistent/dir/p", prog, "1"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        # Refused by dsmrun before any node starts (runtime/settings.c).
        check(r.returncode == 2, "status %d with an unwritable profile" % r.returncode)
        check(len(r.stderr.splitlines()) == 1, "not one line: %r" % r.stderr[-300:])
        check("cannot write the profile /nonexistent/dir/p." in r.stderr,
              "no clear error line: %r" % r.stderr[-300:])
        return finish()
    if sys.argv[4] == "--regions":
        return regions(dsmrun, prog, src, sys.argv[5], int(sys.argv[6]))
    if sys.argv[4] == "--smoke":
        return smoke(dsmrun, prog, int(sys.argv[5]), sys.argv[6:])
    protocol, nodes = sys.argv[4], int(sys.argv[5])
    global ROUNDS
    ROUNDS = int(sys.argv[6]) if len(sys.argv) > 6 else 12
    mk = markers(src)
    # an update protocol keeps copies current: no misses after the first
    invalidates = protocol != "erc-upd"
    prefix = profiled(dsmrun, nodes, ["--protocol", protocol], prog, [str(ROUNDS)])
    if not prefix:
        return finish()
    loaded = dp.load(prefix)
    outside = [(n.rank, r.page, r.epoch) for n in loaded for r in n.records(dp.DIFF)
               if not dp.bytes_wanted(r.page, r.epoch)]
    check(not outside, "diffs kept outside the sample (node, page, interval): %s" % outside[:5])
    p = dp.Profile(loaded)
    j = dp.to_json(p, top=50)
    text = dp.to_text(p, top=50)

    # by data
    fs = find_site(j, mk["FALSE-SHARING ALLOC"])
    if check(fs, "no data site names the false-sharing array's allocation (line %d):\n%s"
             % (mk["FALSE-SHARING ALLOC"], text)):
        sh = fs["sharing"]
        check(sh["kind"] == "false", "the array's sharing is %r, not false" % sh["kind"])
        check(sh["false_pages"] == 4,
              "the array's false pages: %d" % sh["false_pages"])
        check(sh["writers"] == list(range(nodes)), "the array's writers: %s" % sh["writers"])
        check(sh.get("grain") == 64, "the array's grain is %s bytes, not 64" % sh.get("grain"))
        check("every 64 bytes" in fs.get("advice_false", ""),
              "no advice about the 64-byte grain: %r" % fs.get("advice_false"))
        ex = sh["examples"].get("false")
        if check(ex, "no example page of the false sharing"):
            check(len(ex["bytes_by_node"]) == nodes, "the example page has writers %s"
                  % sorted(ex["bytes_by_node"]))
            for n_, runs in ex["bytes_by_node"].items():
                check(runs and all(e - s == 64 for s, e in runs),
                      "node %s's bytes in the example are not 64-byte blocks: %s" % (n_, runs[:3]))
        check(not invalidates or fs["misses"]["false"] > fs["misses"]["true"],
              "the array's misses are not mostly false: %s" % fs["misses"])
    ts = find_site(j, mk["TRUE-SHARING ALLOC"])
    if check(ts, "no data site names the counter's allocation (line %d):\n%s"
             % (mk["TRUE-SHARING ALLOC"], text)):
        check(ts["sharing"]["true_page_intervals"] > 0,
              "the counter is not true sharing: %s" % ts["sharing"])
        check(ts["sharing"]["false_page_intervals"] == 0,
              "the counter is said to be false sharing too: %s" % ts["sharing"])
    rs = find_site(j, mk["PRODUCER-CONSUMER ALLOC"])
    if check(rs, "no data site names the buffer's allocation (line %d)"
             % mk["PRODUCER-CONSUMER ALLOC"]):
        check(not invalidates or rs["misses"]["true"] > 0,
              "the buffer's reads are no true misses: %s" % rs["misses"])
        check(rs["sharing"]["false_page_intervals"] == 0,
              "the buffer (one writer an interval) is said to be falsely shared")

    # by code
    w = find_line(j, mk["FALSE-SHARING WRITE"])
    if check(w, "the array's writing line %d is not among the faulting lines:\n%s"
             % (mk["FALSE-SHARING WRITE"], text)):
        check(sum(w["per_node"]["write_faults"]) > 0, "its faults are not write faults")
        check(fs is None or fs["site"] in w["sites"], "its data is not the array: %s" % w["sites"])
    c = find_line(j, mk["CONSUMER READ"])
    if check(c, "the consumers' reading line %d is not among the faulting lines"
             % mk["CONSUMER READ"]):
        check(sum(c["per_node"]["read_faults"]) > 0, "the consumers' line has no read faults")
        check(not invalidates or c["misses"]["true"] > 0,
              "the consumers' misses are not true: %s" % c["misses"])

    # locks
    lk = [L for L in j["locks"] if L["id"] == 1]
    if check(lk, "lock 1 is not in the report"):
        L = lk[0]
        check(L["acquires"] == [ROUNDS] * nodes, "lock 1's acquires: %s" % L["acquires"])
        check(any(at(mk["LOCK SITE"]) in s["site"] for s in L["sites"]),
              "lock 1's site is not line %d: %s" % (mk["LOCK SITE"], L["sites"]))
        check(ts is None or any(d["site"] == ts["site"] for d in L["protects"]),
              "lock 1 does not protect the counter: %s" % L["protects"])
        check(sum(L["remote"]) > 0, "lock 1 never came from another node")

    # barriers
    for name in ("BARRIER SITE", "SECOND BARRIER"):
        b = [B for B in j["barriers"] if at(mk[name]) in B["site"]]
        if check(b, "no barrier at line %d: %s" % (mk[name], [B["site"] for B in j["barriers"]])):
            check(b[0]["count"] == [ROUNDS] * nodes, "barrier %d passed %s times"
                  % (mk[name], b[0]["count"]))

    check("FALSE SHARING" in text and "TRUE SHARING" in text,
          "the text does not say FALSE SHARING and TRUE SHARING")
    # what a reader sees: the array's block names its allocation line, says
    # false sharing and shows each node's bytes as 64-byte ranges; the
    # counter's says true sharing; the buffer's reads are true misses
    arr = text_section(text, mk["FALSE-SHARING ALLOC"])
    check(re.search(r"FALSE SHARING: nodes [\d,]+ wrote disjoint bytes", arr),
          "the array's block does not say false sharing:\n%s" % arr)
    wrote = re.findall(r"node (\d+) wrote bytes (\d+)-(\d+)", arr)
    check(len({n_ for n_, _, _ in wrote}) == nodes and
          all(int(e) - int(s_) + 1 == 64 for _, s_, e in wrote),
          "the array's block does not show every node's 64-byte ranges: %s" % wrote)
    check("every 64 bytes" in arr, "the array's block does not say the 64-byte grain")
    ctr = text_section(text, mk["TRUE-SHARING ALLOC"])
    check("TRUE SHARING: nodes" in ctr and "FALSE SHARING" not in ctr,
          "the counter's block does not say true sharing (only):\n%s" % ctr)
    buf = text_section(text, mk["PRODUCER-CONSUMER ALLOC"])
    mt = re.search(r"misses \(faults that brought the page\): (\d+) true", buf)
    check(not invalidates or (mt and int(mt.group(1)) > 0),
          "the buffer's block does not count true misses:\n%s" % buf)
    tool = os.path.join(TOOLS, "dsm-profile")
    out_json, out_html = prefix + ".json", prefix + ".html"
    t = subprocess.run([sys.executable, tool, prefix, "--json", out_json, "--html", out_html],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=200)
    if check(t.returncode == 0, "dsm-profile failed: %s" % t.stderr):
        with open(out_json) as f:
            check(json.load(f)["nodes"] == nodes, "the tool's JSON names the wrong node count")
        with open(out_html) as f:
            html = f.read()
        svgs = re.findall(r"<svg.*?</svg>", html, re.S)
        check(svgs, "the HTML has no picture")
        for svg in svgs:
            try:
                xml.dom.minidom.parseString(svg)
            except Exception as e:  # noqa: BLE001 (any parse error is the failure)
                check(False, "a picture is not well-formed SVG: %s" % e)
                break
    print(text)
    return finish()


def regions(dsmrun, prog, src, protocol, nodes):
    global SOURCE
    SOURCE = os.path.basename(src)
    mk = markers(src)
    prefix = profiled(dsmrun, nodes, ["--protocol", protocol], prog, ["8"])
    if not prefix:
        return finish()
    p = dp.Profile(dp.load(prefix))
    j = dp.to_json(p, top=50)
    text = dp.to_text(p, top=50)
    passed = find_site(j, mk["PASSED-ON ALLOC"])
    if check(passed, "no data site names the array passed from region to region (line %d):\n%s"
             % (mk["PASSED-ON ALLOC"], text)):
        sh = passed["sharing"]
        check(sh["kind"] is None, "the array one node writes a region is called %r sharing "
              "(%d true page-intervals): successive regions taken for one interval"
              % (sh["kind"], sh["true_page_intervals"]))
    inside = find_site(j, mk["IN-REGION ALLOC"])
    if check(inside, "no data site names the array every node writes in each region"):
        check(inside["sharing"]["kind"] == "false", "the blocks written in each region are %r "
              "sharing, not false" % inside["sharing"]["kind"])
    print(text)
    return finish()


def smoke(dsmrun, prog, nodes, rest):
    cut = rest.index("--") if "--" in rest else len(rest)
    extra, args = rest[:cut], rest[cut + 1:]
    prefix = profiled(dsmrun, nodes, extra, prog, args)
    if not prefix:
        return finish()
    p = dp.Profile(dp.load(prefix))
    t = p.totals()
    check(all(t["faults"]), "a node recorded no fault: %s" % t["faults"])
    check(all(sum(B["count"][n] for B in p.barriers.values()) for n in range(nodes)),
          "a node recorded no barrier")
    text = dp.to_text(p)
    check("-- by data" in text and "-- barriers" in text, "the report lacks a section")
    if p.protocol == "sc":
        check("no diffs in this run" in text, "under sc the report does not say it has no diffs")
    print(text)
    return finish()


def finish():
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
