#!/usr/bin/env python3
"""Hang reports (issue 15 item 3), checked on their content.

    hang_tests.py --pe PATH --vec PATH --symmem-run PATH CASE

Every function test_* is one CTest case (tests/dfx/CMakeLists.txt). Each starts hang_pe
(hang_pe.cpp) or hang_vec (hang_vec.c, the vector waits) in one of its modes under symmem-run (or by hand, with the environment
torchrun gives its workers, for the PEs' own deadline), checks the exit code, the text
report on stderr and the JSON twin (parsed here), and that no process and nothing in
/dev/shm is left. Standard library only.
"""
import argparse
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time

ARGS = None
TIMEOUT = 60  # a job that has not ended by then hangs: a failure
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from driver import Failure, Tag, check, check_no_shm_left, run_case, shm_objects  # noqa: E402

TAG = Tag("HANG_TOKEN")  # in every PE's environment: finds leftovers


def base_env(**extra):
    return TAG.env(strip=("HANG_",), **extra)


def check_clean(shm_before):
    TAG.check_gone("the job")
    check_no_shm_left(shm_before, "the job")


def run(args, env, timeout=TIMEOUT):
    p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        raise Failure("the job did not end within %d s:\n%s%s" % (timeout, out, err))
    print(err, end="")
    return p.returncode, out, err


def want(text, pattern, what):
    check(re.search(pattern, text, re.M), "%s: no match for /%s/ in:\n%s" % (what, pattern, text))


def load_json(path):
    check(os.path.exists(path), "no JSON file at %s" % path)
    with open(path) as f:
        doc = json.load(f)
    check(doc.get("schema") == "symmem-hang/1", "schema is %r" % doc.get("schema"))
    check(isinstance(doc.get("pes"), list) and isinstance(doc.get("groups"), list), "no pes/groups in the JSON")
    return doc


def launcher(*opts):
    return [ARGS.symmem_run] + list(opts)


# ---------------------------------------------------------------------------- the cases

def deadlock(opts, env, secs):
    shm = shm_objects()
    with tempfile.TemporaryDirectory(prefix="symmem-hang-") as tmp:
        path = os.path.join(tmp, "h.json")
        rc, out, err = run(launcher("-n", "4", *opts, "--timeout", "50", ARGS.pe, "skip"),
                           base_env(SYMMEM_HANG_FILE=path, **env))
        check(rc == 124, "exit code %d, expected 124" % rc)
        want(err, r"^symmem-run: hang report \(no progress for %s s\): DEADLOCK" % secs, "verdict")
        check(err.count("hang report") == 1, "more than one report (the PEs' own watch too?):\n" + err)
        want(err, r"^  PEs 0-2 +barrier #\d+ on TEAM_WORLD +missing: PE 3 \(PE 3 waiting wait_until", "barrier group")
        want(err, r"^  PE 3 +wait_until\('flags' \(allocation #\d+, 64B?\) \+12, == 1\) +sees 0 \(live\)", "the wait")
        want(err, r"PE 3 last collectives: +#\d+ barrier", "history of the odd PE")
        # Nobody wrote it; with no tool on, writes on the node are not recorded: said so.
        want(err, r"^ {16}candidate writers: no PE has written it over UCX \(writes on the node are recorded with a "
             r"DFX tool on", "no writer")
        want(err, r"no progress for %s s \(DEADLOCK\); stopping the job" % secs, "the end")
        want(err, r"JSON: " + re.escape(path), "JSON path")
        doc = load_json(path)
        check(doc["verdict"] == "DEADLOCK", "JSON verdict %r" % doc["verdict"])
        g = [g for g in doc["groups"] if g["pes"] == [0, 1, 2]]
        check(g and g[0]["call"] == "barrier" and g[0]["missing"] == [3] and g[0]["team"] == "TEAM_WORLD",
              "JSON groups: %r" % doc["groups"])
        w = doc["pes"][3].get("wait")
        check(w and w["owner"] == 3 and w["expect"] == 1 and w["value"] == 0 and w["satisfied"] is False
              and w["cmp"] == "==" and "'flags'" in w["name"] and w["name"].endswith("+12"), "JSON wait: %r" % w)
        check(all(not p["moved"] for p in doc["pes"]), "a PE moved: %r" % doc["pes"])
        check(w["writers"] == [] and w["writes_complete"] is False, "JSON writers: %r" % w)
        check(all(p["ucx_in_flight"] == 0 for p in doc["pes"]), "JSON in flight: %r" % doc["pes"])
    check_clean(shm)


