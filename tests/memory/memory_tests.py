#!/usr/bin/env python3
"""Memory the node does not have: NULL on every PE, never the out-of-memory killer.

CTest runs one case per process: memory_tests.py --launcher L --pe P CASE. CMake registers
every function named test_* below. The cgroup cases need root and a memory cgroup this
process may create (v1 or v2, whichever the machine has); without one they exit 77
(skipped). Each makes its own cgroup with a limit of a few hundred MiB, runs the job in
it, and removes it. No case commits more than a few hundred MiB for real.
Standard library only.
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import time
import uuid

ARGS = None
MiB = 1 << 20


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from driver import Failure, Skip, check, run_case  # noqa: E402


# ---------------------------------------------------------------------------- cgroups

def own_memory_cgroup():
    """(version, directory to create children in) or None."""
    lines = open("/proc/self/cgroup").read().splitlines()
    mounts = open("/proc/self/mountinfo").read().splitlines()
    v1 = v2 = None
    for line in lines:
        hid, ctrls, path = line.split(":", 2)
        if "memory" in ctrls.split(","):
            v1 = path
        if hid == "0" and ctrls == "":
            v2 = path
    for m in mounts:
        left, right = m.split(" - ", 1)
        f = left.split()
        root, mount = f[3], f[4]
        fstype, _src, opts = right.split()[:3]
        rel = lambda p: p[len(root):] if root != "/" and p.startswith(root) else p
        if v1 is not None and fstype == "cgroup" and "memory" in opts.split(","):
            return 1, mount + rel(v1).rstrip("/")
    for m in mounts:
        left, right = m.split(" - ", 1)
        f = left.split()
        if right.split()[0] == "cgroup2" and v2 is not None:
            mount = f[4]
            try:
                if "memory" not in open(mount + "/cgroup.controllers").read().split():
                    return None
            except OSError:
                return None
            # v2 allows no processes in a cgroup whose children use controllers: make
            # ours a child of the root, which is exempt.
            return 2, mount
    return None


class Cgroup:
    """A memory cgroup of our own with `limit` bytes; removed by close()."""

    def __init__(self, limit):
        if os.geteuid() != 0:
            raise Skip("not root: cannot create a memory cgroup")
        found = own_memory_cgroup()
        if not found:
            raise Skip("no memory cgroup controller is mounted")
        self.version, parent = found
        self.dir = os.path.join(parent, "symmem-test-" + uuid.uuid4().hex[:10])
        try:
            if self.version == 2:
                with open(os.path.join(parent, "cgroup.subtree_control"), "w") as f:
                    f.write("+memory")
            os.mkdir(self.dir)
        except OSError as e:
            raise Skip("cannot create a memory cgroup under %s: %s" % (parent, e))
        try:
            if limit is None:
                pass
            elif self.version == 2:
                self.write("memory.max", str(limit))
                self.write("memory.swap.max", "0", optional=True)
            else:
                self.write("memory.limit_in_bytes", str(limit))
        except OSError as e:
            self.close()
            raise Skip("cannot set the memory limit of %s: %s" % (self.dir, e))

    def write(self, name, value, optional=False):
        try:
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(value)
        except OSError:
            if not optional:
                raise

    def oom_kills(self):
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        for line in open(os.path.join(self.dir, name)):
            k, v = line.split()
            if k == "oom_kill":
                return int(v)
        return -1

    def enter(self):
        """preexec_fn: move the child into the cgroup before it execs."""
        with open(os.path.join(self.dir, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    def close(self):
        deadline = time.monotonic() + 10
        while os.path.isdir(self.dir):
            try:
                for pid in open(os.path.join(self.dir, "cgroup.procs")).read().split():
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                os.rmdir(self.dir)
            except OSError:
                if time.monotonic() > deadline:
                    raise Failure("cannot remove the test cgroup " + self.dir)
                time.sleep(0.05)


# ---------------------------------------------------------------------------- helpers

def marker():
    return "symmem-memory-test-" + uuid.uuid4().hex[:12]


def processes_with(mark):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if mark.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def no_leftovers(mark):
    deadline = time.monotonic() + 3
    while processes_with(mark) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = processes_with(mark)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    check(not left, "processes left behind: %s" % left)


def job_env(**extra):
    env = dict(os.environ)
    env.setdefault("SYMMEM_LOG_LEVEL", "warn")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_job(npes, args, env, cgroup=None, timeout=60):
    mark = marker()
    cmd = [ARGS.launcher, "-n", str(npes), "--timeout", str(timeout), ARGS.pe] + args + [mark]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout + 30, preexec_fn=cgroup.enter if cgroup else None)
    no_leftovers(mark)
    return p.returncode, p.stdout


class OomWatch:
    """Whether the OOM killer ran on the job: in a cgroup of the job's own (no limit) where
    one can be made, else the machine's counter (which other programs can move too)."""

    def __init__(self):
        try:
            self.cg = Cgroup(None)
        except Skip:
            self.cg = None
        self.before = vm_oom_kills()

    def ran(self):
        return self.cg.oom_kills() > 0 if self.cg else vm_oom_kills() != self.before

    def close(self):
        if self.cg:
            self.cg.close()


