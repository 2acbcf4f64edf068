#!/usr/bin/env python3
"""Init modes, launchers, bootstrap security and consistency checks, with real processes.

CTest runs one case per process:
    init_tests.py --bin-dir DIR --symmem-run PATH [--mpirun PATH] CASE
Every function named test_* becomes one CTest case (tests/init/CMakeLists.txt). Each case
starts its PEs itself (as a launcher would: environment variables, or files), with a
timeout, and fails if anything new named symmem-* stays in /dev/shm that no live process
holds (another case running beside it may hold its own).
Standard library only.
"""
import argparse
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ARGS = None
TIMEOUT = 60


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from driver import Skip, check, free_ports, run_case  # noqa: E402


def exe(name):
    return os.path.join(ARGS.bin_dir, name)


def base_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SYMMEM_", "OMPI_", "PMI", "SLURM_", "PMIX_"))
           and k not in ("RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                         "LOCAL_RANK", "TORCHELASTIC_RUN_ID")}
    env["SYMMEM_LOG_LEVEL"] = "warn"
    env.update({k: str(v) for k, v in extra.items()})
    return env


class Pe:
    def __init__(self, args, env):
        self.args = args
        self.proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)
        self.out = self.err = ""
        self.rc = None

    def wait(self, deadline):
        try:
            self.out, self.err = self.proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.out, self.err = self.proc.communicate()
            self.err += "\n[killed by the test after its timeout]"
        self.rc = self.proc.returncode
        return self


def run_pes(arg_env_list, timeout=TIMEOUT):
    pes = [Pe(a, e) for a, e in arg_env_list]
    deadline = time.monotonic() + timeout
    for p in pes:
        p.wait(deadline)
    return pes


def show(pes):
    return "\n".join("--- PE %d rc=%s\nstdout: %s\nstderr: %s" % (i, p.rc, p.out.strip(), p.err.strip())
                     for i, p in enumerate(pes))


def expect_ok(pes, n=None):
    for i, p in enumerate(pes):
        check(p.rc == 0, "PE %d failed:\n%s" % (i, show(pes)))
    text = "".join(p.out for p in pes)
    if n is not None:
        for r in range(n):
            check(("PE %d of %d ok" % (r, n)) in text, "PE %d did not report ok:\n%s" % (r, show(pes)))


# ---------------------------------------------------------------------------- unique id

def uid_job(n, tmp, env_for=lambda r: {}, timeout=TIMEOUT):
    path = os.path.join(tmp, "uid")
    return run_pes([([exe("init_pe"), "uid", path, str(r), str(n)], base_env(**env_for(r))) for r in range(n)],
                   timeout)


def test_uid_file_example():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "job.id")
        pes = run_pes([([exe("uid_file"), path, str(r), "4"], base_env()) for r in range(4)])
        expect_ok(pes)
        for r in range(4):
            check("PE %d of 4: received" % r in pes[r].out and "ok" in pes[r].out, show(pes))
        check(not os.path.exists(path), "PE 0 did not remove the id file")


def test_uid_three_pes():
    with tempfile.TemporaryDirectory() as tmp:
        expect_ok(uid_job(3, tmp), 3)


class Relay:
    """A TCP proxy in front of the store that keeps every byte in both directions."""

    def __init__(self, target):
        self.target = target
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.data = bytearray()
        self.lock = threading.Lock()
        threading.Thread(target=self.accept_loop, daemon=True).start()

    def accept_loop(self):
        while True:
            try:
                a, _ = self.sock.accept()
            except OSError:
                return
            b = socket.create_connection(self.target)
            for src, dst in ((a, b), (b, a)):
                threading.Thread(target=self.pump, args=(src, dst), daemon=True).start()

    def pump(self, src, dst):
        while True:
            try:
                chunk = src.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                return
            with self.lock:
                self.data += chunk
            try:
                dst.sendall(chunk)
            except OSError:
                return


