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
    procs = []
    for pe in range(n):
        e = dict(base, SYMMEM_TEST_PE=str(pe))
        procs.append(subprocess.Popen([sys.executable, "-c", "import symmem.testing as t; t._child()"], env=e,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    deadline = time.monotonic() + timeout
    outs = [None] * n
    timed_out = False
    for pe, p in enumerate(procs):
        try:
            outs[pe] = p.communicate(timeout=max(deadline - time.monotonic(), 0.1))[0]
        except subprocess.TimeoutExpired:
            timed_out = True
            break
    if timed_out:
        for p in procs:
            if p.poll() is None:
                p.kill()
        for pe, p in enumerate(procs):
            if outs[pe] is None:
                outs[pe] = p.communicate()[0]
    codes = [p.returncode for p in procs]
    if timed_out or any(codes):
        first = next((i for i, c in enumerate(codes) if c), None)
        lines = ["symmem job of %d PEs failed: %s" % (n, "timed out after %s s" % timeout if timed_out
                                                     else "PE %d exited with %d" % (first, codes[first]))]
        for pe in range(n):
            lines.append("---- PE %d (exit %s) ----" % (pe, codes[pe]))
            lines.append(outs[pe].decode(errors="replace").rstrip())
        raise AssertionError("\n".join(lines))
    return [o.decode(errors="replace") for o in outs]
