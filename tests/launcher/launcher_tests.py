#!/usr/bin/env python3
"""Contract and failure tests of symmem-run.

CTest runs one case per process: launcher_tests.py --launcher L --fake-pe F --store-pe S CASE.
CMake registers every function named test_* below, so a new case needs no CMake edit.

Every case tags the processes it starts with a unique marker word in their argv and, at
its end, fails if any process carrying that marker is still alive or if anything of its
jobs is left in /dev/shm (and removes it, so a failing case leaves nothing behind either).
Standard library only.
"""
import argparse
import glob
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid

ARGS = None


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


# ---------------------------------------------------------------------------- helpers

class Case:
    """Marker, job ids and the leftover checks of one test case."""

    def __init__(self):
        self.marker = "symmem-launcher-test-" + uuid.uuid4().hex[:12]
        self.job_ids = set()
        self.mark = "mark=" + self.marker

    def note_jobs(self, text):
        for m in re.finditer(r"SYMMEM_JOB_ID=([a-z0-9]+)", text):
            self.job_ids.add(m.group(1))
        for m in re.finditer(r"/dev/shm/symmem-([a-z0-9]+)-", text):
            self.job_ids.add(m.group(1))

    def leftovers(self, wait_s=3.0):
        deadline = time.monotonic() + wait_s
        while True:
            procs = processes_with(self.marker)
            shm = [p for j in self.job_ids for p in glob.glob("/dev/shm/symmem-%s-*" % j)]
            if (not procs and not shm) or time.monotonic() >= deadline:
                return procs, shm
            time.sleep(0.05)

    def finish(self):
        procs, shm = self.leftovers()
        for pid, _ in procs:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for path in shm:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        check(not procs, "processes left behind: %s" % procs)
        check(not shm, "objects left in /dev/shm: %s" % shm)


def processes_with(marker):
    """Live (non-zombie) processes whose argv contains marker: [(pid, argv)]."""
    found = []
    needle = marker.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                cmdline = f.read()
            if needle not in cmdline:
                continue
            with open("/proc/%s/stat" % entry) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            if state in ("Z", "X"):
                continue
            found.append((int(entry), cmdline.replace(b"\0", b" ").decode(errors="replace")))
        except OSError:
            continue
    return found


def launcher(*args):
    return [ARGS.launcher] + [str(a) for a in args]


def run(cmd, timeout=25, env=None, input=None):
    """Runs to completion: (rc, stdout, stderr, seconds)."""
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, input=input,
                       stdin=None if input is not None else subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


class Running:
    """A launcher started in the background, its output collected by threads."""

    def __init__(self, cmd):
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                  text=True)
        self.out, self.err = [], []
        self.threads = [threading.Thread(target=self._pump, args=(self.p.stdout, self.out), daemon=True),
                        threading.Thread(target=self._pump, args=(self.p.stderr, self.err), daemon=True)]
        for t in self.threads:
            t.start()

    @staticmethod
    def _pump(stream, sink):
        for line in stream:
            sink.append(line)

    def wait_for_lines(self, text, count, timeout=15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if sum(1 for line in list(self.out) if line.strip() == text) >= count:
                return
            check(self.p.poll() is None, "launcher exited early with %s: %s" % (self.p.returncode, "".join(self.err)))
            time.sleep(0.02)
        raise Failure("only %d of %d '%s' lines within %d s" % (
            sum(1 for line in self.out if line.strip() == text), count, text, timeout))

    def wait(self, timeout=15):
        t0 = time.monotonic()
        try:
            rc = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise Failure("launcher did not exit within %d s" % timeout)
        for t in self.threads:
            t.join(5)
        return rc, "".join(self.out), "".join(self.err), time.monotonic() - t0


def launcher_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("symmem-run: ")]


# ---------------------------------------------------------------------------- successful jobs

