#!/usr/bin/env python3
"""The JSON twin of a SYMMEM_CHECK report (docs/dfx.md, Checks), loaded and checked.

    check_json.py SYMMEM_RUN CHECK_CASES CASE      CASE: malloc-size | bad-pe

Runs the provoking case under symmem-run with SYMMEM_CHECK=1 and SYMMEM_CHECK_FILE, checks
the exit code (2), the report's "JSON:" line and the file's content. Standard library only.
"""
import json
import os
import re
import subprocess
import sys
import tempfile


def main():
    run, cases, case = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix="symmem-check-") as tmp:
        path = os.path.join(tmp, "c.json")
        env = dict(os.environ, SYMMEM_LOG_LEVEL="warn", SYMMEM_CHECK_FILE=path)
        p = subprocess.run([run, "--timeout", "60", "-x", "SYMMEM_CHECK=1", "-n", "4", cases, case], env=env,
                           capture_output=True, text=True, timeout=90)
        out = p.stdout + p.stderr
        print(out, end="")
        if p.returncode != 2:
            return fail("exit code %d, expected 2" % p.returncode)
        if not re.search(r"^  JSON: " + re.escape(path) + r"\n  job ends \(exit 2\)", out, re.M):
            return fail("no JSON line before the report's last line")
        with open(path) as f:
            doc = json.load(f)
        print(json.dumps(doc, indent=1))
        if doc.get("schema") != "symmem-check/1" or doc.get("npes") != 4 or "CHECK:" not in doc.get("text", ""):
            return fail("schema/npes/text: %r" % doc)
        if case == "malloc-size":
            groups = sorted((g["pes"], g["call"]) for g in doc["groups"])
            ok = (doc["kind"] == "collective mismatch" and doc["team"] == "TEAM_WORLD" and doc["op"] == "malloc"
                  and doc["differs"] == ["size"] and groups[0][0] == [0] and "size=1048576" in groups[0][1]
                  and groups[1][0] == [1, 2, 3] and "size=2097152" in groups[1][1]
                  and all(re.match(r"main check_cases\.c:\d+", g["site"]) for g in doc["groups"])
                  and doc["previous"]["op"] == "barrier" and doc["hint"].startswith("shmem_malloc is collective"))
        else:
            ok = (doc["kind"] == "call" and doc["call"] == "shmem_putmem" and doc["target_pe"] == 4
                  and doc["dest"] == "static 'target' +0" and doc["bytes"] == 32
                  and doc["problem"] == "pe 4 out of range [0,4)" and re.match(r"main check_cases\.c:\d+", doc["site"]))
        if not ok:
            return fail("content: %r" % doc)
    print("ok")
    return 0


def fail(msg):
    print("FAILED: " + msg)
    return 1


if __name__ == "__main__":
    sys.exit(main())