def vm_oom_kills():
    for line in open("/proc/vmstat"):
        k, v = line.split()
        if k == "oom_kill":
            return int(v)
    return -1


def mem_total():
    for line in open("/proc/meminfo"):
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    raise Failure("no MemTotal in /proc/meminfo")


def refusals(out, call):
    return [l for l in out.splitlines() if re.search(re.escape(call) + r"\(\d+\) returns NULL on every PE: cannot "
                                                                       r"commit", l)]


# ---------------------------------------------------------------------------- cases

# 2 PEs x 200 MiB in a 384 MiB cgroup: each PE's share would fit alone, the node's does
# not. Without the check both would commit and the OOM killer would end one.
CG_LIMIT = 384 * MiB
BIG, SMALL = "200M", "16M"


def check_cgroup_refusals(out, calls, npes):
    for call in calls:
        lines = refusals(out, call)
        check(len(lines) == npes, "expected one refusal line per PE for %s, got %d:\n%s" % (call, len(lines), out))
        for l in lines:
            for part in ("cannot commit 200.0 MiB more", "the %d PEs on this node commit %.1f MiB together" % (npes, 200.0 * npes),
                         "cgroup limit 384.0 MiB", "/dev/shm", "available of",
                         "raise the memory cgroup's limit", "allocate less"):
                check(part in l, "the refusal line lacks %r: %s" % (part, l))


def test_cgroup_capi(npes=2):
    cg = Cgroup(CG_LIMIT)
    try:
        rc, out = run_job(npes, ["capi", BIG, SMALL], job_env(), cgroup=cg)
        check(rc == 0, "the job failed (%d):\n%s" % (rc, out))
        check("mem_pe capi: every check held" in out, "no verdict from PE 0:\n" + out)
        check_cgroup_refusals(out, ["shmem_malloc", "shmem_calloc", "shmem_align", "shmem_realloc"], npes)
        check(cg.oom_kills() == 0, "the out-of-memory killer ran in the job's cgroup")
    finally:
        cg.close()


def test_cgroup_capi_np4():
    """More PEs than cores, and the node's share grows with them."""
    test_cgroup_capi(4)


def test_cgroup_cxx(npes=2):
    cg = Cgroup(CG_LIMIT)
    try:
        rc, out = run_job(npes, ["cxx", BIG, SMALL], job_env(), cgroup=cg)
        check(rc == 0, "the job failed (%d):\n%s" % (rc, out))
        check("mem_pe cxx: every check held" in out, "no verdict from PE 0:\n" + out)
        # malloc, then alloc<double> (which goes through align)
        check_cgroup_refusals(out, ["malloc", "align"], npes)
        check(cg.oom_kills() == 0, "the out-of-memory killer ran in the job's cgroup")
    finally:
        cg.close()