def store_job(case, n):
    rc, out, err, _ = run(launcher("-n", n, "--timeout", 20, ARGS.store_pe, case.mark))
    case.note_jobs(out)
    check(rc == 0, "rc %d, stderr:\n%s" % (rc, err))
    for r in range(n):
        check(re.search(r"^pe %d ok npes %d job [a-z0-9]+$" % (r, n), out, re.M), "no 'pe %d ok' in:\n%s" % (r, out))
    jobs = set(re.findall(r"job ([a-z0-9]+)$", out, re.M))
    check(len(jobs) == 1, "PEs disagree on the job id: %s" % jobs)


def test_store_np1(case):
    store_job(case, 1)


def test_store_np2(case):
    store_job(case, 2)


def test_store_np4(case):
    store_job(case, 4)


def test_store_np8(case):
    store_job(case, 8)


def test_env_contract(case):
    env = dict(os.environ, SYMMEM_LAUNCHER_TEST_INHERITED="from-parent", SYMMEM_RANK="99")
    rc, out, err, _ = run(launcher("-n", 3, "-x", "A_VAR=1", "--env", "B_VAR=two=2", "--env=C_VAR=", ARGS.fake_pe,
                                   case.mark, "env=SYMMEM_RANK", "env=SYMMEM_NPES", "env=SYMMEM_STORE",
                                   "env=SYMMEM_STORE_MAGIC", "env=SYMMEM_JOB_ID", "env=A_VAR", "env=B_VAR",
                                   "env=C_VAR", "env=SYMMEM_LAUNCHER_TEST_INHERITED"), env=env)
    case.note_jobs(out)
    check(rc == 0, "rc %d: %s" % (rc, err))
    check(out.count("SYMMEM_NPES=3\n") == 3, out)
    check(sorted(re.findall(r"^SYMMEM_RANK=(\d+)$", out, re.M)) == ["0", "1", "2"], out)
    check(len(set(re.findall(r"^SYMMEM_STORE=(tcp://127\.0\.0\.1:\d+)$", out, re.M))) == 1, out)
    check(len(set(re.findall(r"^SYMMEM_STORE_MAGIC=([0-9a-f]{16})$", out, re.M))) == 1, out)
    check(len(set(re.findall(r"^SYMMEM_JOB_ID=([a-z0-9]+)$", out, re.M))) == 1, out)
    for line in ("A_VAR=1", "B_VAR=two=2", "C_VAR=", "SYMMEM_LAUNCHER_TEST_INHERITED=from-parent"):
        check(out.count(line + "\n") == 3, "expected '%s' from every PE:\n%s" % (line, out))


def test_job_ids_differ(case):
    ids = set()
    for _ in range(3):
        rc, out, err, _ = run(launcher("-n", 1, ARGS.fake_pe, case.mark, "env=SYMMEM_JOB_ID", "env=SYMMEM_STORE_MAGIC"))
        case.note_jobs(out)
        check(rc == 0, err)
        ids.add(out)
    check(len(ids) == 3, "job id / magic repeated: %s" % ids)


def test_shell_and_python_programs(case):
    rc, out, err, _ = run(launcher("-n", 3, "sh", "-c", 'echo "rank $SYMMEM_RANK of $SYMMEM_NPES"', case.marker))
    check(rc == 0, err)
    check(sorted(out.splitlines()) == ["rank %d of 3" % r for r in range(3)], out)
    rc, out, err, _ = run(launcher("-n", 2, "--tag-output", sys.executable, "-c",
                                   "import os, sys; print(os.environ['SYMMEM_RANK']); sys.exit(0)", case.marker))
    check(rc == 0, err)
    check(sorted(out.splitlines()) == ["[pe 0] 0", "[pe 1] 1"], out)
    rc, out, err, _ = run(launcher("-n", 2, "sh", "-c", "exit 5", case.marker))
    check(rc == 5, "shell PE exit 5 gave rc %d" % rc)


