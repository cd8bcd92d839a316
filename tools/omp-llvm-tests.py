#!/usr/bin/env python3
"""omp-llvm-tests.py -- LLVM's OpenMP runtime tests, run the way lit runs them,
once against libomp (the reference) and once against dsm per layout.

    tools/omp-llvm-tests.py RUNTIME_DIR [LAYOUT...]     (default: 2 4 2x2)

RUNTIME_DIR is a checkout's openmp/runtime (or its test/ folder), fetched
outside this repository: the tests include ../../src/kmp_platform.h, so the
folder above test/ must hold src/kmp_platform.h. A LAYOUT is N (N nodes,
one thread each) or NxT (N nodes, T threads each by default).

Every *.c file under test/ is a test, as lit's config (suffixes .c and
.cpp; the .cpp ones are C++ and not counted here, and the header says how
many there are). For each, as lit does:
  - every `// RUN:` line (a trailing backslash joins the next), the lines of
    one test joined with &&, run by bash with pipefail (lit's default);
  - lit.cfg's substitutions in lit.cfg's order (%libomp-compile-and-run,
    %libomp-compile, %libomp-run, %clang, %openmp_flags, %flags, %python,
    FileCheck -> `tee %t.out | FileCheck`, %sort-threads, %preload-tool,
    %no-as-needed-flag), then %s %S %p %t %T;
  - `REQUIRES:` (every feature named must be available), `UNSUPPORTED:`
    (any feature named makes it unsupported) and `XFAIL:` (any feature
    named, or *, makes failure expected: a failure is XFAIL, which lit
    counts as a success, and a pass is XPASS, which lit counts as a failure)
    over the features lit would have here: clang, clang-M, clang-M.m,
    clang-M.m.p (the C compiler's version), linux, affinity, and ompt when
    the reference libomp exports ompt_start_tool and FileCheck is found.
A test passes when all its RUN lines pass.

The reference: clang -fopenmp (libomp), each test run with OMP_NUM_THREADS
set to the layout's total thread count (N x T); a test's own `env` prefix
wins, as it would under lit. The denominator of a layout is the tests that
pass on the reference at its thread count; every other test is listed as
excluded with the reason its reference run gave (UNSUPPORTED ones too).

dsm: %libomp-compile is `dsmcc -fopenmp -pthread %flags %s -o %t -lm`,
%libomp-run is `dsmrun -n N --timeout TIMEOUT %t`; %clang alone (a tool's
shared library, built without -fopenmp) stays clang. The environment is
the reference's: OMP_NUM_THREADS=N x T (a test's own env prefix wins), so
NxT is a default team of T threads on each of N nodes; as on libomp, a
test that asks for more threads gets them (dsmrun --threads T would cap
them at N x T: docs/openmp.md). One line per test and layout:
  PASS | XFAIL | XPASS | FAIL (a wrong result: the test's status or
  FileCheck) | CRASH (a signal) | HANG (past the time limit) |
  NOLINK (refused at build: the first undefined reference) |
  REFUSED (dsm's one line at start naming what it does not do)
then, per layout, the count of passes over the denominator.

A test that runs past its limit (on either side) is run once more with a
limit --retry-scale times as long (default 10) before it is counted: the
question is whether it passes, not how fast (tasking/omp_taskwait sleeps
500 s on one thread per node, whose tasks run one after another).

Options (or the environment variable in brackets):
  --build DIR    dsm's build folder [BUILD], default build
  --timeout S    limit of one program run [TIMEOUT], default 60
  --retry-scale K  a test past its limit runs again with K times the limit
  --jobs J       tests at once [JOBS], 1 or 2 (the machine is shared)
  --filter RE    only tests whose path (under test/) matches RE [FILTER]
  --out FILE     also write the result lines to FILE [OUT]
  --keep DIR     keep every test's work folder under DIR
  --ref-only     run the reference alone (the denominator)
  --ref FILE     take the reference's outcomes from FILE (the REF- lines
                 of an earlier --out of the same tests) instead of running it
"""
import argparse
import concurrent.futures
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading

KEYWORDS = ("RUN:", "REQUIRES:", "UNSUPPORTED:", "XFAIL:")
# dsm's one-line refusals of what it does not run (docs/openmp.md).
REFUSAL = re.compile(r"dsm: node \d+: (?!warning:).*(not supported|does not support|"
                     r"not implemented|from main's thread only|dsm runs no |refus)")


def parse_test(path):
    """The test's RUN lines and its REQUIRES/UNSUPPORTED/XFAIL items, as lit
    reads them (a keyword anywhere in a line; RUN lines ending in a
    backslash continue on the next RUN line)."""
    runs, requires, unsupported, xfail = [], [], [], []
    pending = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            for kw in KEYWORDS:
                i = line.find(kw)
                if i < 0:
                    continue
                text = line[i + len(kw):].rstrip("\r\n").strip()
                if kw == "RUN:":
                    if pending is not None:
                        text = pending + " " + text
                        pending = None
                    if text.endswith("\\"):
                        pending = text[:-1].rstrip()
                    else:
                        runs.append(text)
                else:
                    items = [x.strip() for x in text.split(",") if x.strip()]
                    {"REQUIRES:": requires, "UNSUPPORTED:": unsupported,
                     "XFAIL:": xfail}[kw].extend(items)
                break
    if pending is not None:
        runs.append(pending)
    return runs, requires, unsupported, xfail


def clang_version(cc):
    out = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"clang version (\d+)\.(\d+)\.(\d+)", out)
    if not m:
        sys.exit("omp-llvm-tests: cannot read %s's version" % cc)
    return m.groups()


def find_filecheck(cc):
    real = os.path.dirname(os.path.realpath(shutil.which(cc) or cc))
    for d in (real, "/usr/lib/llvm-%s/bin" % clang_version(cc)[0]):
        p = os.path.join(d, "FileCheck")
        if os.access(p, os.X_OK):
            return p
    return shutil.which("FileCheck")


def libomp_has_ompt(cc):
    """Whether the libomp that clang -fopenmp links exports ompt_start_tool
    (lit's has_ompt: LIBOMP_OMPT_SUPPORT and LIBOMP_OMPT_OPTIONAL)."""
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "p.c"), os.path.join(d, "p")
        with open(src, "w") as f:
            f.write("#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n")
        if subprocess.run([cc, "-fopenmp", src, "-o", exe]).returncode != 0:
            sys.exit("omp-llvm-tests: clang -fopenmp cannot build a program (libomp-dev?)")
        ldd = subprocess.run(["ldd", exe], capture_output=True, text=True).stdout
    m = re.search(r"lib(i?omp\S*)\.so\S* => (\S+)", ldd)
    if not m:
        return False, "(no libomp in ldd's list)"
    lib = os.path.realpath(m.group(2))
    syms = subprocess.run(["nm", "-D", "--defined-only", lib],
                          capture_output=True, text=True).stdout
    return bool(re.search(r"\bompt_start_tool\b", syms)), lib