def test_deadlock():
    """PE 3 skips a barrier and waits on a word nobody writes: the no-progress deadline
    (--hang-timeout) names the missing PE, the word, its expected and live value, DEADLOCK,
    and ends the job with 124."""
    deadlock(["--hang-timeout", "2"], {}, "2")


def test_deadlock_env():
    """The same deadline from SYMMEM_HANG_TIMEOUT: symmem-run reports, the PEs do not."""
    deadlock([], {"SYMMEM_HANG_TIMEOUT": "1.5"}, "1.5")


def test_status_off():
    """SYMMEM_STATUS=0: collectives are not numbered, so the same skipped barrier shows as
    each PE's wait (still a DEADLOCK, still the word PE 3 waits on), with a line saying why;
    a tool on (SYMMEM_CHECK=1) numbers them again."""
    err, doc = skip_variant("skip", env={"SYMMEM_STATUS": "0"})
    for pe in range(3):
        want(err, r"^  PE %d +sync on sync word \(metadata \+0x[0-9a-f]+\) of PE \d+ >= \d+ +sees \d+ \(live\)" % pe,
             "PE %d's sync" % pe)
    want(err, r"^  PE 3 +wait_until\('flags' \(allocation #\d+, 64B?\) \+12, == 1\) +sees 0 \(live\)", "the wait")
    want(err, r"^  PEs 0-3: SYMMEM_STATUS=0, collectives not numbered", "why no collective")
    check(not re.search(r"(barrier|sync|collectives:) +#\d+", err), "a collective number with SYMMEM_STATUS=0:\n" + err)
    check(doc["verdict"] == "DEADLOCK", "JSON verdict %r" % doc["verdict"])
    check(all(p.get("colls_numbered") is False and not p.get("lane_seq") for p in doc["pes"]), "JSON: %r" % doc["pes"])
    err, doc = skip_variant("skip", env={"SYMMEM_STATUS": "0", "SYMMEM_CHECK": "1"})
    want(err, r"^  PEs 0-2 +barrier #\d+ on TEAM_WORLD +missing: PE 3", "with SYMMEM_CHECK=1: the barrier group")
    check("SYMMEM_STATUS=0" not in err, "with SYMMEM_CHECK=1: said not numbered:\n" + err)


def test_collective_args():
    """PEs 0-2 wait in a broadcast (root 3, 16 bytes) on a split team that PE 3 skips, every
    tool off: the collective is described once it sleeps, with its team, root and size."""
    err, doc = skip_variant("bcast")
    want(err, r"^  PEs 0-2 +broadcast #\d+ on team slot \d+ \(PEs 0\+1\*i, 4 of them\) \(root 3\)"
         r" +missing: PE 3 \(PE 3 waiting wait_until", "the broadcast's group")
    g = [g for g in doc["groups"] if g["pes"] == [0, 1, 2]]
    check(g and g[0]["call"] == "broadcast" and g[0]["missing"] == [3] and g[0]["lane"] >= 2,
          "JSON groups: %r" % doc["groups"])
    last = doc["pes"][3].get("last") or []
    check(any(c["op"] == "team_split" and c["done"] for c in last), "PE 3's last collectives: %r" % last)


def skip_variant(mode, opts=(), env=None, n=4):
    """hang_pe MODE (a variant of skip: PE n-1 waits on 'flags'+12 for 1) under
    --hang-timeout 2: the report's text and JSON."""
    shm = shm_objects()
    with tempfile.TemporaryDirectory(prefix="symmem-hang-") as tmp:
        path = os.path.join(tmp, "h.json")
        rc, out, err = run(launcher("-n", str(n), "--hang-timeout", "2", *opts, "--timeout", "50", ARGS.pe, mode),
                           base_env(SYMMEM_HANG_FILE=path, **(env or {})))
        check(rc == 124, "exit code %d, expected 124" % rc)
        want(err, r"^symmem-run: hang report \(no progress for 2 s\): DEADLOCK", "verdict")
        doc = load_json(path)
    check_clean(shm)
    return err, doc