def test_options_stop_at_program(case):
    rc, out, err, _ = run(launcher("-n", 1, "sh", "-c", 'printf "%s\\n" "$*"', case.marker, "-n", "5", "--timeout", "x"))
    check(rc == 0 and out == "-n 5 --timeout x\n", "rc %d out %r err %r" % (rc, out, err))
    rc, out, err, _ = run(launcher("-n2", "--", "sh", "-c", "echo ok", case.marker))
    check(rc == 0 and out == "ok\nok\n", "rc %d out %r err %r" % (rc, out, err))
    rc, out, err, _ = run(launcher("-np", 2, "sh", "-c", "echo ok", case.marker))
    check(rc == 0 and out == "ok\nok\n", "rc %d out %r err %r" % (rc, out, err))
    rc, out, err, _ = run(launcher("--npes=2", "sh", "-c", "echo ok", case.marker))
    check(rc == 0 and out == "ok\nok\n", "rc %d out %r err %r" % (rc, out, err))


def test_stdin_goes_to_pe0(case):
    rc, out, err, _ = run(launcher("-n", 3, "--tag-output", "sh", "-c", "cat", case.marker), input="hello\n")
    check(rc == 0, err)
    check(out == "[pe 0] hello\n", "stdin should reach PE 0 only, got %r" % out)


# ---------------------------------------------------------------------------- output

def test_tag_output(case):
    rc, out, err, _ = run(launcher("-n", 2, "--tag-output", ARGS.fake_pe, case.mark, r"out=hello\nwor", "sleep=0.1",
                                   r"out=ld\n", r"err=oops\n", "out=partial"))
    check(rc == 0, err)
    for r in range(2):
        mine = [line for line in out.splitlines() if line.startswith("[pe %d] " % r)]
        check(mine == ["[pe %d] hello" % r, "[pe %d] world" % r, "[pe %d] partial" % r], "PE %d stdout: %r" % (r, out))
        check("[pe %d] oops\n" % r in err, "PE %d stderr: %r" % (r, err))
    check(all(line.startswith("[pe ") for line in out.splitlines()), out)
    check(out.endswith("\n"), "a partial last line is terminated: %r" % out)


def test_untagged_output_verbatim(case):
    rc, out, err, _ = run(launcher("-n", 1, ARGS.fake_pe, case.mark, r"out=a\nb", "err=c"))
    check(rc == 0 and out == "a\nb" and err == "c", "rc %d out %r err %r" % (rc, out, err))


def test_large_output(case):
    script = 'head -c 1000000 /dev/zero | tr "\\0" x; echo'
    rc, out, err, _ = run(launcher("-n", 2, "sh", "-c", script, case.marker))
    check(rc == 0, err)
    check(len(out) == 2 * 1000001 and set(out) == {"x", "\n"}, "got %d bytes" % len(out))
    rc, out, err, _ = run(launcher("-n", 2, "--tag-output", "sh", "-c", script, case.marker))
    check(rc == 0, err)
    lines = out.splitlines()
    check(sorted(line[:7] for line in lines) == ["[pe 0] ", "[pe 1] "], [line[:20] for line in lines])
    check(all(len(line) == 7 + 1000000 for line in lines), "tagged lines cut")


# ---------------------------------------------------------------------------- failures

def test_pe_exit_code(case):
    rc, out, err, secs = run(launcher("-n", 4, ARGS.fake_pe, case.mark, "@2:exit=3", "sleep=30"))
    check(rc == 3, "rc %d, stderr %r" % (rc, err))
    lines = launcher_lines(err)
    check(len(lines) == 1 and re.fullmatch(r"symmem-run: PE 2 \(pid \d+\) exited with code 3", lines[0]),
          "stderr: %r" % err)
    check(secs < 5, "sleeping PEs kept the job alive for %.1f s" % secs)


def test_pe_ignoring_sigterm_is_killed(case):
    # PE 1 exits a second after start, when the others ignore SIGTERM already (under load,
    # an immediate exit raced their start-up, and SIGTERM ended them at once)
    rc, out, err, secs = run(launcher("-n", 3, ARGS.fake_pe, case.mark, "ignore=15", "spawn=30", "@1:sleep=1",
                                      "@1:exit=5", "sleep=30"))
    check(rc == 5, "rc %d, stderr %r" % (rc, err))
    check(2.5 < secs < 9, "SIGKILL after the grace period expected, took %.1f s" % secs)