def test_failed_commit_rolls_back():
    """The second round: with the check off (SYMMEM_COMMIT_CHECK=0) in a v1 cgroup whose
    OOM killer is disabled, fallocate itself fails (ENOMEM) on a PE that reaches the limit;
    every PE returns NULL, the PEs whose commit went through give their pages back, and a
    smaller allocation works afterwards."""
    cg = Cgroup(CG_LIMIT)
    try:
        if cg.version != 1:
            raise Skip("needs cgroup v1 (memory.oom_control oom_kill_disable) to make fallocate fail")
        cg.write("memory.oom_control", "1")
        rc, out = run_job(2, ["capi", BIG, SMALL], job_env(SYMMEM_COMMIT_CHECK=0, SYMMEM_LOG_LEVEL="debug"), cgroup=cg)
        check(rc == 0, "the job failed (%d):\n%s" % (rc, out))
        check("mem_pe capi: every check held" in out, "no verdict from PE 0:\n" + out)
        failed = [l for l in out.splitlines() if "returns NULL on every PE: /dev/shm cannot back" in l]
        check(failed, "no PE reports a failed commit:\n" + out)
        gave = [l for l in out.splitlines() if re.search(r"a PE could not commit; gave back ([\d.]+ MiB) of the \1", l)]
        check(gave, "no PE gave its committed pages back:\n" + out)
        check(cg.oom_kills() == 0, "the out-of-memory killer ran in the job's cgroup")
    finally:
        cg.close()


def test_beyond_node_memory():
    """No cgroup needed: each PE asks for twice the machine's RAM (a heap that large is
    only reserved); the check refuses before anything is committed."""
    total = mem_total()
    big = 2 * total
    heap = (big + (2 << 30)) // (1 << 30)
    watch = OomWatch()
    try:
        rc, out = run_job(2, ["capi", str(big), SMALL], job_env(SHMEM_SYMMETRIC_SIZE="%dG" % heap,
                                                               SYMMEM_LOG_LEVEL="info"), cgroup=watch.cg)
        oom = watch.ran()
    finally:
        watch.close()
    never = [l for l in out.splitlines() if "could never all be committed here" in l]
    check(len(never) == 1 and "the 2 PE(s) on this node (2 x %d.0 GiB)" % heap in never[0] and "[pe 0 " in never[0],
          "expected one info line from PE 0 saying the heaps cannot all be committed:\n" + out)
    check(rc == 0, "the job failed (%d):\n%s" % (rc, out))
    check("mem_pe capi: every check held" in out, "no verdict from PE 0:\n" + out)
    for call in ("shmem_malloc", "shmem_calloc", "shmem_align", "shmem_realloc"):
        lines = refusals(out, call)
        check(len(lines) == 2, "expected one refusal line per PE for %s, got %d:\n%s" % (call, len(lines), out))
        for l in lines:
            check("the 2 PEs on this node commit" in l and "available of" in l and "/dev/shm" in l,
                  "the refusal line does not say what the node has: " + l)
    check(not oom, "the out-of-memory killer ran on the job")


def start_holding_job(npes, args, env, cgroup=None):
    mark = marker()
    cmd = [ARGS.launcher, "-n", str(npes), "--timeout", "60", ARGS.pe] + args + [mark]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         preexec_fn=cgroup.enter if cgroup else None)
    return p, mark


def wait_ready(p, npes, deadline_s=40):
    """Reads output until every PE said ready; returns ({rank: pid}, text so far)."""
    pids, text = {}, ""
    deadline = time.monotonic() + deadline_s
    while len(pids) < npes and time.monotonic() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        text += line
        m = re.search(r"PE (\d+) pid (\d+) ready", line)
        if m:
            pids[int(m.group(1))] = int(m.group(2))
    return pids, text


