#!/usr/bin/env python3
"""check_alternating.py DSMRUN PROG TOOLS_DIR PROTOCOL NODES WRITER

Profiles tests/profile/alternating.c and checks the sharing profile calls
its buffer's misses what they are: true sharing, never false, with at
least one true miss (the readers fault on what the writer wrote)."""
import json
import os
import subprocess
import sys
import tempfile

dsmrun, prog, tools, protocol, nodes, writer = sys.argv[1:7]
with tempfile.TemporaryDirectory(prefix="dsm-alt.") as d:
    prof = os.path.join(d, "p")
    r = subprocess.run([dsmrun, "-n", nodes, "--protocol", protocol, "--profile", prof, prog,
                        writer], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode:
        print(r.stdout)
        sys.exit("the profiled run failed: status %d" % r.returncode)
    r = subprocess.run([os.path.join(tools, "dsm-profile"), prof, "--json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode:
        sys.exit("dsm-profile failed: " + r.stderr)
    data = [s for s in json.loads(r.stdout)["data"] if "alternating.c" in s["site"]]
    if len(data) != 1:
        sys.exit("expected one data site in alternating.c, got %r" % [s["site"] for s in data])
    m = data[0]["misses"]
    print("%s: %s" % (data[0]["site"], m))
    if m["false"] or m.get("untold") or m.get("unsampled"):
        sys.exit("misses on a buffer read after another node wrote it called %d false, "
                 "%d untold, %d unsampled" % (m["false"], m.get("untold", 0), m.get("unsampled", 0)))
    if not m["true"]:
        sys.exit("no true miss on a buffer read after another node wrote it")
print("ok")