def test_pe_killed_by_signal(case):
    rc, out, err, secs = run(launcher("-n", 4, ARGS.fake_pe, case.mark, "@1:signal=9", "sleep=30"))
    check(rc == 137, "rc %d, stderr %r" % (rc, err))
    lines = launcher_lines(err)
    # (the PE SIGKILLs itself: not symmem-run's signal, and not the OOM killer's)
    check(len(lines) == 1 and re.fullmatch(r"symmem-run: PE 1 \(pid \d+\) was killed by signal 9 \(Killed\) from "
                                           r"outside the job \(symmem-run sent no signal\); no out-of-memory kill is "
                                           r"recorded \(.*\), so the PE itself, another process or a person sent it",
                                           lines[0]), "stderr: %r" % err)
    check(secs < 5, "took %.1f s" % secs)


def test_timeout(case):
    rc, out, err, secs = run(launcher("-n", 4, "--timeout", 2, ARGS.fake_pe, case.mark, "@0:exit=0", "@2:exit=0",
                                      "sleep=30"))
    check(rc == 124, "rc %d, stderr %r" % (rc, err))
    check(launcher_lines(err) == ["symmem-run: timeout after 2 s; PEs 1, 3 had not finished"], "stderr: %r" % err)
    check(1.9 < secs < 6, "took %.1f s" % secs)


def test_fractional_timeout_single_pe(case):
    rc, out, err, secs = run(launcher("-n", 1, "--timeout", "0.5", ARGS.fake_pe, case.mark, "sleep=30"))
    check(rc == 124, "rc %d" % rc)
    check(launcher_lines(err) == ["symmem-run: timeout after 0.5 s; PE 0 had not finished"], "stderr: %r" % err)
    check(secs < 4, "took %.1f s" % secs)


def signal_case(case, sig, expect_rc):
    job = Running(launcher("-n", 4, ARGS.fake_pe, case.mark, "env=SYMMEM_JOB_ID", "shm=x", "spawn=30", r"out=ready\n",
                           "sleep=30"))
    job.wait_for_lines("ready", 4)
    case.note_jobs("".join(job.out))
    job.p.send_signal(sig)
    rc, out, err, secs = job.wait()
    check(rc == expect_rc, "rc %d, stderr %r" % (rc, err))
    check(secs < 5, "took %.1f s" % secs)
    check(any(re.match(r"symmem-run: received signal %d " % sig, line) for line in launcher_lines(err)), err)


def test_sigint(case):
    signal_case(case, signal.SIGINT, 130)


def test_sigterm(case):
    signal_case(case, signal.SIGTERM, 143)


def test_launcher_sigkill(case):
    # PEs die by PDEATHSIG; the guardian kills what they started and removes their shm.
    job = Running(launcher("-n", 3, ARGS.fake_pe, case.mark, "env=SYMMEM_JOB_ID", "shm=x", "spawn=30",
                           r"out=ready\n", "sleep=30"))
    job.wait_for_lines("ready", 3)
    case.note_jobs("".join(job.out))
    check(len(processes_with(case.marker)) >= 7, "expected launcher, guardian, 3 PEs, 3 children")
    job.p.kill()
    job.wait()
    procs, shm = case.leftovers(wait_s=5)
    check(not procs, "left running after the launcher was SIGKILLed: %s" % procs)
    check(not shm, "left in /dev/shm after the launcher was SIGKILLed: %s" % shm)


def test_shm_removed_after_pe_killed(case):
    rc, out, err, _ = run(launcher("-n", 2, ARGS.fake_pe, case.mark, "env=SYMMEM_JOB_ID", "shm=x", "@1:sleep=0.2",
                                   "@1:signal=9", "sleep=30"))
    case.note_jobs(out)
    check(rc == 137, "rc %d %r" % (rc, err))
    paths = re.findall(r"^shm (\S+)$", out, re.M)
    # PE 1's object for sure; PE 0's unless it was stopped first (case.finish checks all).
    check(any(p.endswith("-x-1") for p in paths), out)
    check(not any(os.path.exists(p) for p in paths), "left: %s" % paths)


