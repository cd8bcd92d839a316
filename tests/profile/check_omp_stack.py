#!/usr/bin/env python3
"""check_omp_stack.py — an OpenMP program's profile names its own things
(tests/profile/omp_stack.c).

  check_omp_stack.py DSMRUN PROGRAM SOURCE NODES [DSMRUN_ARGS...]
      runs the program profiled, then checks the report: the array of
      main's locals that the nodes' threads write is named by its name and
      is false sharing, a double a thread (a grain of 8 bytes, 16 with two
      threads a node); the outlined function that
      writes it is named by its pragma's line; dsm's own data (a region's
      description, task records), where the run fetched any, is apart from
      the program's and said to be dsm's; no data of the program is said
      to be allocated at a pragma's line.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

dsmrun, prog, source, nodes = sys.argv[1:5]
extra = sys.argv[5:]
marks = {}
with open(source) as f:
    for i, line in enumerate(f, 1):
        m = re.search(r"/\* ([A-Z][A-Z -]+[A-Z]) \*/", line)
        if m:
            marks[m.group(1)] = i
prefix = os.path.join(tempfile.mkdtemp(prefix="check_omp_stack-"), "p")
r = subprocess.run([dsmrun, "-n", nodes, "--timeout", "200", "--profile", prefix] + extra +
                   [prog, "12"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                   timeout=260)
if r.returncode != 0:
    sys.exit("the job failed (%d): %s" % (r.returncode, r.stderr[-600:]))
tool = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "tools", "dsm-profile")
out = subprocess.run([sys.executable, tool, prefix, "--json", "-", "--top", "50"],
                     stdout=subprocess.PIPE, text=True, timeout=600)
j = json.loads(out.stdout)
text = subprocess.run([sys.executable, tool, prefix, "--top", "50"], stdout=subprocess.PIPE,
                      text=True, timeout=600).stdout
failures = []
name = os.path.basename(source)
var = [d for d in j["data"] if d["site"].startswith("local variable partial of main (")]
if not var:
    failures.append("no data named 'local variable partial of main': %s"
                    % [d["site"] for d in j["data"]])
elif var[0]["sharing"]["kind"] not in ("false", "both") or var[0]["sharing"].get("grain") not in (8, 16):
    failures.append("partial is not false sharing every 8 (a thread a node) or 16 bytes: %s" % var[0]["sharing"])
region = r"OpenMP region at (\S*/)?%s:%d \((\S*/)?%s:%d\)" % (
    re.escape(name), marks["PARTIAL REGION"], re.escape(name), marks["PARTIAL WRITE"])
if not any(re.match(region, l["line"]) for l in j["code"]):
    failures.append("no line is %r: %s" % (region, [l["line"] for l in j["code"]]))
for d in j["data"]:
    if re.search(r"allocated at .*%s:(%d|%d)\)" % (re.escape(name), marks["FIELD LOOP"],
                                                   marks["PARTIAL REGION"]), d["site"]):
        failures.append("data said to be allocated at a pragma: %s" % d["site"])
    if d["kind"] == "dsm":
        failures.append("dsm's data among the program's: %s" % d["site"])
for d in j.get("dsm_data", []):
    if not d["site"].startswith("dsm's own data, not the program's: ") or \
            d.get("advice_false") or d.get("advice_true"):
        failures.append("dsm's data not said to be dsm's, or advised on: %s" % d)
if failures:
    print("\n".join(failures))
    print(text)
    sys.exit(1)
print("ok")