def test_writer():
    """PE 0 atomically set the waited word to 2 (PE 3 waits for 1), with SYMMEM_STATS=1 (any
    tool on records the writes on the node): the report names PE 0 as its writer, from PE
    0's status page."""
    err, doc = skip_variant("writer", ("-x", "SYMMEM_STATS=1"))
    want(err, r"^  PE 3 +wait_until\('flags' \(allocation #\d+, 64B?\) \+12, == 1\) +sees 2 \(live\)", "the wait")
    want(err, r"^ {16}candidate writers: PE 0 \(\S*atomic_set\S*\)$", "PE 0 named")
    w = doc["pes"][3]["wait"]
    check([x["pe"] for x in w["writers"]] == [0] and "atomic_set" in w["writers"][0]["call"], "JSON writers: %r" % w)
    check("atomic_set" in doc["pes"][0]["writes"][0]["call"] and doc["pes"][0]["writes"][0]["target"] == 3,
          "JSON PE 0's writes: %r" % doc["pes"][0]["writes"])


def test_nearby():
    """PE 1 put into the word beside the waited one, with SYMMEM_CHECK=1 (every put is then
    recorded): "no PE has written it", and the put nearby is named with its offset."""
    err, doc = skip_variant("nearby", ("-x", "SYMMEM_CHECK=1"))
    want(err, r"^ {16}candidate writers: no PE has written it; nearby: PE 1 \S+ to 'flags' \(allocation #\d+, 64B?\) "
         r"\+8 on PE 3$", "the put nearby")
    w = doc["pes"][3]["wait"]
    check(w["writers"] == [] and w["writes_complete"] is True, "JSON writers: %r" % w)
    check([(x["pe"], x["offset"], x["bytes"]) for x in w["written_nearby"]] == [(1, 8, 4)], "JSON nearby: %r" % w)


def test_nbi_in_flight():
    """Two emulated nodes: PE 0 put_nbi's 2 into PE 3's waited word over UCX and never
    quiets: PE 0 is the candidate writer with its put pending, and in flight in the report."""
    env = {"UCX_TLS": "tcp", "UCX_NET_DEVICES": "lo"}
    err, doc = skip_variant("nbi", ("--emulate-nodes", "2"), env)
    want(err, r"^  PE 3 +wait_until\('flags' \(allocation #\d+, 64B?\) \+12, == 1\) +sees 2 \(live\)", "the wait")
    want(err, r"^ {16}candidate writers: PE 0 \(\S*put_nbi\S*, 1 pending on UCX: not yet quieted\)$", "PE 0 pending")
    want(err, r"^  in flight on UCX \(posted, not yet quieted\): PE 0 1$", "in flight")
    check(doc["pes"][0]["ucx_in_flight"] == 1 and all(p["ucx_in_flight"] == 0 for p in doc["pes"][1:]),
          "JSON in flight: %r" % [p["ucx_in_flight"] for p in doc["pes"]])
    w = doc["pes"][3]["wait"]
    check([(x["pe"], x["pending"]) for x in w["writers"]] == [(0, 1)], "JSON writers: %r" % w)


def vector_report(mode, opts=()):
    shm = shm_objects()
    with tempfile.TemporaryDirectory(prefix="symmem-hang-") as tmp:
        path = os.path.join(tmp, "h.json")
        rc, out, err = run(launcher("-n", "4", "--hang-timeout", "2", *opts, "--timeout", "50", ARGS.vec, mode),
                           base_env(SYMMEM_HANG_FILE=path))
        check(rc == 124, "exit code %d, expected 124" % rc)
        want(err, r"^symmem-run: hang report \(no progress for 2 s\): DEADLOCK", "verdict")
        doc = load_json(path)
    check_clean(shm)
    return err, doc