def test_shm_removed_after_success(case):
    rc, out, err, _ = run(launcher("-n", 3, ARGS.fake_pe, case.mark, "env=SYMMEM_JOB_ID", "shm=x", "shm=y"))
    case.note_jobs(out)
    check(rc == 0, err)
    paths = re.findall(r"^shm (\S+)$", out, re.M)
    check(len(paths) == 6, out)
    check(not any(os.path.exists(p) for p in paths), "left: %s" % paths)


def test_shm_removed_after_timeout(case):
    rc, out, err, _ = run(launcher("-n", 2, "--timeout", "0.5", ARGS.fake_pe, case.mark, "env=SYMMEM_JOB_ID",
                                   "shm=x", "sleep=30"))
    case.note_jobs(out)
    check(rc == 124, "rc %d %r" % (rc, err))
    check(len(case.job_ids) == 1, out)


# ---------------------------------------------------------------------------- bad arguments

def test_bad_arguments(case):
    fake = ARGS.fake_pe
    cases = [
        ["-n", "0", fake], ["-n", "abc", fake], ["-n", "-3", fake], ["-n", "2.5", fake], [fake], ["-n", "2"], [],
        ["--bogus", "-n", "2", fake], ["-n"], ["--timeout", "-1", "-n", "1", fake],
        ["--timeout", "abc", "-n", "1", fake], ["--timeout", "nan", "-n", "1", fake], ["-x", "1BAD=2", "-n", "1", fake],
        ["-x", "SYMMEM_LAUNCHER_TEST_SURELY_UNSET", "-n", "1", fake], ["--tag-output=yes", "-n", "1", fake],
        ["-n", "1", "--timeout"], ["--gpus", "", "-n", "1", fake], ["--gpus", "a", "-n", "1", fake],
        ["--gpus", "3-1", "-n", "1", fake], ["--gpus", "0,,1", "-n", "1", fake], ["--gpus", "-1", "-n", "1", fake],
        ["--gpus=0-", "-n", "1", fake], ["--gpus", "99999", "-n", "1", fake], ["-n", "1", "--gpus"],
    ]
    for args in cases:
        if fake in args:
            args = args + [case.mark, "out=SPAWNED"]
        rc, out, err, _ = run(launcher(*args))
        lines = err.splitlines()
        check(rc == 2, "%s: rc %d (want 2), stderr %r" % (args, rc, err))
        check(len(lines) == 2 and lines[0].startswith("symmem-run: ") and lines[1].startswith("usage: symmem-run"),
              "%s: stderr %r" % (args, err))
        check("SPAWNED" not in out, "%s: a PE was started" % args)


def test_gpus(case):
    # The PE with index i on its node gets SYMMEM_DEVICE=LIST[i mod len(LIST)]; --gpus wins over -x.
    show = 'echo "$SYMMEM_RANK $SYMMEM_DEVICE"'
    rc, out, err, _ = run(launcher("-n", 4, "--gpus", "0,1", "-x", "SYMMEM_DEVICE=9", "sh", "-c", show, case.marker))
    check(rc == 0, err)
    check(sorted(out.splitlines()) == ["0 0", "1 1", "2 0", "3 1"], out)
    check("-x SYMMEM_DEVICE is ignored: --gpus sets it for each PE" in err, err)
    rc, out, err, _ = run(launcher("-n", 3, "--gpus=2-3,0", "sh", "-c", show, case.marker))
    check(rc == 0 and sorted(out.splitlines()) == ["0 2", "1 3", "2 0"], "rc %d out %r err %r" % (rc, out, err))
    # emulated nodes of 3 PEs each: the index counts from each node's first PE
    rc, out, err, _ = run(launcher("-n", 6, "--emulate-nodes", 2, "--gpus", "4-7", "sh", "-c", show, case.marker))
    check(rc == 0 and sorted(out.splitlines()) == ["0 4", "1 5", "2 6", "3 4", "4 5", "5 6"],
          "rc %d out %r err %r" % (rc, out, err))
    # without --gpus the launcher sets nothing (the library's default: node index mod visible GPUs)
    rc, out, err, _ = run(launcher("-n", 1, "sh", "-c", show, case.marker),
                          env={k: v for k, v in os.environ.items() if k != "SYMMEM_DEVICE"})
    check(rc == 0 and out == "0 \n", "rc %d out %r err %r" % (rc, out, err))
    rc, out, err, _ = run(launcher("--gpus", "1-0", "-n", 1, "sh", "-c", show, case.marker))
    check(rc == 2 and err.startswith("symmem-run: --gpus: '1-0' is not a list of GPU ordinals such as 0,1 or 0-3 "
                                     "(the range '1-0' counts down)\n"), "rc %d err %r" % (rc, err))