def test_init_beyond_node_memory():
    """What init commits is checked too: a metadata region larger than the machine fails
    init with the reason on every PE, and nothing is committed."""
    watch = OomWatch()
    try:
        rc, out = run_job(2, ["capi", "1M", "1M"], job_env(SYMMEM_METADATA_SIZE=str(2 * mem_total())), timeout=30,
                          cgroup=watch.cg)
        oom = watch.ran()
    finally:
        watch.close()
    check(rc != 0, "init succeeded with a metadata region twice the machine's memory:\n" + out)
    lines = [l for l in out.splitlines() if "metadata region (SYMMEM_METADATA_SIZE): cannot commit" in l]
    check(lines and "the 2 PEs on this node commit" in lines[0] and "available of" in lines[0],
          "init does not say why:\n" + out)
    check(not oom, "the out-of-memory killer ran on the job")


def test_outside_kill():
    before = vm_oom_kills()
    p, mark = start_holding_job(2, ["hold", "32M"], job_env())
    try:
        pids, text = wait_ready(p, 2)
        check(len(pids) == 2, "the PEs did not get ready:\n" + text)
        os.kill(pids[1], signal.SIGKILL)
        rest, _ = p.communicate(timeout=30)
        out = text + rest
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    no_leftovers(mark)
    check(p.returncode == 128 + 9, "symmem-run exited %s, expected 137:\n%s" % (p.returncode, out))
    want = "PE 1 (pid %d) was killed by signal 9" % pids[1]
    lines = [l for l in out.splitlines() if want in l]
    check(lines, "symmem-run did not report the kill:\n" + out)
    l = lines[0]
    check("from outside the job (symmem-run sent no signal)" in l, "not named as a kill from outside: " + l)
    if vm_oom_kills() == before:
        check("no out-of-memory kill is recorded" in l and "another process or a person sent it" in l,
              "the line does not rule out the OOM killer: " + l)
    m = re.search(r"the job had committed ([\d.]+) MiB of symmetric memory on this node", l)
    # 2 PEs x (32 MiB heap + 4 MiB metadata + static data)
    check(m and float(m.group(1)) >= 72, "the line does not give the job's committed memory: " + l)


def test_oom_killer_named():
    cg = Cgroup(256 * MiB)
    try:
        p, mark = start_holding_job(2, ["hog", "32M"], job_env(), cgroup=cg)
        try:
            out, _ = p.communicate(timeout=90)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        no_leftovers(mark)
        check(cg.oom_kills() >= 1, "the out-of-memory killer did not run in the cgroup:\n" + out)
        lines = [l for l in out.splitlines() if re.search(r"PE 1 \(pid \d+\) was killed by signal 9", l)]
        check(lines, "symmem-run did not report PE 1's kill:\n" + out)
        l = lines[0]
        check("from outside the job" in l and "the kernel's out-of-memory killer ended it" in l,
              "the OOM killer is not named: " + l)
        check(re.search(r"oom_kill 0 -> [1-9]|kernel log: \".*Killed process", l),
              "no evidence given for the OOM kill: " + l)
        check(re.search(r"the job had committed [\d.]+ MiB of symmetric memory on this node", l),
              "the line does not give the job's committed memory: " + l)
        check(p.returncode == 137, "symmem-run exited %s, expected 137" % p.returncode)
    finally:
        cg.close()



# ---------------------------------------------------------------------------- SYMMEM_HEAP_DIR