def test_vector_all():
    """PE 3 waits in shmem_int_wait_until_all_vector on 6 words (element 4 left out by its
    status), element i expecting i+1; PE 0 set elements 0 and 2: the report shows each word
    taking part with its expected and live value, which are satisfied, and the one it sleeps
    on; PE 0 is their candidate writer (SYMMEM_CHECK=1 records writes on the node)."""
    err, doc = vector_report("all", ("-x", "SYMMEM_CHECK=1"))
    want(err, r"^  PE 3 +shmem_int_wait_until_all_vector\('vflags' \(allocation #\d+, 40B?\) \+0, 6 words \(5 taking "
         r"part\), == per-element values\) +2 of 5 satisfied \(live\), sleeps on \[1\]", "the wait")
    for i, exp, val, tail in ((0, 1, 1, "   satisfied"), (1, 2, 0, "   <- sleeps on this one"), (2, 3, 3, "   satisfied"),
                              (3, 4, 0, ""), (5, 6, 0, "")):
        want(err, r"^ {16}\[%d\] 'vflags' \(allocation #\d+, 40B?\) \+%d == %d   sees %d%s$"
             % (i, 4 * i, exp, val, re.escape(tail)), "element %d" % i)
    check("[4] 'vflags'" not in err, "element 4 (status 1) shown:\n" + err)
    want(err, r"^ {16}candidate writers: PE 0 \(\S*atomic_set\S*, 2 of its last \d+ writes\)$", "PE 0 named")
    w = doc["pes"][3]["wait"]
    vec = w.get("vector")
    check(vec and vec["kind"] == "all" and vec["n"] == 6 and vec["taking_part"] == 5 and vec["satisfied"] == 2,
          "JSON vector: %r" % vec)
    check([(x["index"], x["expect"], x["value"], x["satisfied"]) for x in vec["words"]] ==
          [(0, 1, 1, True), (1, 2, 0, False), (2, 3, 3, True), (3, 4, 0, False), (5, 6, 0, False)],
          "JSON words: %r" % vec["words"])
    # The word slept on is element 1: not satisfied, so the job cannot move on its own.
    check(w["expect"] == 2 and w["value"] == 0 and w["satisfied"] is False and w["name"].endswith("+4"),
          "JSON wait: %r" % w)


def test_vector_any():
    """PE 3 waits in shmem_int_wait_until_any on 10 words == 7 that nobody writes: the first 8
    are shown with their live values and the rest counted."""
    err, doc = vector_report("any")
    want(err, r"^  PE 3 +shmem_int_wait_until_any\('vflags' \(allocation #\d+, 40B?\) \+0, 10 words, == 7\) +"
         r"0 of 8 shown \(10 taking part\) satisfied \(live\)", "the wait")
    for i in range(8):
        want(err, r"^ {16}\[%d\] 'vflags' \(allocation #\d+, 40B?\) \+%d == 7   sees 0$" % (i, 4 * i), "element %d" % i)
    want(err, r"^ {16}\.\.\. and 2 more taking part, not shown$", "the rest counted")
    vec = doc["pes"][3]["wait"]["vector"]
    check(vec["kind"] == "any" and vec["n"] == 10 and vec["taking_part"] == 10 and len(vec["words"]) == 8
          and all(x["value"] == 0 and x["satisfied"] is False for x in vec["words"]), "JSON vector: %r" % vec)


def test_stacks():
    """--hang-stacks: gdb's stack of every PE, PEs with the same stack together."""
    if not os.access("/usr/bin/gdb", os.X_OK):
        print("skipped: no /usr/bin/gdb")
        sys.exit(77)
    err, doc = skip_variant("skip", ("--hang-stacks",))
    # Runtime::barrier_all; a Release build tail-calls its Impl::sync_all, and that frame is all
    want(err, r"^  stack of PEs 0-2: (\S+ > )*main > .*(barrier|sync_all)", "the barrier's stack")
    # Runtime::wait_until in a build with line tables; Release inlines it into Runtime::wait_
    want(err, r"^  stack of PE 3: (\S+ > )*main > .*Runtime::wait_", "the wait's stack")
    check(any("Runtime::wait_" in f for f in doc["pes"][3]["stack"]), "JSON stack: %r" % doc["pes"][3].get("stack"))


