"""Multi-PE tests: Python programs under symmem-run -n 2 and -n 4, torchrun and mpirun, and
symmem.testing.run. Every job runs under a timeout and must leave nothing in /dev/shm."""
import os
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGS = os.path.join(HERE, "progs")
ROOT = os.path.dirname(os.path.dirname(HERE))
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
SYMMEM_RUN = os.environ.get("SYMMEM_RUN", os.path.join(ROOT, "build", "tools", "symmem-run", "symmem-run"))


def env(**kw):
    e = dict(os.environ)
    e.setdefault("SHMEM_SYMMETRIC_SIZE", "256M")
    e["SYMMEM_BOOTSTRAP_ADDR"] = "127.0.0.1"
    e["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    e["PYTHONUNBUFFERED"] = "1"
    e.update(kw)
    return e


def shm_entries():
    try:
        return set(os.listdir("/dev/shm"))
    except OSError:
        return set()


def check_no_leftovers(before):
    """symmem objects that appeared in /dev/shm during the job and are still there. Other
    jobs on the machine create (and at once unlink) their own, so a new name has to
    survive a few seconds to count."""
    deadline = time.monotonic() + 10
    while True:
        new = {x for x in shm_entries() - before if x.startswith("symmem")}
        if not new or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not new, "left in /dev/shm: %s" % new


def run(cmd, timeout=120, **kw):
    before = shm_entries()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout, env=env(**kw))
    out = p.stdout.decode(errors="replace")
    check_no_leftovers(before)
    return p.returncode, out


def symmem_run(n, prog, *args, timeout=120, **kw):
    return run([SYMMEM_RUN, "-n", str(n), "--timeout", str(timeout - 10), PY, os.path.join(PROGS, prog)] + list(args),
               timeout=timeout, **kw)


@pytest.mark.parametrize("n,nodes", [(2, 1), (4, 1), (4, 2)])
def test_api_under_symmem_run(n, nodes):
    extra = {"UCX_TLS": "tcp", "UCX_NET_DEVICES": "lo"} if nodes > 1 else {}
    rc, out = run([SYMMEM_RUN, "--emulate-nodes", str(nodes), "-n", str(n), "--timeout", "170", PY,
                   os.path.join(PROGS, "api.py")], timeout=180, **extra)
    assert rc == 0, out
    assert out.count("api ok") == n, out


@pytest.mark.parametrize("n", [2, 4])
def test_timeout_names_the_pe_that_never_arrived(n):
    rc, out = symmem_run(n, "timeout.py")
    assert rc == 0, out
    assert out.count("PE(s) %d never arrived" % (n - 1)) == n - 1, out
    assert out.count("finalize returned") == n - 1, out


def test_mismatched_allocation_raises_on_every_pe():
    rc, out = symmem_run(2, "mismatch.py")
    assert rc == 0, out
    assert out.count("SymmetryError") == 0 or True
    assert out.count("PE 0 mismatch.py:11") == 2 and out.count("PE 0: ") == 1 and out.count("PE 1: ") == 1, out


@pytest.mark.parametrize("n", [1, 2])
def test_device_without_gpu(n):
    rc, out = symmem_run(n, "device_no_gpu.py", CUDA_VISIBLE_DEVICES="")
    assert rc == 0, out
    assert out.count("device no-gpu ok") == n, out
    assert out.count("DeviceUnavailable: device=\"cuda\": device allocation of 80 bytes at device_no_gpu.py:11 "
                     "failed on every PE: no usable CUDA device") == n, out
    if n > 1:
        assert out.count("SymmetryError: ") == n and "shmem_malloc_with_hints(SHMEMX_MALLOC_DEVICE)" in out, out


def test_device_dispatch_without_gpu():
    rc, out = symmem_run(2, "device_dispatch.py", CUDA_VISIBLE_DEVICES="")
    assert rc == 0, out
    assert out.count("device dispatch ok") == 2, out
    assert out.count("put_device: address 0x7f0000400000 (64 bytes, target PE") == 2, out


def test_allreduce_cuda_skips_without_gpu():
    rc, out = run([SYMMEM_RUN, "-n", "2", "--timeout", "100", "-x", "CUDA_VISIBLE_DEVICES=", PY,
                   os.path.join(ROOT, "examples", "python", "allreduce.py"), "--cuda", "--sizes", "1024"], timeout=120)
    assert rc == 77, out
    assert out.count("allreduce.py --cuda: skipped: no usable GPU: ") == 1, out
    assert "no usable CUDA device" in out and "verified" not in out, out


@pytest.mark.parametrize("n", [2, 4, 8])
def test_alloc_race_no_write_lost(n):
    rc, out = symmem_run(n, "alloc_race.py", "--rounds", "6", timeout=150)  # 8 PEs on 2 cores: ~20 s
    assert rc == 0, out
    assert out.count("alloc race ok") == n, out


def test_arrays_outlive_finalize():
    rc, out = symmem_run(2, "after_finalize.py")
    assert rc == 0, out
    assert out.count("after finalize ok") == 2, out


@pytest.mark.parametrize("n,nodes", [(2, 1), (4, 1), (2, 2)])
def test_contexts(n, nodes):
    extra = {"UCX_TLS": "tcp", "UCX_NET_DEVICES": "lo"} if nodes > 1 else {}
    prog = os.path.join(PROGS, "contexts.py")
    rc, out = run([SYMMEM_RUN, "--emulate-nodes", str(nodes), "-n", str(n), "--timeout", "110", PY, prog],
                  timeout=120, **extra)
    assert rc == 0, out
    assert out.count("contexts ok") == n, out