class HugeDir:
    """A directory of huge pages made for the test and removed by close(): a tmpfs mounted
    with huge=always, or a hugetlbfs mount with `pages` 2 MiB pages added to the machine's
    pool (given back at close). Needs root and mount; Skip otherwise."""

    def __init__(self, kind, pages=0):
        if os.geteuid() != 0:
            raise Skip("not root: cannot mount")
        self.dir = "/tmp/symmem-test-huge-" + uuid.uuid4().hex[:10]
        self.pool_before = None
        os.mkdir(self.dir)
        try:
            if kind == "hugetlbfs":
                with open("/proc/sys/vm/nr_hugepages") as f:
                    self.pool_before = int(f.read())
                with open("/proc/sys/vm/nr_hugepages", "w") as f:
                    f.write(str(self.pool_before + pages))
                with open("/proc/sys/vm/nr_hugepages") as f:
                    if int(f.read()) < self.pool_before + pages:
                        raise Skip("the kernel could not reserve %d huge pages" % pages)
                args = ["mount", "-t", "hugetlbfs", "-o", "pagesize=2M", "none", self.dir]
            else:
                args = ["mount", "-t", "tmpfs", "-o", "huge=always,size=1g", "none", self.dir]
            p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if p.returncode != 0:
                raise Skip("%s failed: %s" % (" ".join(args), p.stdout.strip()))
            self.mounted = True
        except (Skip, OSError) as e:
            self.mounted = False
            self.close()
            raise e if isinstance(e, Skip) else Skip(str(e))

    def close(self):
        if getattr(self, "mounted", False):
            subprocess.run(["umount", self.dir])
            self.mounted = False
        if os.path.isdir(self.dir):
            os.rmdir(self.dir)
        if self.pool_before is not None:
            with open("/proc/sys/vm/nr_hugepages", "w") as f:
                f.write(str(self.pool_before))
            self.pool_before = None


def check_huge_job(d, npes):
    """npes PEs with their heaps in d: each puts 32 MiB into the next, and sees every PE's
    block mapped in huge pages; nothing is left in d."""
    rc, out = run_job(npes, ["huge", "32M"], job_env(SYMMEM_HEAP_DIR=d.dir, SHMEM_SYMMETRIC_SIZE="64M",
                                                     SYMMEM_METADATA_SIZE="1M"))
    check(rc == 0, "the job failed (%d):\n%s" % (rc, out))
    kb = {int(m.group(1)): int(m.group(2)) for m in re.finditer(r"PE (\d+) huge_kb (-?\d+)", out)}
    check(sorted(kb) == list(range(npes)), "not every PE reported its huge pages:\n" + out)
    for pe, k in kb.items():
        # each PE maps npes blocks of 32 MiB; a block's unaligned ends may be small pages
        check(k >= npes * 28 * 1024, "PE %d maps only %d kB of the heaps in huge pages:\n%s" % (pe, k, out))
    left = os.listdir(d.dir)
    check(not left, "left in %s: %s" % (d.dir, left))


def test_heap_dir_tmpfs_huge():
    """SYMMEM_HEAP_DIR on a tmpfs mounted with huge=always: the heaps are backed by 2 MiB
    pages, put and get work, nothing is left there."""
    d = HugeDir("tmpfs")
    try:
        check_huge_job(d, 2)
    finally:
        d.close()


def test_heap_dir_hugetlbfs():
    """SYMMEM_HEAP_DIR on hugetlbfs: the heap, the metadata and every commit are whole huge
    pages (a 1 MiB SYMMEM_METADATA_SIZE is rounded up), and 4 PEs work over it."""
    d = HugeDir("hugetlbfs", pages=4 * (64 + 2) // 2 + 8)
    try:
        check_huge_job(d, 4)
    finally:
        d.close()


def test_heap_dir_missing():
    """A SYMMEM_HEAP_DIR that does not exist ends the job at init with one line naming it."""
    missing = "/tmp/symmem-test-no-such-dir-" + uuid.uuid4().hex[:8]
    rc, out = run_job(2, ["huge", "1M"], job_env(SYMMEM_HEAP_DIR=missing), timeout=30)
    check(rc != 0, "the job succeeded with SYMMEM_HEAP_DIR=%s:\n%s" % (missing, out))
    check(re.search(r"SYMMEM_HEAP_DIR=%s: No such file or directory" % re.escape(missing), out),
          "no line names the missing directory:\n" + out)

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--pe", required=True)
    sys.exit(run_case(globals(), ap))