def test_pe_killed():
    """PE 2 kills itself (SIGKILL) while the others wait in a barrier (SYMMEM_CHECK=1, so its
    writes are recorded): an exit report with what PE 2 was doing and its last collectives
    and writes (from its page, which symmem-run keeps mapped), then the job ends with 128+9."""
    shm = shm_objects()
    with tempfile.TemporaryDirectory(prefix="symmem-hang-") as tmp:
        path = os.path.join(tmp, "h.json")
        rc, out, err = run(launcher("-n", "4", "--timeout", "50", "-x", "SYMMEM_CHECK=1", ARGS.pe, "die"),
                           base_env(SYMMEM_HANG_FILE=path))
        check(rc == 137, "exit code %d, expected 137" % rc)
        want(err, r"^symmem-run: PE 2 \(pid \d+\) was killed by signal 9", "the launcher's line")
        want(err, r"^symmem-run: exit report \(PE 2 was killed by signal 9\): [A-Z]+ — .*PE 2 was killed by signal 9",
             "the report")
        want(err, r"^  PE 2 +killed by signal 9 +it was running user code", "what PE 2 was doing")
        want(err, r"^  PEs? [0-3, ]+? +barrier #\d+ on TEAM_WORLD .*missing: PE 2 \(PE 2 killed", "the others")
        want(err, r"^  PE 2 last collectives: +#\d+ barrier", "PE 2's collectives")
        want(err, r"^  PE 2 last writes: +\S*atomic_add\S* to 'flags' \(allocation #\d+, 64B?\) \+0 on PE 0", "PE 2's writes")
        doc = load_json(path)
        p2 = doc["pes"][2]
        check(p2.get("signal") == 9 and p2.get("at_end") == "running user code", "JSON PE 2: %r" % p2)
    check_clean(shm)


# The record an expiring device wait leaves (gpu_wait.c fills PE 2's as its GPU would).
GPU_LINE = (r"PE 2: a GPU wait expired after 10\.0 s in block 3 thread 0: waited for the word at 0x7f0000200018 "
            r"\(not in the device heap, written by PE 1\) to be >= 7, last seen 6$")


def test_gpu_wait_exit():
    """PE 2's device wait expired and it exits with code 1 (as its next failing device call
    makes it): symmem-run names the wait from PE 2's page right after its exit line."""
    shm = shm_objects()
    rc, out, err = run(launcher("-n", "3", "--timeout", "50", ARGS.gpu, "exit"), base_env())
    check(rc == 1, "exit code %d, expected 1" % rc)
    want(err, r"^symmem-run: PE 2 \(pid \d+\) exited with code 1\n" + r"symmem-run: " + GPU_LINE, "the launcher's lines")
    check_clean(shm)


def test_gpu_wait_killed():
    """PE 2's device wait expired and it is killed: the exit report names the wait, and its
    JSON twin carries it."""
    shm = shm_objects()
    with tempfile.TemporaryDirectory(prefix="symmem-hang-") as tmp:
        path = os.path.join(tmp, "h.json")
        rc, out, err = run(launcher("-n", "3", "--timeout", "50", ARGS.gpu, "kill"), base_env(SYMMEM_HANG_FILE=path))
        check(rc == 137, "exit code %d, expected 137" % rc)
        want(err, r"^symmem-run: exit report \(PE 2 was killed by signal 9\): ", "the report")
        want(err, r"^  " + GPU_LINE, "the expired wait in the report")
        g = load_json(path)["pes"][2].get("gpu_wait")
        check(g and g["peer"] == 1 and g["cmp"] == ">=" and g["expect"] == 7 and g["seen"] == 6 and
              g["addr"] == "0x7f0000200018" and g["block"] == 3 and g["thread"] == 0 and g["waited_s"] == 10.0,
              "JSON gpu_wait of PE 2: %r" % g)
    check_clean(shm)


def test_gpu_wait_timeout():
    """PE 2's device wait expired and its host waits on (a word nobody writes) while the
    others wait in a barrier: the report at symmem-run --timeout names the GPU wait."""
    shm = shm_objects()
    with tempfile.TemporaryDirectory(prefix="symmem-hang-") as tmp:
        path = os.path.join(tmp, "h.json")
        rc, out, err = run(launcher("-n", "3", "--timeout", "5", ARGS.gpu, "hang"), base_env(SYMMEM_HANG_FILE=path))
        check(rc == 124, "exit code %d, expected 124" % rc)
        want(err, r"hang report \(timeout after 5 s\): DEADLOCK", "verdict")
        want(err, r"^  " + GPU_LINE, "the expired wait in the report")
        check(len(re.findall("a GPU wait expired", err)) == 1, "the wait named once:\n" + err)
        check(all("gpu_wait" not in p for p in load_json(path)["pes"][:2]), "gpu_wait on PEs without one")
    check_clean(shm)