class Runner:
    def __init__(self, args):
        self.args = args
        self.root = args.runtime
        self.testdir = os.path.join(self.root, "test")
        self.cc = "clang"
        maj, mi, pa = clang_version(self.cc)
        self.version = "%s.%s.%s" % (maj, mi, pa)
        self.filecheck = find_filecheck(self.cc)
        self.has_ompt, self.libomp = libomp_has_ompt(self.cc)
        self.features = {"clang", "clang-" + maj, "clang-%s.%s" % (maj, mi),
                         "clang-%s.%s.%s" % (maj, mi, pa), "linux", "affinity"}
        if self.has_ompt and self.filecheck:
            self.features.add("ompt")
        self.dsmcc = os.path.join(args.build, "tools", "dsmcc")
        self.dsmrun = os.path.join(args.build, "tools", "dsmrun")
        self.lock = threading.Lock()
        self.out = open(args.out, "w") if args.out else None

    def emit(self, line):
        with self.lock:
            print(line, flush=True)
            if self.out:
                self.out.write(line + "\n")
                self.out.flush()

    # lit.cfg's substitutions, in its order, then lit's own (%s, %S, ...).
    def substitutions(self, layout, tmpdir, tmpbase, src):
        flags = "-I %s -I %s" % (self.testdir, os.path.join(self.testdir, "ompt"))
        libs = " -lm"
        compile_c = "%T/.cc %openmp_flags %flags %s -o %t" + libs
        run = "%T/.run %t"
        subs = [
            ("%libomp-compile-and-run", "%libomp-compile && %libomp-run"),
            ("%libomp-cxx-compile-and-run", "%libomp-cxx-compile && %libomp-run"),
            ("%libomp-cxx-compile", "%clangXX %openmp_flags %flags -std=c++11 %s -o %t" + libs),
            ("%libomp-compile", compile_c),
            ("%libomp-run", run),
            ("%clangXX", "clang++"),
            ("%clang", "%T/.tcc"),
            ("%openmp_flags", "-fopenmp -pthread"),
            ("%flags", flags),
            ("%python", "python3"),
        ]
        if "ompt" in self.features:
            subs += [
                ("FileCheck", "tee %%t.out | %s" % self.filecheck),
                ("%sort-threads", "sort -n -s"),
                ("%preload-tool", "env LD_PRELOAD=%T/tool.so"),
                ("%no-as-needed-flag", "-Wl,--no-as-needed"),
            ]
        elif self.filecheck:
            subs += [("FileCheck", self.filecheck)]
        subs += [("%s", src), ("%S", os.path.dirname(src)), ("%p", os.path.dirname(src)),
                 ("%t", tmpbase + ".tmp"), ("%T", tmpdir)]
        return subs

    def expand(self, line, subs):
        line = line.replace("%%", "\0")
        for a, b in subs:
            # each substitution once over the line, in order (lit's re.sub)
            line = line.replace(a, b.replace("%%", "%"))
        return line.replace("\0", "%")

    def write_wrappers(self, tmpdir, layout, timeout):
        """.cc (the OpenMP compiler), .tcc (%clang alone) and .run (the
        program) record each command's status in events, so that the
        outcome can be told: a build refused, a run past its limit, a crash,
        a refusal, or a wrong result."""
        ev = os.path.join(tmpdir, ".events")
        err = os.path.join(tmpdir, ".stderr")
        q = shlex.quote
        if layout is None:
            cc = "clang"
            run = 'timeout -k 5 %d "$@"' % timeout
        else:
            nodes, threads = layout
            cc = q(os.path.abspath(self.dsmcc))
            run = '%s -n %d --timeout %d "$@"' % (q(os.path.abspath(self.dsmrun)), nodes, timeout)
            run = "timeout -k 5 %d %s" % (timeout + 30, run)
        for name, cmd, what in ((".cc", cc + ' "$@"', "build"),
                                (".tcc", 'clang "$@"', "tool"),
                                (".run", run, "run")):
            with open(os.path.join(tmpdir, name), "w") as f:
                f.write("#!/bin/bash\n%s 2> >(tee -a %s >&2)\nrc=$?\n"
                        "echo \"%s $rc $*\" >> %s\nexit $rc\n" % (cmd, q(err), what, q(ev)))
            os.chmod(os.path.join(tmpdir, name), 0o755)

    def run_one(self, rel, layout, nthreads, limit_scale=1):
        """Runs one test's RUN lines: returns (outcome, detail)."""
        src = os.path.join(self.testdir, rel)
        runs, requires, unsupported, xfail = self.parsed[rel]
        missing = [r for r in requires if r not in self.features]
        if missing:
            return "UNSUPPORTED", "requires " + ", ".join(missing)
        hit = [u for u in unsupported if u in self.features]
        if hit:
            return "UNSUPPORTED", "unsupported on " + ", ".join(hit)
        if not runs:
            return "UNSUPPORTED", "no RUN line"
        expect_fail = any(x == "*" or x in self.features for x in xfail)
        tag = "ref-t%d" % nthreads if layout is None else "dsm-%dx%d" % layout
        base = os.path.join(self.work, rel.replace("/", "_")[:-2], tag)
        if os.path.exists(base):
            shutil.rmtree(base)
        os.makedirs(base)
        timeout = self.args.timeout * limit_scale
        self.write_wrappers(base, layout, timeout)
        subs = self.substitutions(layout, base, os.path.join(base, os.path.basename(src)), src)
        script = " &&\n".join("{ %s ; }" % self.expand(r, subs) for r in runs)
        with open(os.path.join(base, ".script"), "w") as f:
            f.write("set -o pipefail\n" + script + "\n")
        env = dict(os.environ)
        env["OMP_NUM_THREADS"] = str(nthreads)
        nrun = sum(r.count("%libomp-run") + r.count("%libomp-compile-and-run") for r in runs)
        limit = (timeout + 35) * max(nrun, 1) + 300
        try:
            p = subprocess.run(["bash", os.path.join(base, ".script")], cwd=base, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=limit, start_new_session=True)
            rc, log = p.returncode, p.stdout.decode(errors="replace")
        except subprocess.TimeoutExpired as e:
            rc, log = 124, (e.stdout or b"").decode(errors="replace")
        outcome, detail = self.classify(base, rc, log, layout, timeout)
        if expect_fail:
            outcome, detail = ("XPASS", "passed, marked XFAIL") if outcome == "PASS" else \
                ("XFAIL", "%s (expected: XFAIL %s)" % (detail, ", ".join(xfail)))
        if not self.args.keep:
            shutil.rmtree(base, ignore_errors=True)
        return outcome, detail

    def classify(self, base, rc, log, layout, timeout):
        try:
            events = open(os.path.join(base, ".events")).read().splitlines()
        except OSError:
            events = []
        try:
            err = open(os.path.join(base, ".stderr"), errors="replace").read()
        except OSError:
            err = ""
        if rc == 0:
            return "PASS", ""
        for e in events:
            what, st = e.split(" ", 2)[:2]
            if what in ("build", "tool") and st != "0":
                m = re.search(r"undefined reference to .*", err) or \
                    re.search(r"[^\n]*error[^\n]*", err)
                return "NOLINK", (m.group(0) if m else "build failed, status " + st)[:200]
        m = REFUSAL.search(err)
        if layout is not None and m:
            line = err[m.start():].split("\n", 1)[0]
            line = err[err.rfind("\n", 0, m.start()) + 1:m.start()] + line
            return "REFUSED", line[:240]
        for e in events:
            what, st = e.split(" ", 2)[:2]
            if what == "run" and st in ("124", "137"):
                return "HANG", "past the limit of %d s" % timeout
        if rc == 124 and not any(e.startswith("run ") for e in events[-1:]):
            return "HANG", "the test past its limit"
        if layout is not None and re.search(r"exceeded --timeout", err):
            return "HANG", "past dsmrun --timeout %d" % timeout
        for e in events:
            what, st = e.split(" ", 2)[:2]
            if what == "run" and st.isdigit() and int(st) > 128:
                sig = re.search(r"(SIG[A-Z]+|signal \d+|[Ss]egmentation fault|Aborted)", err)
                return "CRASH", "status %s%s" % (st, (": " + sig.group(0)) if sig else "")
            if what == "run" and layout is not None and re.search(r"dsmrun: node \d+: .*signal", err):
                return "CRASH", re.search(r"dsmrun: node \d+: [^\n]*signal[^\n]*", err).group(0)[:200]
        # a wrong result: the test's own status, or FileCheck's verdict
        fc = re.search(r"[^\n]*error: [^\n]*", log)
        dsm = re.search(r"dsm[a-z]*: [^\n]*", err)
        runs = [e for e in events if e.startswith("run ")]
        last = runs[-1].split(" ", 2)[1] if runs else "?"
        if fc and last == "0":
            return "FAIL", ("FileCheck: " + fc.group(0).strip())[:240]
        detail = "status %s" % last
        if dsm:
            detail += ": " + dsm.group(0)[:200]
        elif fc:
            detail += "; " + fc.group(0).strip()[:200]
        return "FAIL", detail

    def test_all(self, rel):
        """The reference at each thread count the layouts use, then dsm on
        each layout whose reference passed."""
        res = {}
        for nt in sorted({n * t for n, t in self.layouts}):
            if self.ref is not None:
                if (rel, nt) not in self.ref:
                    sys.exit("omp-llvm-tests: --ref has no outcome of %s at t%d" % (rel, nt))
                o, d = self.ref[(rel, nt)]
            else:
                o, d = self.run_one(rel, None, nt)
                if o == "HANG":
                    o, d = self.run_one(rel, None, nt, self.args.retry_scale)
            res[("ref", nt)] = (o, d)
            self.emit("REF-%s t%d %s%s" % (o, nt, rel, (": " + d) if d else ""))
        if self.args.ref_only:
            return res
        for lay in self.layouts:
            ro = res[("ref", lay[0] * lay[1])][0]
            if ro not in ("PASS", "XFAIL"):
                continue
            o, d = self.run_one(rel, lay, lay[0] * lay[1])
            if o == "HANG":
                o, d = self.run_one(rel, lay, lay[0] * lay[1], self.args.retry_scale)
            res[lay] = (o, d)
            self.emit("%s %s %s%s" % (o, lname(lay), rel, (": " + d) if d else ""))
        return res

    def main(self):
        a = self.args
        if not os.path.isfile(os.path.join(self.testdir, "omp_testsuite.h")):
            sys.exit("omp-llvm-tests: %s has no test/omp_testsuite.h (give openmp/runtime)" % self.root)
        if not a.ref_only and not (os.access(self.dsmcc, os.X_OK) and os.access(self.dsmrun, os.X_OK)):
            sys.exit("omp-llvm-tests: build dsm first (%s)" % self.dsmcc)
        if not self.filecheck:
            sys.exit("omp-llvm-tests: no FileCheck (LLVM's tools: tools/install-deps.sh installs llvm-%s-tools)"
                     % self.version.split(".")[0])
        self.layouts = [parse_layout(x) for x in a.layouts]
        self.ref = None
        if a.ref:
            self.ref = {}
            for line in open(a.ref):
                m = re.match(r"REF-(\S+) t(\d+) (\S+?)(?:: (.*))?$", line.rstrip("\n"))
                if m:
                    self.ref[(m.group(3), int(m.group(2)))] = (m.group(1), m.group(4) or "")
        all_c, cpp = [], 0
        for d, _, files in os.walk(self.testdir):
            for f in files:
                rel = os.path.relpath(os.path.join(d, f), self.testdir)
                if f.endswith(".cpp"):
                    cpp += 1
                elif f.endswith(".c"):
                    all_c.append(rel)
        all_c.sort()
        tests = [t for t in all_c if re.search(a.filter, t)]
        self.parsed = {t: parse_test(os.path.join(self.testdir, t)) for t in tests}
        self.work = tempfile.mkdtemp(prefix="omp-llvm-tests.", dir=a.keep or None)
        print("omp-llvm-tests: %d C tests under %s (%d of them selected by --filter %r); "
              "%d C++ tests not run" % (len(all_c), self.testdir, len(tests), a.filter, cpp))
        print("omp-llvm-tests: reference clang %s -fopenmp with %s; FileCheck %s; features: %s"
              % (self.version, self.libomp, self.filecheck, " ".join(sorted(self.features))))
        print("omp-llvm-tests: layouts %s; a run's limit %d s (a test past it runs again at %d s)%s"
              % (" ".join(lname(l) for l in self.layouts), a.timeout, a.retry_scale * a.timeout,
                 "; the reference's outcomes from " + a.ref if a.ref else ""), flush=True)
        results = {}
        try:
            with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
                for t, r in zip(tests, ex.map(self.test_all, tests)):
                    results[t] = r
        finally:
            if not a.keep:
                shutil.rmtree(self.work, ignore_errors=True)
        self.summary(tests, results)

    def summary(self, tests, results):
        p = lambda s="": self.emit(s)
        p()
        for nt in sorted({n * t for n, t in self.layouts}):
            denom = [t for t in tests if results[t][("ref", nt)][0] in ("PASS", "XFAIL")]
            excl = [t for t in tests if t not in denom]
            p("Reference, OMP_NUM_THREADS=%d: %d of %d C tests pass on libomp (lit's sense: "
              "PASS or XFAIL); the %d excluded, with the reason the libomp run gave:"
              % (nt, len(denom), len(tests), len(excl)))
            for t in excl:
                o, d = results[t][("ref", nt)]
                p("  excluded t%d %s: %s%s" % (nt, t, o, (" -- " + d) if d else ""))
        if self.args.ref_only:
            return
        p()
        for lay in self.layouts:
            nt = lay[0] * lay[1]
            denom = [t for t in tests if lay in results[t]]
            ok = [t for t in denom if results[t][lay][0] in ("PASS", "XFAIL")]
            pct = 100.0 * len(ok) / len(denom) if denom else 0.0
            kinds = {}
            for t in denom:
                kinds.setdefault(results[t][lay][0], []).append(t)
            p("%s: %d of %d pass on dsm (%.1f%%); the denominator is the tests that pass on "
              "libomp with OMP_NUM_THREADS=%d; %s" % (
                  lname(lay), len(ok), len(denom), pct, nt,
                  ", ".join("%s %d" % (k, len(v)) for k, v in sorted(kinds.items()))))


