#!/usr/bin/env python3
"""check_splash3_barnes.py — the sharing profile of an unmodified SPLASH-3
program names the lines a reader of its code expects.

  check_splash3_barnes.py SPLASH3 DSMCC PARMACS_M4 DSMRUN [BODIES]

Builds SPLASH-3's Barnes (SPLASH3/codes/apps/barnes, a copy, no source
changed) with dsmcc and dsm's PARMACS macros the way bench/unmodified/run
does, plus `m4 -s` so that the debug information names the .c.in lines
(SPLASH-3's Makefile expands them into .c files it deletes), runs it on 2
nodes with --profile and checks the report against the source itself:

  - every lock call site the report names is a line of the source that
    takes a lock (LOCK, ALOCK, CONDVARWAIT), and among them are the
    ALOCK(CellLock->CL, ...) lines of gravsub (the
    force phase's per-cell lock, taken from the other node) and
    loadtree's (the tree build);
  - every barrier site is a BARRIER(...) line (also the one that ends
    maketree, no tail call: dsm/parmacs.m4);
  - the body array (bodytab = G_MALLOC in testdata) is the data with the
    most read faults and pages fetched, and gravsub's lock line is among
    the faulting lines.

The expected lines are found in the source, not written here, so that a
SPLASH-3 checkout whose lines moved still tests the same thing.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import dsmprofile as dp  # noqa: E402
from check_profile import check, failures, finish  # noqa: E402


def source_lines(src_dir, pattern):
    """{(file, line)} of the .c.in lines matching pattern."""
    out = set()
    for name in os.listdir(src_dir):
        if name.endswith(".c.in"):
            with open(os.path.join(src_dir, name)) as f:
                for i, line in enumerate(f, 1):
                    if re.search(pattern, line):
                        out.add((name, i))
    return out


def function_of(src_dir, name, line):
    """The function a line of NAME lies in: the last `name(` at column 0
    or after a return type, before it (SPLASH-3's K&R-ish style)."""
    fn = None
    with open(os.path.join(src_dir, name)) as f:
        for i, text in enumerate(f, 1):
            if i > line:
                break
            m = re.match(r"^(?:[A-Za-z_][\w \*]*\s+\**)?([A-Za-z_]\w*)\s*\([^;]*$", text)
            if m and m.group(1) not in ("if", "while", "for", "switch", "return"):
                fn = m.group(1)
    return fn


def site_lines(site):
    """[(file, line)] of a report's call site 'f (dir/file:line) from g (...)'."""
    return [(os.path.basename(f), int(n)) for f, n in re.findall(r"\(([^():]+):(\d+)\)", site)]


def main():
    splash3, dsmcc, macros, dsmrun = sys.argv[1:5]
    bodies = int(sys.argv[5]) if len(sys.argv) > 5 else 4096
    codes = os.path.join(splash3, "codes")
    tmp = tempfile.mkdtemp(prefix="check_splash3_barnes-")
    work = os.path.join(tmp, "codes")
    os.makedirs(os.path.join(work, "apps"))
    shutil.copy(os.path.join(codes, "Makefile.config"), work)
    src = os.path.join(work, "apps", "barnes")
    shutil.copytree(os.path.join(codes, "apps", "barnes"), src)
    b = subprocess.run(["make", "-C", src, "CC=" + dsmcc, "MACROS=" + macros,
                        "M4=m4 -s -Ulen -Uindex"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    if not check(b.returncode == 0, "Barnes did not build:\n" + b.stdout[-2000:]):
        return finish()
    inp = os.path.join(tmp, "input")
    with open(inp, "w") as f:  # bench/unmodified/run's input, 2 processors
        f.write("\n%d\n123\n\n0.025\n0.05\n1.0\n2.0\n5.0\n0.075\n0.25\n2\n" % bodies)
    prefix = os.path.join(tmp, "p")
    with open(inp) as stdin:
        r = subprocess.run([dsmrun, "-n", "2", "--timeout", "400", "--profile", prefix,
                            os.path.join(src, "BARNES")], cwd=src, stdin=stdin,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=460)
    if not check(r.returncode == 0, "Barnes failed (%d): %s" % (r.returncode, r.stderr[-600:])):
        return finish()
    p = dp.Profile(dp.load(prefix))
    j = dp.to_json(p, top=1000)
    text = dp.to_text(p, top=10)

    alock = source_lines(src, r"^\s*ALOCK\(CellLock->CL,")
    # a lock is taken at LOCK (Global->CountLock), ALOCK, and again where a
    # condition wait returns (CONDVARWAIT in hackcofm)
    takes = source_lines(src, r"^\s*(A?LOCK|CONDVARWAIT)\(")
    barrier = source_lines(src, r"^\s*BARRIER\(")
    grav = {(f, n) for f, n in alock if function_of(src, f, n) == "gravsub"}
    load = {(f, n) for f, n in alock if function_of(src, f, n) == "loadtree"}
    check(grav and load, "the source's gravsub and loadtree ALOCK lines not found: %s" % alock)

    # locks: each site's first frame is the ALOCK line; gravsub's and loadtree's are there
    lock_sites, remote_grav = set(), 0
    for L in j["locks"]:
        for s in L["sites"]:
            first = site_lines(s["site"])[:1]
            lock_sites.update(first)
            if set(first) & grav:
                remote_grav += sum(L["remote"])
    stray = {s for s in lock_sites if s not in takes}
    check(not stray, "lock sites that take no lock in the source: %s" % sorted(stray))
    check(lock_sites & grav, "gravsub's cell lock %s is not among the lock sites %s"
          % (sorted(grav), sorted(lock_sites)))
    check(lock_sites & load, "loadtree's cell locks %s are not among the lock sites %s"
          % (sorted(load), sorted(lock_sites)))
    check(remote_grav > 0, "gravsub's cell locks never came from the other node")

    # barriers: every site's line is a BARRIER(...) of the source
    bsites = {s for B in j["barriers"] for s in site_lines(B["site"])[:1]}
    check(bsites and bsites <= barrier, "barrier sites that are no BARRIER line: %s"
          % sorted(bsites - barrier))

    # data: the body array faults most and fetches most (counts: the
    # ranking by time waited moves with the machine's load, which makes a
    # node that waits for a CPU wait in whatever it touched); code:
    # gravsub's lock line faults
    bodytab = source_lines(src, r"bodytab = \(bodyptr\) G_MALLOC")

    def most(count):
        best = max(j["data"], key=lambda d: sum(d["per_node"][count]), default=None)
        return best["site"] if best else ""
    for count in ("read_faults", "fetched"):
        top = most(count)
        check(set(site_lines(top)[:1]) & bodytab,
              "the data with the most %s is %r, not the body array %s"
              % (count, top, sorted(bodytab)))
    code = {(os.path.basename(c["file"]), c["lineno"]) for c in j["code"]}
    check(code & grav, "gravsub's lock line %s is not among the faulting lines" % sorted(grav))
    print(text)
    if not failures:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
