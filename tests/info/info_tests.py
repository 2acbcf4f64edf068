#!/usr/bin/env python3
"""symmem-info (text, JSON, -F, --check) and what init says about the environment
(SHMEM_INFO, misspelt SYMMEM_*/SHMEM_* variables), with the real tool and real PEs.

CTest runs one case per process:
    info_tests.py --info PATH --symmem-run PATH --pe PATH --tunables tunables.def CASE
Every function named test_* becomes one CTest case (tests/info/CMakeLists.txt). After each
job, nothing of it (its SYMMEM_JOB_ID) may be left in /dev/shm. Standard library only.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

ARGS = None
TIMEOUT = 45


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from driver import Failure, check, run_case  # noqa: E402


def base_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYMMEM_", "SHMEM_", "SMA_"))}
    env["UCX_NET_DEVICES"] = "lo"  # symmem-info starts UCX to list its transports
    env["UCX_TLS"] = "tcp,self"
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(args, env, rc=0):
    p = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=TIMEOUT)
    check(rc is None or p.returncode == rc,
          "%s exited %d, expected %s\nstdout:\n%s\nstderr:\n%s" % (" ".join(args), p.returncode, rc, p.stdout, p.stderr))
    return p


def info(*args, rc=0, **env):
    return run([ARGS.info] + list(args), base_env(**env), rc)


def registry():
    """Every variable of tunables.def, in order, read from the file itself."""
    with open(ARGS.tunables) as f:
        text = f.read()
    return re.findall(r'^SYMMEM_TUNABLE\(\s*\w+\s*,\s*"([A-Z0-9_]+)"', text, re.M)


def row(text, name):
    for line in text.splitlines():
        if line.split()[:1] == [name]:
            return line
    raise Failure("no row for %s in:\n%s" % (name, text))


def job(n, env, *pe_args, tag=False):
    args = [ARGS.symmem_run, "-n", str(n), "--timeout", "40"] + (["--tag-output"] if tag else []) + [ARGS.pe] + list(pe_args)
    p = run(args, base_env(SHMEM_SYMMETRIC_SIZE="64M", **env), rc=None)
    check(p.returncode == 0, "the job failed (rc %d)\nstdout:\n%s\nstderr:\n%s" % (p.returncode, p.stdout, p.stderr))
    for r in range(n):
        check(("PE %d of %d ok" % (r, n)) in p.stdout, "PE %d did not report ok:\n%s" % (r, p.stdout))
    jobs = set(re.findall(r"^(?:\[pe \d+\] )?job (\S+)$", p.stdout, re.M))
    check(len(jobs) == 1 and "?" not in jobs, "one SYMMEM_JOB_ID expected:\n" + p.stdout)
    for job_id in jobs:
        left = glob.glob("/dev/shm/symmem-%s*" % job_id)
        check(not left, "the job left in /dev/shm: %s" % left)
    return p


# ---------------------------------------------------------------------------- the tool

def test_text():
    out = info().stdout
    for section in ("build\n", "routes\n", "node\n", "tunables ", "other variables "):
        check(("\n" + section) in out, "no section %r in:\n%s" % (section, out))
    check(out.startswith("symmem "), out[:200])
    for what in ("compiler", "build type", "sanitizer", "UCX", "TLS", "/dev/shm", "CPUs", "memory"):
        check(("  " + what) in out, "no %r line:\n%s" % (what, out))
    check(re.search(r"^  shm\s+usable", out, re.M), "the shm route is not listed as usable:\n" + out)
    check(re.search(r"^  ucx\s+(usable|NOT USABLE)", out, re.M), "no ucx route line:\n" + out)
    check(re.search(r"^  cuda\s+(usable|NOT USABLE)", out, re.M), "no cuda route line:\n" + out)
    header = row(out, "variable")
    for col in ("kind", "value", "default", "source", "meaning"):
        check(col in header, header)
    names = registry()
    check(len(names) >= 30, "tunables.def parsed to %d names" % len(names))
    for name in names:
        row(out, name)  # every tunable has its row
    r = row(out, "SHMEM_SYMMETRIC_SIZE").split()
    check(r[1:5] == ["Size", "16G", "16G", "default"], "SHMEM_SYMMETRIC_SIZE row: %s" % r)
    row(out, "SYMMEM_RANK")  # the launcher's variables are listed too
    check("is not a symmem variable" not in out, out)
    check(info("--help").stdout.startswith("usage: symmem-info"), "--help")
    p = info("--no-such-flag", rc=2)
    check("unknown argument '--no-such-flag'" in p.stderr, p.stderr)
    info("-n", "0", "--check", rc=2)


def test_json():
    out = info("--json").stdout
    d = json.loads(out)
    check(d["schema"] == "symmem-info/1", d.get("schema"))
    for k in ("version", "openshmem", "build", "routes", "node", "tunables", "other_variables",
              "unknown_variables", "errors"):
        check(k in d, "no key %s" % k)
    check("check" not in d, "a check without --check")
    for k in ("compiler", "build_type", "sanitizer", "ucx", "tls"):
        check(isinstance(d["build"][k], str) and d["build"][k], "build.%s = %r" % (k, d["build"].get(k)))
    check([r["name"] for r in d["routes"]] == ["shm", "ucx", "cuda"], d["routes"])
    # the device route says whether it is built, what of the driver it found, and MPS
    cuda = d["routes"][2]
    check(re.search(r"^(not built|built; )", cuda["detail"]) and "MPS: " in cuda["detail"], cuda)
    check(d["routes"][0]["usable"] is True, d["routes"][0])
    node = d["node"]
    check(node["cpus_allowed"] == len(os.sched_getaffinity(0)), node)
    check(node["mem_total"] > 0 and node["shm_size"] == os.statvfs("/dev/shm").f_blocks * os.statvfs("/dev/shm").f_frsize,
          node)
    names = [t["name"] for t in d["tunables"]]
    check(names == registry(), "JSON tunables %s\n!= tunables.def %s" % (names, registry()))
    for t in d["tunables"]:
        check(set(t) == {"name", "kind", "value", "default", "source", "from", "help"}, t)
        check(t["source"] == "default" and t["from"] == "", t)
        check(t["value"] == t["default"], t)
        kind = t["kind"]
        want = {"Size": int, "Int": int, "Double": (int, float), "Bool": bool, "Flag": bool, "String": str}[kind]
        check(isinstance(t["value"], want) and (kind in ("Bool", "Flag") or not isinstance(t["value"], bool)), t)
        check(t["help"], t)
    size = next(t for t in d["tunables"] if t["name"] == "SHMEM_SYMMETRIC_SIZE")
    check(size["value"] == 16 << 30, size)
    check(d["unknown_variables"] == [] and d["errors"] == [], d)


def test_source_env():
    env = dict(SHMEM_SYMMETRIC_SIZE="512M", SYMMEM_INIT_TIMEOUT="7.5", SMA_DEBUG="1", SYMMEM_BIND="off")
    d = json.loads(info("--json", **env).stdout)
    t = {x["name"]: x for x in d["tunables"]}
    check(t["SHMEM_SYMMETRIC_SIZE"]["value"] == 512 << 20, t["SHMEM_SYMMETRIC_SIZE"])
    for name, frm in (("SHMEM_SYMMETRIC_SIZE", "SHMEM_SYMMETRIC_SIZE"), ("SYMMEM_INIT_TIMEOUT", "SYMMEM_INIT_TIMEOUT"),
                      ("SHMEM_DEBUG", "SMA_DEBUG"), ("SYMMEM_BIND", "SYMMEM_BIND")):
        check(t[name]["source"] == "env" and t[name]["from"] == frm, t[name])
    check(t["SYMMEM_INIT_TIMEOUT"]["value"] == 7.5 and t["SHMEM_DEBUG"]["value"] is True
          and t["SYMMEM_BIND"]["value"] is False, t)
    others = [x for x in d["tunables"] if x["name"] not in env and x["name"] != "SHMEM_DEBUG"]
    check(all(x["source"] == "default" for x in others), [x for x in others if x["source"] != "default"])
    # the standard name wins over its deprecated SMA_ twin
    d = json.loads(info("--json", SHMEM_SYMMETRIC_SIZE="1G", SMA_SYMMETRIC_SIZE="2G").stdout)
    s = next(x for x in d["tunables"] if x["name"] == "SHMEM_SYMMETRIC_SIZE")
    check(s["value"] == 1 << 30 and s["from"] == "SHMEM_SYMMETRIC_SIZE", s)
    out = info(**env).stdout
    check(row(out, "SHMEM_SYMMETRIC_SIZE").split()[1:5] == ["Size", "512M", "16G", "env"], row(out, "SHMEM_SYMMETRIC_SIZE"))
    check(row(out, "SHMEM_DEBUG").split()[1:6] == ["Flag", "true", "false", "env", "SMA_DEBUG"], row(out, "SHMEM_DEBUG"))
    check(row(out, "SYMMEM_LOG_LEVEL").split()[1:5] == ["String", "warn", "warn", "default"], row(out, "SYMMEM_LOG_LEVEL"))


def test_filter():
    out = info("-F", "wait_").stdout
    names = [l.split()[0] for l in out.splitlines()[1:] if l.strip()]
    want = [n for n in registry() if "WAIT_" in n]
    check(names == want and want, "-F wait_: %s, expected %s\n%s" % (names, want, out))
    check("build\n" not in out and "\nnode\n" not in out, out)
    out = info("-F", "SHMEM_*").stdout
    names = [l.split()[0] for l in out.splitlines()[1:] if l.strip() and not l.startswith(("other", " "))]
    check(names == [n for n in registry() if n.startswith("SHMEM_")], names)
    d = json.loads(info("--json", "-F", "SYMMEM_TLS_C*").stdout)
    check([t["name"] for t in d["tunables"]] == ["SYMMEM_TLS_CA", "SYMMEM_TLS_CA_PATH", "SYMMEM_TLS_CERT",
                                                  "SYMMEM_TLS_CRL"], d["tunables"])
    out = info("-F", "no_such_thing").stdout
    check("no variable matches" in out, out)


def test_malformed_and_typo():
    out = info(SHMEM_SYMMETRIC_SIZE="12Q", SYMMEM_LOG_LEVE="debug", SHMEM_SYMETRIC_SIZE="1G").stdout
    warn = out[out.index("\nwarnings\n"):]
    check("SHMEM_SYMMETRIC_SIZE: unknown size suffix in '12Q'" in warn, warn)
    check("SYMMEM_LOG_LEVE is not a symmem variable; did you mean SYMMEM_LOG_LEVEL?" in warn, warn)
    check("SHMEM_SYMETRIC_SIZE is not a symmem variable; did you mean SHMEM_SYMMETRIC_SIZE?" in warn, warn)
    d = json.loads(info("--json", SYMMEM_LOG_LEVE="debug", SYMMEM_XYZZY_PLUGH="1", SHMEM_LOG_LEVEL="info").stdout)
    check(d["unknown_variables"] == [{"name": "SHMEM_LOG_LEVEL", "suggestion": "SYMMEM_LOG_LEVEL"},
                                     {"name": "SYMMEM_LOG_LEVE", "suggestion": "SYMMEM_LOG_LEVEL"},
                                     {"name": "SYMMEM_XYZZY_PLUGH", "suggestion": None}], d["unknown_variables"])


# ---------------------------------------------------------------------------- --check

def shm_bytes():
    st = os.statvfs("/dev/shm")
    return st.f_blocks * st.f_frsize


def test_check_ok():
    p = info("--check", "-n", "1", SHMEM_SYMMETRIC_SIZE="1M")
    check(p.stdout.startswith("symmem-info --check: no problem found (1 PE(s) on this node (-n)"), p.stdout)
    d = json.loads(info("--json", "--check", "-n", "1", SHMEM_SYMMETRIC_SIZE="1M").stdout)
    check(d["check"]["ok"] is True and d["check"]["problems"] == [] and d["check"]["pes_per_node"] == 1, d["check"])


def test_check_shm_too_small():
    big = "%dM" % (shm_bytes() * 2 // (1 << 20))
    p = info("--check", "-n", "1", SHMEM_SYMMETRIC_SIZE=big, rc=1)
    lines = p.stdout.splitlines()
    check(lines[0] == "symmem-info --check: 1 problem(s)", p.stdout)
    check("SHMEM_SYMMETRIC_SIZE=%s x 1 PE(s) on this node" % big in lines[1] and "/dev/shm has" in lines[1]
          and "set SHMEM_SYMMETRIC_SIZE to at most" in lines[1], lines[1])
    # the same heap per PE, PEs from the launcher's environment: still too much
    half = "%dM" % (shm_bytes() * 3 // 4 // (1 << 20))
    p = info("--check", SHMEM_SYMMETRIC_SIZE=half, SYMMEM_NPES="2", rc=1)
    check("x 2 PE(s) on this node" in p.stdout and "/dev/shm" in p.stdout, p.stdout)
    d = json.loads(info("--json", "--check", "-n", "1", SHMEM_SYMMETRIC_SIZE=big, rc=1).stdout)
    check(d["check"]["ok"] is False and len(d["check"]["problems"]) == 1 and "/dev/shm" in d["check"]["problems"][0],
          d["check"])
    # the default heap is reserved sparsely: a note, not a problem, when it exceeds /dev/shm
    p = info("--check", "-n", "1", rc=None)
    check("/dev/shm has" not in p.stdout, p.stdout)


def test_check_oversubscribed():
    cpus = len(os.sched_getaffinity(0))
    p = info("--check", "-n", str(cpus + 1), SHMEM_SYMMETRIC_SIZE="1M", rc=1)
    lines = p.stdout.splitlines()
    check(len(lines) == 2, p.stdout)
    check(lines[1].startswith("  %d PEs on this node (-n) but only %d CPU(s) to run them" % (cpus + 1, cpus))
          and "run at most %d PEs per node" % cpus in lines[1], lines[1])
    p = info("--check", SHMEM_SYMMETRIC_SIZE="1M", OMPI_COMM_WORLD_LOCAL_SIZE=str(cpus * 4), rc=1)
    check("%d PEs on this node (OMPI_COMM_WORLD_LOCAL_SIZE)" % (cpus * 4) in p.stdout, p.stdout)
    # every problem gets its line: a typo and a malformed value besides
    p = info("--check", "-n", str(cpus + 1), SHMEM_SYMMETRIC_SIZE="1M", SYMMEM_BNID="1", SYMMEM_OP_TIMEOUT="soon", rc=1)
    lines = p.stdout.splitlines()
    check(lines[0] == "symmem-info --check: 3 problem(s)" and len(lines) == 4, p.stdout)
    check(any("SYMMEM_BNID is not a symmem variable; did you mean SYMMEM_BIND? (rename it)" in l for l in lines), p.stdout)
    check(any("SYMMEM_OP_TIMEOUT: not a number: 'soon'" in l for l in lines), p.stdout)


# ---------------------------------------------------------------------------- at init

def test_init_typo_warning():
    p = job(2, dict(SYMMEM_LOG_LEVE="info", SYMMEM_BIND="1", SYMMEM_WAIT_SPIN="100", SHMEM_XYZZY_PLUGH="1"))
    warns = [l for l in p.stderr.splitlines() if "is not a symmem variable" in l]
    check(len(warns) == 2, "expected two warnings, got:\n" + p.stderr)
    check(re.match(r"^\[pe 0 [^\]]+\] symmem warn: SHMEM_XYZZY_PLUGH is not a symmem variable \(ignored", warns[0]), warns)
    check(re.match(r"^\[pe 0 [^\]]+\] symmem warn: SYMMEM_LOG_LEVE is not a symmem variable; did you mean SYMMEM_LOG_LEVEL\?$",
                   warns[1]), warns)
    # correctly spelt variables (and the launcher's own) get nothing
    p = job(2, dict(SYMMEM_BIND="1", SYMMEM_WAIT_SPIN="100", SHMEM_DEBUG="0", SMA_INFO="0"))
    check("is not a symmem variable" not in p.stderr, p.stderr)


def test_shmem_info():
    p = job(2, dict(SHMEM_INFO="1", SYMMEM_INIT_TIMEOUT="30"), tag=True)
    out = p.stdout
    check(out.count("SHMEM_INFO: the variables symmem reads") == 1, out)
    check(re.search(r"^\[pe 0\] symmem \S+ \(OpenSHMEM 1\.5\)$", out, re.M), out)
    table = [l for l in out.splitlines() if l.split()[2:3] in (["SHMEM_SYMMETRIC_SIZE"], ["SYMMEM_INIT_TIMEOUT"])]
    check(len(table) == 2 and all(l.startswith("[pe 0] ") for l in table), table)
    check(table[0].split()[3:7] == ["Size", "64M", "16G", "env"], table[0])
    check(table[1].split()[3:7] == ["Double", "30", "60", "env"], table[1])
    for name in registry():
        check(re.search(r"^\[pe 0\] %s " % name, out, re.M), "no row for %s:\n%s" % (name, out))
    check(not re.search(r"^\[pe 1\] (symmem |SHMEM_INFO|variable)", out, re.M), "PE 1 printed:\n" + out)
    # an init attribute is the source of the value it set
    p = job(2, dict(SHMEM_INFO="yes"), "attr")
    r = row(p.stdout, "SHMEM_SYMMETRIC_SIZE").split()
    check(r[1:6] == ["Size", "32M", "16G", "api", "heap_size"], r)
    # SHMEM_VERSION prints the version only; neither prints without its variable
    p = job(2, dict(SHMEM_VERSION="1"))
    check(len(re.findall(r"^symmem \S+ \(OpenSHMEM 1\.5\)$", p.stdout, re.M)) == 1 and "SHMEM_INFO:" not in p.stdout,
          p.stdout)
    p = job(2, dict(SHMEM_INFO="0"))
    check("OpenSHMEM 1.5" not in p.stdout, p.stdout)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--info", required=True)
    ap.add_argument("--symmem-run", required=True)
    ap.add_argument("--pe", required=True)
    ap.add_argument("--tunables", required=True)
    sys.exit(run_case(globals(), ap))