def relay_job(tls_off):
    """A 3-PE unique-id job whose PEs 1 and 2 reach the store through a relay."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "uid")
        extra = {"INIT_PE_TLS": "off"} if tls_off else {}
        pe0 = Pe([exe("init_pe"), "uid", path, "0", "3"], base_env(**extra))
        deadline = time.monotonic() + 30
        while not os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.02)
        check(os.path.exists(path), "PE 0 wrote no id")
        raw = bytes.fromhex(open(path).read().strip().split(":", 1)[1])
        inner = raw[12:]
        port = int.from_bytes(inner[8:10], "big")
        host = socket.inet_ntop(socket.AF_INET6 if inner[6] == 6 else socket.AF_INET,
                                inner[10:26] if inner[6] == 6 else inner[10:14])
        relay = Relay((host, port))
        via = "tcp://127.0.0.1:%d" % relay.port
        others = [Pe([exe("init_pe"), "uid", path, str(r), "3"], base_env(INIT_PE_VIA=via, **extra)) for r in (1, 2)]
        pes = [pe0] + others
        end = time.monotonic() + TIMEOUT
        for p in pes:
            p.wait(end)
        expect_ok(pes, 3)
        base = [l.split("=", 1)[1] for l in pe0.out.splitlines() if l.startswith("heap-base=")]
        check(base, "PE 0 printed no heap base:\n" + show(pes))
        with relay.lock:
            return bytes(relay.data), base[0], show(pes)


def test_uid_relay_sees_nothing_in_clear():
    data, base, log = relay_job(tls_off=False)
    check(len(data) > 2000, "the relay recorded only %d bytes: the test would prove nothing" % len(data))
    for secret in (base.encode(), b"npes=", b"version=", b"heap/i0/base", b"init/i0/info", b"pid="):
        check(secret not in data, "the relay saw %r in clear:\n%s" % (secret, log))
    # The control: with TLS off the same bootstrap is readable by the relay.
    clear, base2, _ = relay_job(tls_off=True)
    check(base2.encode() in clear and b"npes=" in clear,
          "with TLS off the relay should see the exchanged values; it did not (the relay records nothing?)")


def tampered_uid_job(offset_bytes, what):
    """PE 1 joins with an id whose bytes at offset (in the 136-byte id) are changed."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "uid")
        env0 = base_env(SYMMEM_INIT_TIMEOUT=4)
        pe0 = Pe([exe("init_pe"), "uid", path, "0", "2"], env0)
        deadline = time.monotonic() + 30
        while not os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.02)
        text = open(path).read().strip()
        prefix, hexpart = text.split(":", 1)
        raw = bytearray(bytes.fromhex(hexpart))
        raw[offset_bytes] ^= 0x5a
        bad = os.path.join(tmp, "bad")
        with open(bad, "w") as f:
            f.write(prefix + ":" + raw.hex() + "\n")
        pe1 = Pe([exe("init_pe"), "uid", bad, "1", "2"], base_env(SYMMEM_INIT_TIMEOUT=4))
        end = time.monotonic() + TIMEOUT
        pe0.wait(end)
        pe1.wait(end)
        return pe0, pe1


def test_uid_wrong_secret_refused_both_sides():
    pe0, pe1 = tampered_uid_job(12 + 34 + 5, "secret")
    log = show([pe0, pe1])
    check(pe1.rc != 0 and "wrong secret" in pe1.err, "PE 1 should be refused for its secret:\n" + log)
    check("refused" in pe0.err and "wrong secret" in pe0.err, "the store (PE 0) should say why:\n" + log)
    check(pe0.rc != 0 and "PE 1 of 2 did not arrive" in pe0.err, "PE 0 should name PE 1:\n" + log)


def test_uid_wrong_magic_refused_both_sides():
    pe0, pe1 = tampered_uid_job(12 + 26 + 3, "magic")
    log = show([pe0, pe1])
    check(pe1.rc != 0 and "wrong job magic" in pe1.err, "PE 1 should be refused for its magic:\n" + log)
    check("wrong job magic" in pe0.err, "the store (PE 0) should say why:\n" + log)


def test_uid_damaged_id_is_named():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "uid")
        with open(path, "w") as f:
            f.write("symmem-uid1:" + "00" * 136 + "\n")
        p = run_pes([([exe("init_pe"), "uid", path, "1", "2"], base_env())])[0]
        check(p.rc != 0 and "not a valid symmem unique id" in p.err, show([p]))


# ---------------------------------------------------------------------------- launchers

def test_mpirun_default_env():
    if not ARGS.mpirun:
        raise Skip("mpirun not found")
    p = run_pes([([ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "4", exe("init_pe"), "default"],
                  base_env())])[0]
    check(p.rc == 0, show([p]))
    for r in range(4):
        check("PE %d of 4 ok" % r in p.out, show([p]))


def test_mpirun_init_with_mpi():
    if not ARGS.mpirun:
        raise Skip("mpirun not found")
    p = run_pes([([ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "3", exe("init_pe"), "mpi-flag"],
                  base_env())])[0]
    check(p.rc == 0, show([p]))
    for r in range(3):
        check("PE %d of 3 ok" % r in p.out, show([p]))