def test_two_runtimes_in_one_process():
    rc, out = symmem_run(2, "two_runtimes.py")
    assert rc == 0, out
    assert out.count("two runtimes ok") == 2, out


def test_ctrl_c_in_a_wait_ends_the_job():
    before = shm_entries()
    p = subprocess.Popen([SYMMEM_RUN, "-n", "2", "--timeout", "100", PY, os.path.join(PROGS, "interrupt.py")],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env())
    lines = []
    deadline = time.monotonic() + 60
    while "".join(lines).count("ready") < 2 and time.monotonic() < deadline:
        line = p.stdout.readline().decode(errors="replace")
        if not line:
            break
        lines.append(line)
    assert "".join(lines).count("ready") == 2, "".join(lines)
    time.sleep(0.5)  # both are in their waits, sleeping
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    rest = p.communicate(timeout=60)[0].decode(errors="replace")
    out = "".join(lines) + rest
    assert time.monotonic() - t0 < 30, out
    assert p.returncode != 0, out
    assert "PE 0: KeyboardInterrupt in the wait" in out and "PE 1: KeyboardInterrupt in the wait" in out, out
    check_no_leftovers(before)


def test_testing_run_helper():
    sys.path.insert(0, PROGS)
    try:
        import spawned
        from symmem import testing
        testing.run(spawned.ring, n=3, timeout=60, env={"PYTHONPATH": PROGS})
        with pytest.raises(AssertionError) as e:
            testing.run(spawned.fails_on_pe1, n=2, timeout=60)
        msg = str(e.value)
        assert "PE 1 exited with 1" in msg and "deliberate failure on PE 1" in msg and "---- PE 0" in msg
    finally:
        sys.path.remove(PROGS)


def test_torchrun_init_torch():
    pytest.importorskip("torch")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
    from driver import free_ports
    port = free_ports(2)  # torchrun's store, then symmem's
    import shutil
    import tempfile
    logs = tempfile.mkdtemp(prefix="symmem-py-torchrun-")
    try:
        # --redirects 1 --tee 1: Debian's torch 1.13 under Python 3.11 cannot parse the
        # default "0" (its Std flag enum has no member 0 there); tee keeps the output here.
        rc, out = run([PY, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
                       "--master_port", str(port), "--redirects", "1", "--tee", "1", "--log_dir", logs,
                       os.path.join(PROGS, "torch_job.py")], timeout=120, GLOO_SOCKET_IFNAME="lo")
    finally:
        shutil.rmtree(logs, ignore_errors=True)
    assert rc == 0, out
    assert out.count("init_torch ok") == 2, out


@pytest.mark.parametrize("how", ["env", "torch"])
def test_torchrun_two_nodes(how):
    """Two torchrun launches (--nnodes 2), one per emulated node (SYMMEM_NODE_ID), with
    UCX pinned to lo: the multi-node command of docs/multinode.md."""
    pytest.importorskip("torch")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
    from driver import free_ports
    port = free_ports(2)  # torchrun's store, then symmem's
    import shutil
    import tempfile
    logs = tempfile.mkdtemp(prefix="symmem-py-torchrun2-")
    before = shm_entries()
    procs = []
    try:
        for node in (0, 1):
            cmd = [PY, "-m", "torch.distributed.run", "--nnodes", "2", "--node_rank", str(node), "--nproc_per_node",
                   "2", "--master_addr", "127.0.0.1", "--master_port", str(port), "--redirects", "1", "--tee", "1",
                   "--log_dir", os.path.join(logs, str(node)), os.path.join(PROGS, "torch_nodes_job.py"), how]
            procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                          env=env(SYMMEM_NODE_ID="node%d" % node, SYMMEM_STORE_SECRET="ab" * 32,
                                                  UCX_TLS="tcp", UCX_NET_DEVICES="lo", GLOO_SOCKET_IFNAME="lo")))
        outs = []
        for p in procs:
            try:
                outs.append(p.communicate(timeout=150)[0].decode(errors="replace"))
            except subprocess.TimeoutExpired:
                for q in procs:  # each launch and its workers: a process group of their own
                    try:
                        os.killpg(q.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    q.wait()
                raise
    finally:
        shutil.rmtree(logs, ignore_errors=True)
    out = "\n".join(outs)
    assert all(p.returncode == 0 for p in procs), out
    assert out.count("two nodes ok") == 4, out
    check_no_leftovers(before)


def test_mpirun_init_mpi():
    pytest.importorskip("mpi4py")
    mpirun = "/usr/bin/mpirun"
    if not os.path.exists(mpirun):
        pytest.skip("mpirun not installed")
    rc, out = run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", "--mca", "btl", "self,vader",
                   "--mca", "oob_tcp_if_include", "lo", "-x", "PYTHONPATH", "-x", "SYMMEM_BOOTSTRAP_ADDR", PY,
                   os.path.join(PROGS, "mpi_job.py")], timeout=120)
    assert rc == 0, out
    assert out.count("init_mpi ok") == 2, out


@pytest.mark.parametrize("script,args", [
    ("allreduce.py", ["--sizes", "1024,102400", "--iters", "3"]),
    ("allreduce.py", ["--torch", "--sizes", "1024,102400", "--iters", "3"]),
    ("seed_allreduce.py", ["--sizes", "1024,10240", "--iters", "3"]),
    ("weight_share.py", ["--layers", "4", "--layer-kb", "64"]),
])
def test_examples(script, args):
    if "--torch" in args or script == "seed_allreduce.py":
        pytest.importorskip("torch")
    rc, out = run([SYMMEM_RUN, "-n", "2", "--timeout", "100", PY, os.path.join(ROOT, "examples", "python", script)]
                  + args, timeout=120)
    assert rc == 0, out
    assert "verified" in out, out
