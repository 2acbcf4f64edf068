"""What the Python test drivers (tests/*/*_tests.py) share: their failure and skip
exceptions, the case runner CTest calls (`driver.py ARGS... CASE` runs test_CASE), the
/dev/shm leak check, and free loopback ports. Standard library only.

A driver does:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
    from driver import Failure, Skip, check, run_case
    ...
    if __name__ == "__main__":
        sys.exit(run_case(globals(), ap))
"""
import glob
import os
import random
import secrets
import signal
import socket
import subprocess
import time

SKIP = 77  # CTest's SKIP_RETURN_CODE for every driver


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def shm_objects():
    return set(glob.glob("/dev/shm/symmem-*"))


def held_shm_objects():
    """The /dev/shm objects some live process has open or mapped. CTest runs cases side by
    side: an object a running case holds is not a leak of this one (this case's PEs have all
    exited when it is asked)."""
    held = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            for fd in os.listdir("/proc/%s/fd" % pid):
                try:
                    held.add(os.readlink("/proc/%s/fd/%s" % (pid, fd)))
                except OSError:
                    pass
            with open("/proc/%s/maps" % pid) as f:
                for line in f:
                    if "/dev/shm/" in line:
                        held.add(line.split(None, 5)[-1].strip())
        except OSError:
            pass
    return held


# The variables launchers give their processes: a job a driver starts sees only its own.
LAUNCHER_PREFIXES = ("SYMMEM_", "OMPI_", "PMI", "SLURM_", "PMIX_")
LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK",
                 "TORCHELASTIC_RUN_ID")


class Tag:
    """A variable in the environment of every process a driver starts (`env`), which finds
    the ones left behind after a case, wherever they were reparented."""

    def __init__(self, var):
        self.var = var
        self.value = var.lower() + "-" + secrets.token_hex(6)

    def env(self, strip=(), **extra):
        """This process's environment without symmem's, the launchers' and the `strip`
        prefixes' variables, plus warn-level logs, a 64 MiB heap, the tag and `extra`.
        Hang and check reports write no JSON unless `extra` names a file (by default they
        would write it into the working directory, the build tree)."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(LAUNCHER_PREFIXES + tuple(strip)) and k not in LAUNCHER_VARS}
        env["SYMMEM_HANG_FILE"] = env["SYMMEM_CHECK_FILE"] = os.devnull
        env["SYMMEM_LOG_LEVEL"] = "warn"
        env["SHMEM_SYMMETRIC_SIZE"] = "64M"
        env[self.var] = self.value
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def pids(self):
        mark = ("%s=%s" % (self.var, self.value)).encode()
        left = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                with open("/proc/%s/environ" % pid, "rb") as f:
                    if mark in f.read():
                        left.append(int(pid))
            except OSError:
                pass
        return left

    def kill(self):
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def check_gone(self, what, wait=5):
        """Fails if a tagged process outlives `wait` seconds (killed then, not left)."""
        deadline = time.monotonic() + wait
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.1)
        left = self.pids()
        self.kill()
        check(not left, "%s: processes left behind: %s" % (what, left))


def check_no_shm_left(before, what, wait=3):
    """Fails if a /dev/shm object of ours that was not there `before` outlives `wait`
    seconds with no process holding it (cases beside this one hold their own)."""
    deadline = time.monotonic() + wait
    while True:
        left = shm_objects() - before - held_shm_objects()
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    check(not left, "%s: left in /dev/shm: %s" % (what, sorted(left)))


def run_case(cases, parser, shm_check=False, cleanup=None):
    """Parses the command line (`parser` with its options; the positional `case` is added
    here), stores it as cases["ARGS"], runs cases["test_" + case] and returns the exit
    code: 0 passed, 1 failed (Failure, a timeout), 77 skipped, 2 no such case. With
    shm_check, a case that leaves a /dev/shm object of ours behind fails (objects may take
    a moment to go: waits up to 3 s). cleanup() runs after the case, whatever its end."""
    parser.add_argument("case")
    args = parser.parse_args()
    cases["ARGS"] = args
    fn = cases.get("test_" + args.case)
    if fn is None:
        print("no such case: " + args.case)
        return 2
    before = shm_objects() if shm_check else set()
    try:
        fn()
    except Skip as e:
        print("skipped: %s" % e)
        return SKIP
    except (Failure, subprocess.TimeoutExpired) as e:
        print("FAILED: %s" % e)
        return 1
    finally:
        if cleanup:
            cleanup()
    if shm_check:
        try:
            check_no_shm_left(before, "the case")
        except Failure as e:
            print("FAILED: %s" % e)
            return 1
    print("ok")
    return 0


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports(count=1):
    """The first of `count` consecutive ports free on 127.0.0.1 now. A port bind(0) hands out
    comes from the ephemeral range, where another test's outgoing connection may take it
    before the job binds it; torchrun also needs two (its store on MASTER_PORT, symmem's on
    MASTER_PORT + 1). So these come from below that range, where the kernel never hands a
    port out by itself, each checked free by binding it."""
    high = _ephemeral_low() - count
    for _ in range(1000):
        first = random.randint(10000, high)
        socks = []
        try:
            for p in range(first, first + count):
                s = socket.socket()
                socks.append(s)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", p))
            return first
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no %d consecutive free ports below %d" % (count, high))