def test_mpirun_uid_mpi_example():
    if not ARGS.mpirun or not os.path.exists(exe("uid_mpi")):
        raise Skip("MPI not found")
    p = run_pes([([ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "4", exe("uid_mpi")], base_env())])[0]
    check(p.rc == 0 and "4 PEs: ring over symmetric memory ok" in p.out, show([p]))


def torchrun_env(rank, n, port, **extra):
    env = dict(RANK=rank, WORLD_SIZE=n, LOCAL_RANK=rank, LOCAL_WORLD_SIZE=n, MASTER_ADDR="127.0.0.1",
               MASTER_PORT=port, TORCHELASTIC_RUN_ID="t%d" % port)
    env.update(extra)
    return base_env(**env)


def test_torchrun_env_with_secret():
    n, port, secret = 3, free_ports(1) - 1, secrets.token_hex(32)
    pes = run_pes([([exe("init_pe"), "default"], torchrun_env(r, n, port, SYMMEM_STORE_SECRET=secret))
                   for r in range(n)])
    expect_ok(pes, n)


def test_torchrun_env_without_secret_requires_explicit_opt_out():
    n, port = 2, free_ports(1) - 1
    pes = run_pes([([exe("init_pe"), "default"], torchrun_env(r, n, port)) for r in range(n)])
    for p in pes:
        check(p.rc != 0 and "no secret can be shared under torchrun" in p.err and "SYMMEM_STORE_TLS=off" in p.err,
              show(pes))
    pes = run_pes([([exe("init_pe"), "default"], torchrun_env(r, n, port, SYMMEM_STORE_TLS="off")) for r in range(n)])
    expect_ok(pes, n)
    check(any("without TLS" in p.err for p in pes), "switching TLS off must be warned about:\n" + show(pes))


def test_slurm_env_single_node():
    n, job = 3, str(secrets.randbelow(10 ** 9))
    pes = run_pes([([exe("init_pe"), "default"],
                    base_env(SLURM_PROCID=r, SLURM_NTASKS=n, SLURM_JOB_ID=job, SLURM_STEP_ID=0,
                             SLURM_STEP_NUM_NODES=1)) for r in range(n)])
    expect_ok(pes, n)


def test_pmi_env_with_store_and_secret():
    n, port, secret = 3, free_ports(1), secrets.token_hex(32)
    pes = run_pes([([exe("init_pe"), "default"],
                    base_env(PMI_RANK=r, PMI_SIZE=n, SYMMEM_STORE="tcp://127.0.0.1:%d" % port,
                             SYMMEM_STORE_SECRET=secret)) for r in range(n)])
    expect_ok(pes, n)


def test_pmi_env_without_store_is_explained():
    pes = run_pes([([exe("init_pe"), "default"], base_env(PMI_RANK=r, PMI_SIZE=2)) for r in range(2)])
    for p in pes:
        check(p.rc != 0 and "SYMMEM_STORE=tcp://" in p.err, show(pes))


def test_every_pe_believes_it_is_pe0_of_1():
    pes = run_pes([([exe("init_pe"), "default"],
                    base_env(RANK=0, WORLD_SIZE=1, LOCAL_WORLD_SIZE=3, MASTER_ADDR="127.0.0.1", MASTER_PORT=29400))
                   for _ in range(3)])
    for p in pes:
        check(p.rc != 0 and "every process believes it is PE 0 of 1" in p.err, show(pes))


def test_rank_out_of_range():
    p = run_pes([([exe("init_pe"), "default"], base_env(RANK=3, WORLD_SIZE=3))])[0]
    check(p.rc != 0 and "RANK=3 is out of range for WORLD_SIZE=3" in p.err, show([p]))


def test_launchers_disagree():
    p = run_pes([([exe("init_pe"), "default"],
                  base_env(OMPI_COMM_WORLD_RANK=2, OMPI_COMM_WORLD_SIZE=4, RANK=0, WORLD_SIZE=1))])[0]
    check(p.rc != 0 and "Open MPI says PE 2 of 4" in p.err and "torchrun says PE 0 of 1" in p.err, show([p]))


