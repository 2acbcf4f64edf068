#!/usr/bin/python3
"""Runs trace_prog with SYMMEM_TRACE and validates the merged trace (docs/dfx.md, Timeline).

check_trace.py CASE SYMMEM_RUN SYMMEM_TRACE PROG
  kill:       4 PEs under symmem-run, PE 3 killed mid-run; symmem-run merges (exit 137).
  ok:         4 PEs under symmem-run, normal end.
  standalone: 1 PE without a launcher; `symmem-trace merge JOB` merges.
  hosts:      4 PEs started by hand (torchrun's environment) as two emulated nodes over
              UCX; their rings are copied and PEs 2-3's made to read as another host's
              whose clock is 7 s ahead (host name and clock base rewritten: one machine
              has one clock); `symmem-trace merge --dir` must place that host's clock
              back, so that every world barrier overlaps on all PEs.
  gather:     the same with PEs 2-3 under another host name and a /dev/shm of their own
              (root; exit 77 without namespaces): PE 0 copies their rings at finalize, and
              a merge on its host shows all 4 PEs.
  gather_kill: the same with PE 3 killed mid-run (trace_prog kill): PE 2, which survives
              on that host, sends both rings there (PE 3's from its /dev/shm) as the job
              ends, and PE 0's merge shows PE 3's last puts.
Checks the schema (traceEvents; ph/ts/dur/pid/tid; flows paired s->f), the events of the
known program per PE, the put_signal -> wait arrows, the barrier arrows, the killed PE's
last events, allocation names, and that no ring is left in /dev/shm.
"""
import json
import os
import re
import secrets
import shutil
import socket
import struct
import subprocess
import sys
import tempfile

ITERS, TAIL_PUTS = 20, 5


def fail(msg):
    print("check_trace: FAIL: " + msg)
    sys.exit(1)


def check_schema(doc):
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail("no traceEvents list")
    if doc.get("otherData", {}).get("schema") != "symmem-trace/1":
        fail("otherData.schema is not symmem-trace/1")
    flows = {}
    for e in doc["traceEvents"]:
        for k in ("ph", "pid", "tid", "name"):
            if k not in e:
                fail("event without %s: %r" % (k, e))
        if not isinstance(e["pid"], int) or not isinstance(e["tid"], int):
            fail("pid/tid not integers: %r" % e)
        ph = e["ph"]
        if ph == "X":
            if not isinstance(e.get("ts"), (int, float)) or not isinstance(e.get("dur"), (int, float)):
                fail("X event without numeric ts/dur: %r" % e)
            if e["ts"] < 0 or e["dur"] < 0:
                fail("negative ts/dur: %r" % e)
            if not isinstance(e.get("args"), dict):
                fail("X event without args: %r" % e)
        elif ph in ("s", "f"):
            if not isinstance(e.get("id"), int) or not isinstance(e.get("ts"), (int, float)):
                fail("flow event without id/ts: %r" % e)
            if ph == "f" and e.get("bp") != "e":
                fail("flow end not bound to its enclosing slice: %r" % e)
            flows.setdefault(e["id"], {}).setdefault(ph, []).append(e)
        elif ph == "M":
            if e["name"] not in ("process_name", "process_sort_index", "thread_name"):
                fail("unknown metadata event %r" % e)
        else:
            fail("unexpected phase %r" % ph)
    pairs = []
    for fid, d in flows.items():
        if len(d.get("s", [])) != 1 or len(d.get("f", [])) != 1:
            fail("flow id %d is not one s and one f: %r" % (fid, d))
        pairs.append((d["s"][0], d["f"][0]))
    return pairs


def enclosing(slices, pid, tid, ts):
    """The innermost X slice of (pid, tid) containing ts."""
    best = None
    for e in slices.get((pid, tid), []):
        if e["ts"] - 5e-4 <= ts <= e["ts"] + e["dur"] + 5e-4 and (best is None or e["dur"] <= best["dur"]):
            best = e
    return best


