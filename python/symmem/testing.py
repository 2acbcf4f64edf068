"""Spawning a symmem job from inside a test: symmem.testing.run(fn, n=2).

Each rank is a fresh /usr/bin/python3 process that joins the job with a unique id made here
and calls fn() (a module-level function, found again by its module and name); run()
returns when every rank exits 0, and otherwise raises AssertionError naming the first rank
that failed with every rank's output. A rank still running at the timeout fails the job.
"""
import os
import subprocess
import sys
import time


def _child():
    import importlib
    import symmem
    mod, name = os.environ["SYMMEM_TEST_FN"].split(":")
    symmem.init(uid=symmem.UniqueId.from_string(os.environ["SYMMEM_TEST_UID"]),
                pe=int(os.environ["SYMMEM_TEST_PE"]), n_pes=int(os.environ["SYMMEM_TEST_NPES"]))
    fn = getattr(importlib.import_module(mod), name)
    fn()
    symmem.finalize()


def run(fn, n=2, timeout=60, env=None):
    """Run fn on n PEs (separate processes); raise AssertionError if any rank fails."""
    import symmem
    os.environ.setdefault("SYMMEM_BOOTSTRAP_ADDR", "127.0.0.1")
    uid = symmem.get_unique_id()
    base = dict(os.environ)
    base.update(env or {})
    base["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    base["SYMMEM_TEST_FN"] = "%s:%s" % (fn.__module__, fn.__name__)
    base["SYMMEM_TEST_UID"] = str(uid)
    base["SYMMEM_TEST_NPES"] = str(n)
    import tempfile
    procs, files = [], []
    for pe in range(n):
        e = dict(base, SYMMEM_TEST_PE=str(pe))
        f = tempfile.TemporaryFile()
        files.append(f)
        procs.append(subprocess.Popen([sys.executable, "-c", "import symmem.testing as t; t._child()"], env=e,
                                      stdout=f, stderr=subprocess.STDOUT))
    deadline = time.monotonic() + timeout
    timed_out = False
    failed_at = first_failed = None
    while [p.poll() for p in procs].count(None):
        now = time.monotonic()
        if failed_at is None:
            bad = [i for i, p in enumerate(procs) if p.returncode not in (None, 0)]
            if bad:
                failed_at, first_failed = now, bad[0]  # the others get a moment to report, then stop
        if now >= deadline or (failed_at is not None and now - failed_at > 2.0):
            timed_out = failed_at is None
            for p in procs:
                if p.poll() is None:
                    p.kill()
            for p in procs:
                p.wait()
            break
        time.sleep(0.02)
    outs = []
    for f in files:
        f.seek(0)
        outs.append(f.read())
        f.close()
    codes = [p.returncode for p in procs]
    if timed_out or any(codes):
        first = first_failed if first_failed is not None else next((i for i, c in enumerate(codes) if c), None)
        # A PE that the liveness channel ended names another as the cause: report that one.
        ended = [i for i in range(n) if b"ending this PE: the job is failing:" in outs[i]]
        if first in ended:
            first = next((i for i, c in enumerate(codes) if c and i not in ended), first)
        lines = ["symmem job of %d PEs failed: %s" % (n, "timed out after %s s" % timeout if timed_out
                                                     else "PE %d exited with %d" % (first, codes[first]))]
        for pe in range(n):
            lines.append("---- PE %d (exit %s) ----" % (pe, codes[pe]))
            lines.append(outs[pe].decode(errors="replace").rstrip())
        raise AssertionError("\n".join(lines))
    return [o.decode(errors="replace") for o in outs]