def test_two_processes_claim_the_same_pe():
    # Two processes are given PE 1; PE 2 comes late so that the job is still in init when
    # both have joined the store.
    n, port, secret = 3, free_ports(1), secrets.token_hex(32)
    env = lambda r: base_env(PMI_RANK=r, PMI_SIZE=n, SYMMEM_STORE="tcp://127.0.0.1:%d" % port,
                             SYMMEM_STORE_SECRET=secret, SYMMEM_INIT_TIMEOUT=6)
    pes = [Pe([exe("init_pe"), "default"], env(r)) for r in (0, 1, 1)]
    time.sleep(1.5)
    pes.append(Pe([exe("init_pe"), "default"], env(2)))
    end = time.monotonic() + TIMEOUT
    for p in pes:
        p.wait(end)
    check(any("two processes believe they are PE 1" in p.err for p in pes), show(pes))


# ---------------------------------------------------------------------------- consistency

def test_pe_count_differs():
    port, secret = free_ports(1) - 1, secrets.token_hex(32)
    pes = run_pes([([exe("init_pe"), "default"], torchrun_env(0, 2, port, SYMMEM_STORE_SECRET=secret,
                                                                 SYMMEM_INIT_TIMEOUT=4, LOCAL_WORLD_SIZE=1)),
                   ([exe("init_pe"), "default"], torchrun_env(1, 3, port, SYMMEM_STORE_SECRET=secret,
                                                                 SYMMEM_INIT_TIMEOUT=4, LOCAL_WORLD_SIZE=1))])
    check(pes[1].rc != 0 and "believes the job has 3 PEs, PE 0" in pes[1].err and "believes 2" in pes[1].err,
          show(pes))
    check(pes[0].rc != 0, show(pes))


def symmem_run_sh(n, script, timeout=30, **env):
    return run_pes([([ARGS.symmem_run, "-n", str(n), "--timeout", str(timeout), "sh", "-c", script],
                     base_env(**env))], timeout + 15)[0]


def test_heap_size_differs():
    pe = exe("init_pe")
    p = symmem_run_sh(3, 'if [ "$SYMMEM_RANK" = 1 ]; then export SHMEM_SYMMETRIC_SIZE=128M; '
                         'else export SHMEM_SYMMETRIC_SIZE=64M; fi; exec %s default' % pe)
    check(p.rc != 0 and "symmetric heap size differs" in p.err and "PEs 0, 2 have 64M" in p.err
          and "PE 1 has 128M" in p.err, show([p]))


def test_library_version_differs():
    pe = exe("init_pe")
    p = symmem_run_sh(2, 'if [ "$SYMMEM_RANK" = 1 ]; then export SYMMEM_TEST_LIBRARY_VERSION=9.9.9; fi; '
                         'exec %s default' % pe, SHMEM_SYMMETRIC_SIZE="64M")
    check(p.rc != 0 and "library version differs" in p.err and "PE 1 has 9.9.9" in p.err, show([p]))


def test_pe_never_arrives_is_named():
    port, secret = free_ports(1) - 1, secrets.token_hex(32)
    pes = run_pes([([exe("init_pe"), "default"], torchrun_env(r, 3, port, SYMMEM_STORE_SECRET=secret,
                                                                 SYMMEM_INIT_TIMEOUT=3)) for r in (0, 1)])
    for p in pes:
        check(p.rc != 0 and "PE 2 of 3 did not arrive" in p.err, show(pes))


def test_pe_dying_during_init_ends_the_others():
    # PE 2 joins the store and waits for PE 1, which is not started yet; PE 2 is killed
    # there. PE 0 and PE 1 (started after) must end, naming PE 2, within the init timeout.
    port, secret = free_ports(1) - 1, secrets.token_hex(32)
    env = lambda r: torchrun_env(r, 3, port, SYMMEM_STORE_SECRET=secret, SYMMEM_INIT_TIMEOUT=4)
    pe0 = Pe([exe("init_pe"), "default"], env(0))
    pe2 = Pe([exe("init_pe"), "default"], env(2))
    time.sleep(1.0)
    os.killpg(pe2.proc.pid, signal.SIGKILL)
    pe1 = Pe([exe("init_pe"), "default"], env(1))
    end = time.monotonic() + TIMEOUT
    for p in (pe0, pe1, pe2):
        p.wait(end)
    pes = [pe0, pe1, pe2]
    check(pe2.rc == -signal.SIGKILL, "PE 2 finished before it was killed:\n" + show(pes))
    for p in (pe0, pe1):
        check(p.rc != 0 and "PE 2 of 3" in p.err, show(pes))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--symmem-run", required=True)
    ap.add_argument("--mpirun", default="")
    sys.exit(run_case(globals(), ap, shm_check=True))