def validate(doc, npes, killed, cross_slack_us=0.0):
    """cross_slack_us: how far the merge may place an arrow between PEs 0-1 and 2-3 (two
    hosts, each one clock) back in time: the uncertainty of its clock alignment."""
    pairs = check_schema(doc)
    evs = doc["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "process_name"}
    if sorted(names) != list(range(npes)):
        fail("process tracks %r, want PEs 0..%d" % (sorted(names), npes - 1))
    for pe, nm in names.items():
        if not re.match(r"PE %d \([^:]+:\d+\)" % pe, nm):
            fail("track name %r" % nm)
        unfinished = "[did not finalize]" in nm
        if killed and not unfinished:
            fail("PE %d's track does not say it did not finalize: %r" % (pe, nm))
        if not killed and unfinished:
            fail("PE %d finalized but its track says otherwise: %r" % (pe, nm))
    xs = [e for e in evs if e["ph"] == "X"]
    slices = {}
    for e in xs:
        slices.setdefault((e["pid"], e["tid"]), []).append(e)
    for pe in range(npes):
        mine = [e for e in xs if e["pid"] == pe]
        ps = [e for e in mine if e["cat"] == "put_signal"]
        waits = [e for e in mine if e["cat"] == "wait"]
        bars = [e for e in mine if e["cat"] == "barrier"]
        if len(ps) != ITERS:
            fail("PE %d: %d put_signal events, want %d" % (pe, len(ps), ITERS))
        if len(waits) != ITERS or any(w["name"] != "signal_wait_until" for w in waits):
            fail("PE %d: %d signal_wait_until events, want %d" % (pe, len(waits), ITERS))
        for e in ps:
            a = e["args"]
            if a["peer"] != (pe + 1) % npes or a["bytes"] != 64:
                fail("PE %d put_signal args %r" % (pe, a))
            if not a["signal"].startswith("'flags' (allocation #2") or not a["dest"].startswith("'halo' (allocation #1"):
                fail("PE %d put_signal does not name its allocations: %r" % (pe, a))
        # init's barriers, the first one, one per round, the last one, (kill) the final one
        if len(bars) < ITERS + 2:
            fail("PE %d: %d barriers, want at least %d" % (pe, len(bars), ITERS + 2))
        seqs = [b["args"]["seq"] for b in bars]
        if seqs != sorted(seqs) or len(set(seqs)) != len(seqs):
            fail("PE %d: barrier sequence numbers %r" % (pe, seqs))
        if killed:
            last = max(bars, key=lambda b: b["ts"])
            if pe != npes - 1 and not last["args"].get("unfinished"):
                fail("PE %d: its last barrier (where it was when the job ended) is not unfinished" % pe)
    if killed:
        puts = [e for e in xs if e["pid"] == npes - 1 and e["cat"] == "put"]
        if len(puts) != TAIL_PUTS or any(p["args"]["peer"] != 0 or p["args"]["bytes"] != 8 for p in puts):
            fail("killed PE %d: %d puts to PE 0 before its death, want %d" % (npes - 1, len(puts), TAIL_PUTS))
        last_bar = max(e["ts"] for e in xs if e["pid"] == npes - 1 and e["cat"] == "barrier")
        if not all(p["ts"] > last_bar for p in puts):
            fail("killed PE's puts are not after its last barrier")
    # Round 3's wait on PE 1 slept (PE 0 slept before sending): a sleep slice inside it.
    sleeps = [e for e in xs if e["name"] == "sleep"]
    if npes > 1 and not sleeps:
        fail("no sleep slice (PE 1's wait in round 3 should sleep)")
    # put_signal -> wait: every wait has one arrow, from its left neighbour's put_signal.
    sig_flows = 0
    for s, f in pairs:
        if s["name"] != "signal":
            continue
        src = enclosing(slices, s["pid"], s["tid"], s["ts"])
        dst = enclosing(slices, f["pid"], f["tid"], f["ts"])
        if src is None or dst is None:
            fail("signal flow %d not inside slices" % s["id"])
        if src["cat"] != "put_signal" or dst["cat"] != "wait":
            fail("signal flow %d from %s to %s" % (s["id"], src["cat"], dst["cat"]))
        if src["pid"] != (dst["pid"] - 1) % npes:
            fail("signal flow %d from PE %d to PE %d" % (s["id"], src["pid"], dst["pid"]))
        # each PE's clock is converted on its own: the merge lets a write start up to 1 us
        # after the wait's end (src/dfx/trace_merge.cpp kSkewNs)
        slack = 1.0 + (cross_slack_us if src["pid"] // 2 != dst["pid"] // 2 else 0.0)
        if src["ts"] > dst["ts"] + dst["dur"] + slack + 1e-3:
            fail("signal flow %d goes back in time (%.3f > %.3f + %.3f)" % (s["id"], src["ts"], dst["ts"], dst["dur"]))
        sig_flows += 1
    if sig_flows != ITERS * npes:
        fail("%d signal flows, want %d" % (sig_flows, ITERS * npes))
    bar_flows = 0
    for s, f in pairs:
        if s["name"] != "last arrival":
            continue
        src = enclosing(slices, s["pid"], s["tid"], s["ts"])
        dst = enclosing(slices, f["pid"], f["tid"], f["ts"])
        if src is None or dst is None or src["cat"] != "barrier" or dst["cat"] != "barrier":
            fail("barrier flow %d not between barriers" % s["id"])
        if src["args"]["seq"] != dst["args"]["seq"] or src["pid"] == dst["pid"]:
            fail("barrier flow %d joins barriers #%d and #%d" % (s["id"], src["args"]["seq"], dst["args"]["seq"]))
        if src["ts"] < dst["ts"]:
            fail("barrier flow %d: the last arriver came before PE %d" % (s["id"], dst["pid"]))
        bar_flows += 1
    if npes > 1 and bar_flows < (ITERS + 1) * (npes - 1):
        fail("%d barrier flows, want at least %d" % (bar_flows, (ITERS + 1) * (npes - 1)))
    print("check_trace: %d PEs, %d slices, %d signal flows, %d barrier flows: ok" % (npes, len(xs), sig_flows, bar_flows))


def rings_of(job):
    return [f for f in os.listdir("/dev/shm") if f.startswith("symmem-%s-trace-pe" % job)]


def drop_launcher(env):
    """No symmem-run: the PEs find each other from the environment they are given."""
    for k in ("SYMMEM_RANK", "SYMMEM_NPES", "SYMMEM_STORE", "SYMMEM_JOB_ID"):
        env.pop(k, None)


def remove_rings(tmp):
    """Removes the rings in /dev/shm of this run's jobs (their header names an output under
    tmp), whichever check failed and whether or not the job id was learnt."""
    key = tmp.encode()
    for f in os.listdir("/dev/shm"):
        if not re.match(r"symmem-.*-trace-pe\d+$", f):
            continue
        path = os.path.join("/dev/shm", f)
        try:
            with open(path, "rb") as r:
                mine = key in r.read(1 << 16)
            if mine:
                os.unlink(path)
        except OSError:
            pass


def job_from_hint(text):
    """The job id in PE 0's "merge them ... with: symmem-trace merge JOB" line."""
    m = re.search(r"symmem-trace merge (?:--dir \S+ )?(\S+)", text)
    if not m:
        fail("no merge hint from PE 0")
    return m.group(1)


def record(case, run, tool, prog, out, env=None):
    """Runs trace_prog's CASE (kill, ok, standalone; see the top) with SYMMEM_TRACE so that
    its merged trace is `out`; returns (npes, killed)."""
    env = dict(os.environ if env is None else env, SYMMEM_LOG_LEVEL="warn")
    env.pop("SYMMEM_TRACE", None)
    if case == "standalone":
        env["SYMMEM_TRACE"] = out + ",size=2M"
        drop_launcher(env)
        p = subprocess.run([prog, "ok"], env=env, capture_output=True, text=True, timeout=120)
        print(p.stdout + p.stderr)
        if p.returncode != 0:
            fail("program exit %d" % p.returncode)
        job = job_from_hint(p.stderr)
        if len(rings_of(job)) != 1:
            fail("ring of job %s not in /dev/shm" % job)
        q = subprocess.run([tool, "merge", job], capture_output=True, text=True, timeout=120)
        print(q.stdout + q.stderr)
        if q.returncode != 0 or "written to " + out not in q.stdout:
            fail("symmem-trace merge exit %d" % q.returncode)
        if rings_of(job):
            fail("rings left in /dev/shm after the merge")
        npes, killed = 1, False
    else:
        npes, killed = 4, case == "kill"
        # Few yields before a wait sleeps, so PE 1's wait in round 3 sleeps even on a loaded machine.
        cmd = [run, "-n", str(npes), "--timeout", "90", "-x", "SYMMEM_TRACE=%s,size=2M" % out,
               "-x", "SYMMEM_WAIT_YIELD=2", prog, case]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=150)
        print(p.stdout + p.stderr)
        want = 137 if killed else 0
        if p.returncode != want:
            fail("symmem-run exit %d, want %d" % (p.returncode, want))
        m = re.search(r"trace of (\d+) PEs \((\d+) events, (\d+) flows(, (\d+) PEs did not finalize)?\) written to (\S+)",
                      p.stderr)
        if not m or int(m.group(1)) != npes or m.group(6) != out:
            fail("symmem-run did not report the merged trace")
        if killed and m.group(5) != str(npes):
            fail("symmem-run should say that the %d PEs did not finalize" % npes)
    return npes, killed


SKEW_NS = 7 * 10**9
# Header (src/dfx/trace.hpp): magic, version, rec_size, rank, npes, pid, clock,
# capacity, head, state, threads, 4 x heap/static, tick0, ns0, pair_seq, pad0, tick1, ns1, host[64]
HDR = struct.Struct("<QIIiiiIQQII4QQQIIQQ64s")
HEADER_BYTES, REC = 32768, 32


def shift_ring(path, host, skew):
    """Makes a ring read as recorded on `host` with a clock `skew` ns ahead."""
    with open(path, "r+b") as f:
        h = list(HDR.unpack(f.read(HDR.size)))
        clock, cap, head = h[6], h[7], h[8]
        if clock == 1:  # ticks -> ns through (tick0, ns0) and (tick1, ns1): move both ns
            h[16] += skew
            h[20] += skew
        else:  # CLOCK_MONOTONIC ns in every record's t0 (extension records hold other data)
            for i in range(max(0, head - cap), head):
                off = HEADER_BYTES + (i % cap) * REC
                f.seek(off)
                t0, dur, op, flags = struct.unpack("<QIBB", f.read(14))
                if op and not flags & 0x80:
                    f.seek(off)
                    f.write(struct.pack("<Q", t0 + skew))
        h[21] = host.encode()
        f.seek(0)
        f.write(HDR.pack(*h))


def start_four(prog, out, otherhost, trace_others=True, mode="ok"):
    """4 PEs of trace_prog MODE as 2 nodes of 2 (torchrun's variables, UCX on loopback). PEs
    2-3 run under the host name otherhost where `otherhost` allows it (root): "uts" in a UTS
    namespace of their own, "mount" also with a /dev/shm of their own (a mount namespace),
    so that PE 0 cannot see their rings. trace_others False: PEs 2-3 run without
    SYMMEM_TRACE. Mode kill: every process must fail. Returns the 4 PEs' output (PE 0's
    first)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    run_id, secret = "trace-" + secrets.token_hex(4), secrets.token_hex(32)
    base = dict(os.environ, WORLD_SIZE="4", LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                MASTER_PORT=str(port - 1), TORCHELASTIC_RUN_ID=run_id, SYMMEM_STORE_SECRET=secret,
                UCX_TLS="tcp", UCX_NET_DEVICES="lo", SYMMEM_LOG_LEVEL="warn", SYMMEM_TRACE=out + ",size=2M")
    drop_launcher(base)
    def env_of(r):
        e = dict(base, RANK=str(r), LOCAL_RANK=str(r % 2), SYMMEM_NODE_ID="emu%d" % (r // 2))
        if r >= 2 and not trace_others:
            del e["SYMMEM_TRACE"]
        return e
    cmds = [([prog, mode], env_of(r)) for r in range(4)]
    if otherhost == "uts":
        for r in (2, 3):
            cmds[r] = (["unshare", "--uts", "sh", "-c", 'hostname otherhost && exec "$0" "$@"', prog, mode], env_of(r))
    elif otherhost == "mount":
        both = ('hostname otherhost && mount -t tmpfs -o size=256m tmpfs /dev/shm && '
                '{ RANK=2 LOCAL_RANK=0 "$0" %s & a=$!; RANK=3 LOCAL_RANK=1 "$0" %s & b=$!; '
                'wait $a; ra=$?; wait $b; rb=$?; exit $((ra | rb)); }') % (mode, mode)
        cmds = cmds[:2] + [(["unshare", "--uts", "--mount", "--propagation", "private", "sh", "-c", both, prog],
                            dict(env_of(2), SYMMEM_NODE_ID="emu1"))]
    procs = [subprocess.Popen(c, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True) for c, e in cmds]
    texts = []
    for p in procs:
        try:
            texts.append(p.communicate(timeout=120)[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            fail("the 4 PEs did not end within 120 s")
    print("\n".join(texts))
    if any((p.returncode == 0) != (mode != "kill") for p in procs):
        fail("exit codes %r" % [p.returncode for p in procs])
    return texts


def can_unshare(*kinds):
    return os.geteuid() == 0 and subprocess.run(["unshare"] + list(kinds) + ["true"], capture_output=True).returncode == 0


def hosts(tool, prog, tmp):
    """Rings copied by hand from two hosts into one directory, the second host's clock 7 s
    ahead: merge --dir places it."""
    out = os.path.join(tmp, "h.json")
    uts = can_unshare("--uts")
    texts = start_four(prog, out, "uts" if uts else "")
    job = job_from_hint(texts[0])
    # One /dev/shm for both host names: PE 0 sees every ring, so it copies none.
    if uts and ("copied" in texts[0] or "--dir" in texts[0]):
        fail("PE 0's hint: the other host's rings are already here")
    rings = sorted(rings_of(job))
    if len(rings) != 4:
        fail("%d rings of job %s in /dev/shm, want 4" % (len(rings), job))
    d = os.path.join(tmp, "rings")
    os.mkdir(d)
    for f in rings:
        shutil.move(os.path.join("/dev/shm", f), os.path.join(d, f))
    for f in rings:
        if re.search(r"pe[23]$", f):
            shift_ring(os.path.join(d, f), "otherhost", SKEW_NS)
    merge_hosts(tool, ["--dir", d], out, job, SKEW_NS)


def gather(tool, prog, tmp):
    """PEs 2-3 on another host with a /dev/shm of their own: PE 0 copies their rings at
    finalize (through the bootstrap store) and one merge on its host shows all 4 PEs."""
    if not can_unshare("--uts", "--mount"):
        print("check_trace: gather: needs root and mount namespaces; skipped")
        sys.exit(77)
    out = os.path.join(tmp, "g.json")
    texts = start_four(prog, out, "mount")
    job = job_from_hint(texts[0])
    if not re.search(r"\(PEs 2, 3 copied here from their hosts\); merge them into \S+ with: symmem-trace merge " +
                     re.escape(job) + "$", texts[0], re.M):
        fail("PE 0's hint does not say it copied PEs 2-3's rings")
    rings = sorted(rings_of(job))
    if len(rings) != 4:
        fail("%d rings of job %s in PE 0's /dev/shm, want 4" % (len(rings), job))
    merge_hosts(tool, [], out, job, 0)
    remove_rings(tmp)
    # PEs 2-3 without SYMMEM_TRACE: nobody waits for rings that do not exist.
    texts = start_four(prog, out, "mount", trace_others=False)
    job = job_from_hint(texts[0])
    if not re.search(r"trace-pe\*; PEs 2, 3 traced nothing; merge them into", texts[0]):
        fail("PE 0's hint does not say PEs 2-3 traced nothing")
    if len(rings_of(job)) != 2:
        fail("%d rings of job %s in PE 0's /dev/shm, want 2" % (len(rings_of(job)), job))


def gather_kill(tool, prog, tmp):
    """PE 3, on another host with a /dev/shm of its own, killed mid-run: its ring reaches PE
    0's host as the job ends, and the merge there shows its last puts."""
    if not can_unshare("--uts", "--mount"):
        print("check_trace: gather_kill: needs root and mount namespaces; skipped")
        sys.exit(77)
    out = os.path.join(tmp, "k.json")
    texts = start_four(prog, out, "mount", mode="kill")
    job = job_from_hint(texts[0])
    if not re.search(r"\(PEs 2, 3 copied here from their hosts\); merge them into \S+ with: symmem-trace merge " +
                     re.escape(job) + "$", texts[0], re.M):
        fail("PE 0's hint does not say it copied PEs 2-3's rings")
    if len(rings_of(job)) != 4:
        fail("%d rings of job %s in PE 0's /dev/shm, want 4" % (len(rings_of(job)), job))
    _, unc, doc = merge_two_hosts(tool, [], out, job)
    validate(doc, 4, True, cross_slack_us=2 * unc / 1e3)


def merge_two_hosts(tool, where, out, job):
    """symmem-trace merge of a job on two hosts: (the other host's clock offset in ns, its
    uncertainty in ns, the merged document)."""
    q = subprocess.run([tool, "merge"] + where + ["-o", out, job], capture_output=True, text=True, timeout=120)
    print(q.stdout + q.stderr)
    if q.returncode != 0:
        fail("symmem-trace merge exit %d" % q.returncode)
    m = re.search(r"host otherhost: clock ([+-][0-9.]+) ms from \S+'s \(\+-([0-9.]+) us, (\d+) pairs", q.stdout)
    if not m:
        fail("the merge did not report the other host's clock")
    with open(out) as f:
        return float(m.group(1)) * 1e6, float(m.group(2)) * 1e3, json.load(f)


def merge_hosts(tool, where, out, job, skew_ns):
    """Merges the 4 rings of two hosts and checks the other host's clock offset (skew_ns),
    every signal arrow and the barriers' overlap."""
    est, unc, doc = merge_two_hosts(tool, where, out, job)
    if abs(est - skew_ns) > unc + 1e3:
        fail("clock offset %.0f ns, want %d within +-%.0f ns" % (est, skew_ns, unc))
    pairs = check_schema(doc)
    names = [e["args"]["name"] for e in doc["traceEvents"] if e.get("ph") == "M" and e.get("name") == "process_name"]
    if sum(1 for n in names if "(otherhost:" in n) != 2:
        fail("process tracks %r: want 2 of otherhost" % names)
    sig = sum(1 for a, _ in pairs if a["name"] == "signal")
    if sig != ITERS * 4:  # each wait's arrow, across the hosts too
        fail("%d signal flows, want %d" % (sig, ITERS * 4))
    bars = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "X" and e.get("cat") == "barrier":
            bars.setdefault(e["args"]["seq"], []).append(e)
    full = [v for v in bars.values() if len(v) == 4]
    if len(full) < ITERS:
        fail("%d barriers on all 4 PEs, want at least %d" % (len(full), ITERS))
    slack = 2 * unc / 1e3 + 1.0  # us
    for v in full:
        if max(e["ts"] for e in v) > min(e["ts"] + e["dur"] for e in v) + slack:
            fail("barrier #%d does not overlap on the 4 PEs: %r" % (v[0]["args"]["seq"], [(e["pid"], e["ts"], e["dur"]) for e in v]))
    print("check_trace: hosts: clock offset %.3f ms (+-%.1f us), %d barriers overlap: ok" % (est / 1e6, unc / 1e3, len(full)))


def main():
    case, run, tool, prog = sys.argv[1:5]
    tmp = tempfile.mkdtemp(prefix="symmem-trace-test-")
    try:  # nothing left behind, pass or fail
        if case in ("hosts", "gather", "gather_kill"):
            {"hosts": hosts, "gather": gather, "gather_kill": gather_kill}[case](tool, prog, tmp)
            return
        out = os.path.join(tmp, "t.json")
        npes, killed = record(case, run, tool, prog, out)
        with open(out) as f:
            doc = json.load(f)
        validate(doc, npes, killed)
    finally:
        remove_rings(tmp)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