def lname(lay):
    return "%d nodes" % lay[0] if lay[1] == 1 else "%d nodes x %d threads" % lay


def parse_layout(s):
    m = re.fullmatch(r"(\d+)(?:x(\d+))?", s)
    if not m or int(m.group(1)) < 1:
        sys.exit("omp-llvm-tests: a layout is N or NxT, not %r" % s)
    return int(m.group(1)), int(m.group(2) or 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runtime", help="openmp/runtime (or its test/ folder)")
    ap.add_argument("layouts", nargs="*", default=["2", "4", "2x2"])
    ap.add_argument("--build", default=os.environ.get("BUILD", "build"))
    ap.add_argument("--timeout", type=int, default=int(os.environ.get("TIMEOUT", "60")))
    ap.add_argument("--retry-scale", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("JOBS", "1")))
    ap.add_argument("--filter", default=os.environ.get("FILTER", "."))
    ap.add_argument("--out", default=os.environ.get("OUT"))
    ap.add_argument("--keep")
    ap.add_argument("--ref-only", action="store_true")
    ap.add_argument("--ref")
    a = ap.parse_intermixed_args()
    if a.jobs not in (1, 2):
        sys.exit("omp-llvm-tests: --jobs must be 1 or 2 (got %d)" % a.jobs)
    a.runtime = os.path.abspath(a.runtime)
    if os.path.basename(a.runtime.rstrip("/")) == "test":
        a.runtime = os.path.dirname(a.runtime.rstrip("/"))
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
    Runner(a).main()


if __name__ == "__main__":
    main()