def test_wait_timeout():
    """Every PE waits on its own 'flags'+8 for 5: on symmem-run --timeout the report comes
    before the kill, with each word's live value."""
    shm = shm_objects()
    with tempfile.TemporaryDirectory(prefix="symmem-hang-") as tmp:
        path = os.path.join(tmp, "h.json")
        rc, out, err = run(launcher("-n", "3", "--timeout", "4", ARGS.pe, "wait"), base_env(SYMMEM_HANG_FILE=path))
        check(rc == 124, "exit code %d, expected 124" % rc)
        want(err, r"hang report \(timeout after 4 s\): DEADLOCK", "verdict")
        for pe in range(3):
            want(err, r"^  PE %d +wait_until\('flags' \(allocation #\d+, 64B?\) \+8, == 5\) +sees 0 \(live\)" % pe,
                 "PE %d's wait" % pe)
        want(err, r"timeout after 4 s; PEs 0-2 had not finished", "the launcher's timeout line")
        doc = load_json(path)
        check([p["wait"]["value"] for p in doc["pes"]] == [0, 0, 0], "JSON values: %r" % doc["pes"])
    check_clean(shm)


def test_stall():
    """PE 1 computes while the others wait in a barrier: STALL, naming PE 1 in user code."""
    shm = shm_objects()
    with tempfile.TemporaryDirectory(prefix="symmem-hang-") as tmp:
        path = os.path.join(tmp, "h.json")
        rc, out, err = run(launcher("-n", "4", "--timeout", "5", ARGS.pe, "stall", "60"),
                           base_env(SYMMEM_HANG_FILE=path))
        check(rc == 124, "exit code %d, expected 124" % rc)
        want(err, r"hang report \(timeout after 5 s\): STALL — nothing moved in [0-9.]+ s, but PE 1 runs user code",
             "verdict")
        # PE 3 may still be handing its CPU over to PE 1 inside the barrier (PEs outnumber
        # cores: central sync), in the call but not asleep: a group of its own then.
        want(err, r"^  PEs 0, 2(, 3)? +barrier #\d+ on TEAM_WORLD +missing: PE 1 \(PE 1 user code", "barrier group")
        want(err, r"^  PE 1 +running user code", "PE 1")
        doc = load_json(path)
        check(doc["verdict"] == "STALL" and doc["pes"][1]["state"] == "user code", "JSON: %r" % doc["pes"][1])
        check(doc["pes"][1]["proc_state"] in "RS", "PE 1's process state %r" % doc["pes"][1]["proc_state"])
    check_clean(shm)