def test_help_and_version(case):
    rc, out, err, _ = run(launcher("--help"))
    check(rc == 0 and out.startswith("usage: symmem-run") and "--timeout" in out and "--gpus LIST" in out
          and err == "", out + err)
    rc, out, err, _ = run(launcher("-h"))
    check(rc == 0 and out.startswith("usage: symmem-run"), out + err)
    rc, out, err, _ = run(launcher("--version"))
    check(rc == 0 and re.fullmatch(r"symmem-run \(symmem\) \d+\.\d+\.\d+\n", out), out + err)


def test_program_not_found(case):
    rc, out, err, _ = run(launcher("-n", 2, "symmem-no-such-program-" + case.marker))
    check(rc == 127, "rc %d" % rc)
    check(err == "symmem-run: symmem-no-such-program-%s: command not found\n" % case.marker, err)
    rc, out, err, _ = run(launcher("-n", 2, "/nonexistent/" + case.marker))
    check(rc == 127 and err.startswith("symmem-run: /nonexistent/") and len(err.splitlines()) == 1,
          "rc %d %r" % (rc, err))


def test_program_not_executable(case):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "not-executable")
        with open(path, "w") as f:
            f.write("echo hi\n")
        rc, out, err, _ = run(launcher("-n", 2, path, case.mark))
        check(rc == 126 and "Permission denied" in err and len(err.splitlines()) == 1, "rc %d %r" % (rc, err))
        rc, out, err, _ = run(launcher("-n", 2, d, case.mark))
        check(rc == 126 and len(err.splitlines()) == 1, "directory: rc %d %r" % (rc, err))
        # A script without "#!" runs under /bin/sh, as with execvp.
        script = os.path.join(d, "script")
        with open(script, "w") as f:
            f.write('echo "script $SYMMEM_RANK"\nexit 7\n')
        os.chmod(script, stat.S_IRWXU)
        rc, out, err, _ = run(launcher("-n", 1, script, case.mark))
        check(rc == 7 and out == "script 0\n", "rc %d %r %r" % (rc, out, err))


# ---------------------------------------------------------------------------- main

def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--launcher", required=True)
    parser.add_argument("--fake-pe", required=True)
    parser.add_argument("--store-pe", required=True)
    parser.add_argument("case", nargs="*", help="test names without test_ (default: all)")
    ARGS = parser.parse_args()
    # Our children must see these signals with their default action, whatever we inherited.
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    tests = {name[5:]: fn for name, fn in globals().items() if name.startswith("test_")}
    names = ARGS.case or list(tests)
    failed = 0
    for name in names:
        if name not in tests:
            print("unknown case %s" % name)
            return 2
        case = Case()
        t0 = time.monotonic()
        try:
            try:
                tests[name](case)
            finally:
                case.finish()
            print("PASS %s (%.1f s)" % (name, time.monotonic() - t0))
        except (Failure, subprocess.TimeoutExpired) as e:
            failed += 1
            print("FAIL %s: %s" % (name, e))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
