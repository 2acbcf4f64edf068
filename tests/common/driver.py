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
        deadline = time.monotonic() + 3
        while True:
            left = shm_objects() - before - held_shm_objects()
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if left:
            print("FAILED: left in /dev/shm: %s" % sorted(left))
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