def test_live_report():
    """SIGUSR1 to symmem-run and symmem-run --status PID print live reports while the job
    runs on; then the job ends normally (exit 0)."""
    shm = shm_objects()
    with tempfile.TemporaryDirectory(prefix="symmem-hang-") as tmp:
        ready, go = os.path.join(tmp, "ready"), os.path.join(tmp, "go")
        path = os.path.join(tmp, "h.json")
        env = base_env(HANG_READY=ready, HANG_GO=go, SYMMEM_HANG_FILE=path)
        p = subprocess.Popen(launcher("-n", "3", "--timeout", "50", ARGS.pe, "live", "40"), env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            deadline = time.time() + 30
            while not os.path.exists(ready) and time.time() < deadline and p.poll() is None:
                time.sleep(0.05)
            check(os.path.exists(ready), "PE 1 never got to its sleep")
            # The others are in (or about to enter) their barrier: let them go to sleep there.
            time.sleep(1.0)
            q = subprocess.run(launcher("--status", str(p.pid)), env=base_env(SYMMEM_HANG_FILE=path + ".q"),
                               capture_output=True, text=True, timeout=30)
            print(q.stdout, q.stderr, end="")
            check(q.returncode == 0, "--status exit code %d" % q.returncode)
            want(q.stdout, r"hang report \(symmem-run --status %d\): STALL — .*PE 1 runs user code" % p.pid,
                 "--status report")
            want(q.stdout, r"^  PEs 0, 2 +barrier #\d+ on TEAM_WORLD +missing: PE 1", "--status groups")
            qdoc = load_json(path + ".q")
            check(qdoc["verdict"] == "STALL", "--status JSON verdict %r" % qdoc["verdict"])
            os.kill(p.pid, signal.SIGUSR1)
            deadline = time.time() + 20
            while not os.path.exists(path) and time.time() < deadline:
                time.sleep(0.05)
            doc = load_json(path)
            check(doc["trigger"].startswith("SIGUSR1"), "trigger %r" % doc["trigger"])
            check(p.poll() is None, "the job ended after SIGUSR1")
            open(go, "w").close()
            out, err = p.communicate(timeout=TIMEOUT)
        except BaseException:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            raise
        print(err, end="")
        check(p.returncode == 0, "exit code %d, expected 0:\n%s" % (p.returncode, err))
        want(err, r"hang report \(SIGUSR1 to symmem-run, the job continues\): STALL", "SIGUSR1 report")
        for r in range(3):
            want(out, r"hang_pe: PE %d done" % r, "PE %d finished" % r)
    check_clean(shm)


def test_pe_side():
    """No symmem-run: 4 PEs started by hand with torchrun's environment and
    SYMMEM_HANG_TIMEOUT; the lowest PE of the node reports and ends the job (124)."""
    shm = shm_objects()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with tempfile.TemporaryDirectory(prefix="symmem-hang-") as tmp:
        path = os.path.join(tmp, "h.json")
        run_id = "hang-" + secrets.token_hex(4)
        secret = secrets.token_hex(32)
        procs = []
        for r in range(4):
            env = base_env(RANK=r, LOCAL_RANK=r, WORLD_SIZE=4, LOCAL_WORLD_SIZE=4, MASTER_ADDR="127.0.0.1",
                           MASTER_PORT=port - 1, TORCHELASTIC_RUN_ID=run_id, SYMMEM_STORE_SECRET=secret,
                           SYMMEM_HANG_TIMEOUT=2, SYMMEM_HANG_FILE=path)
            procs.append(subprocess.Popen([ARGS.pe, "skip"], env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True, start_new_session=True))
        outs, rcs = [], []
        try:
            for p in procs:
                o, _ = p.communicate(timeout=TIMEOUT)
                outs.append(o)
                rcs.append(p.returncode)
        finally:
            for p in procs:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.communicate()
        for r, o in enumerate(outs):
            print("---- PE %d (exit %d)\n%s" % (r, rcs[r], o), end="")
        check(rcs == [124] * 4, "exit codes %r, expected 124 each" % rcs)
        want(outs[0], r"^\[pe 0 \S+\] hang report \(no progress for 2 s\): DEADLOCK", "PE 0's report")
        want(outs[0], r"^  PEs 0-2 +barrier #\d+ on TEAM_WORLD +missing: PE 3", "the barrier group")
        want(outs[0], r"^  PE 3 +wait_until\('flags' \(allocation #\d+, 64B?\) \+12, == 1\) +sees 0 \(live\)",
             "the wait")
        doc = load_json(path)
        check(doc["verdict"] == "DEADLOCK", "JSON verdict %r" % doc["verdict"])
    check_clean(shm)


def pe_side_nodes(mode, secs, tmp, until):
    """hang_pe MODE on 4 PEs started by hand (torchrun's environment) as two emulated nodes
    (PEs 0,1 and 2,3), over UCX on loopback, with SYMMEM_HANG_TIMEOUT=1.5: runs until
    until(texts, procs) holds (or TIMEOUT), then kills what is left; each PE's output and
    exit code (None: killed here)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    run_id, secret = "hang-" + secrets.token_hex(4), secrets.token_hex(32)
    procs, logs, rcs = [], [], [None] * 4
    def text(r):
        with open(logs[r]) as f:
            return f.read()
    try:
        for r in range(4):
            env = base_env(RANK=r, LOCAL_RANK=r % 2, WORLD_SIZE=4, LOCAL_WORLD_SIZE=2, MASTER_ADDR="127.0.0.1",
                           MASTER_PORT=port - 1, TORCHELASTIC_RUN_ID=run_id, SYMMEM_STORE_SECRET=secret,
                           SYMMEM_NODE_ID="emu%d" % (r // 2), UCX_TLS="tcp", UCX_NET_DEVICES="lo",
                           SYMMEM_HANG_TIMEOUT=1.5, SYMMEM_HANG_FILE=os.path.join(tmp, "h%d.json" % r))
            logs.append(os.path.join(tmp, "pe%d.log" % r))
            with open(logs[-1], "w") as log:
                procs.append(subprocess.Popen([ARGS.pe, mode, str(secs)], env=env, stdout=log,
                                              stderr=subprocess.STDOUT, start_new_session=True))
        deadline = time.time() + TIMEOUT
        while time.time() < deadline and not until([text(r) for r in range(4)], procs):
            time.sleep(0.2)
        for r, p in enumerate(procs):
            rcs[r] = p.poll()
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    outs = [text(r) for r in range(4)]
    for r, o in enumerate(outs):
        print("---- PE %d (exit %s)\n%s" % (r, rcs[r], o), end="")
    return outs, rcs


def test_pe_side_nodes():
    """The PEs' own watch across two (emulated) nodes: PE 3 (node 2) skips a barrier. Each
    node's lowest PE publishes its node's summary in the job's store; PE 0 sees every node
    blocked with nothing moving, reports DEADLOCK for the job, naming PE 3 on the other node
    as missing and its wait as seen there, and the job ends with 124 on every PE."""
    shm = shm_objects()
    with tempfile.TemporaryDirectory(prefix="symmem-hang-") as tmp:
        outs, rcs = pe_side_nodes("skip", 30, tmp, lambda texts, procs: all(p.poll() is not None for p in procs))
        check(rcs == [124] * 4, "exit codes %r, expected 124 each" % rcs)
        want(outs[0], r"^\[pe 0 \S+\] hang report \(no progress for 1.5 s\): DEADLOCK — every live PE waits in the "
             r"library.*; the other nodes' PEs as their node's watch saw them \(the job's store\)$", "the job's verdict")
        want(outs[0], r"^  PEs 0-2 +barrier #\d+ on TEAM_WORLD +missing: PE 3 \(PE 3 waiting wait_until, last #\d+ "
             r"there\)", "the barrier group, PE 3 named from the other node")
        want(outs[0], r"^  PE 3 +wait_until\('flags' \(allocation #\d+, 64B?\) \+12, == 1\) +sees 0 \(live\) .*"
             r"\(on its node\)$", "PE 3's wait, read on its node")
        reports = [len(re.findall(r"^\[pe \d+ \S+\] hang report \(", o, re.M)) for o in outs]
        check(reports == [1, 0, 0, 0], "reports per PE %r, expected PE 0's only" % reports)
        check("scope:" not in outs[0], "the job's report has a node scope:\n" + outs[0])
        for r in (1, 2, 3):
            want(outs[r], r"ending this PE: the job is failing: PE 0 \S+ stopped with an error \(exit code 124\): "
                 r"hang report: DEADLOCK across the job's nodes", "PE %d ended by PE 0's verdict" % r)
        doc = load_json(os.path.join(tmp, "h0.json"))
        check(doc["verdict"] == "DEADLOCK", "JSON verdict %r" % doc["verdict"])
        g = [g for g in doc["groups"] if g["pes"] == [0, 1, 2]]
        check(g and g[0]["missing"] == [3], "JSON groups: %r" % doc["groups"])
    check_clean(shm)


def test_pe_side_nodes_blocked():
    """Two emulated nodes, PE 1 (node 1) computes for 15 s while the others wait in a
    barrier: node 2 (PEs 2,3) is blocked, node 1 is not, so there is no job verdict; node 2's
    watch prints its node's BLOCKED report once, the job runs on and finishes (exit 0)."""
    shm = shm_objects()
    with tempfile.TemporaryDirectory(prefix="symmem-hang-") as tmp:
        outs, rcs = pe_side_nodes("stall", 15, tmp, lambda texts, procs: all(p.poll() is not None for p in procs))
        check(rcs == [0] * 4, "exit codes %r, expected 0 each" % rcs)
        reports = [len(re.findall(r"^\[pe \d+ \S+\] hang report \(", o, re.M)) for o in outs]
        check(reports == [0, 0, 1, 0], "reports per PE %r, expected PE 2's only" % reports)
        want(outs[2], r"^\[pe 2 \S+\] hang report \(no progress for 1.5 s\): BLOCKED — every PE seen here waits .*"
             r"PEs 0, 1 not visible here", "PE 2's report")
        want(outs[2], r"^  scope: this node's PEs \(2 of 4\)", "PE 2's scope")
        for r in range(4):
            want(outs[r], r"hang_pe: PE %d done" % r, "PE %d finished" % r)
    check_clean(shm)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--pe", required=True)
    ap.add_argument("--vec", required=True)
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--symmem-run", required=True)
    sys.exit(run_case(globals(), ap))
