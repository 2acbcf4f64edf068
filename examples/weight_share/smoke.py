#!/usr/bin/python3
"""Smoke test of examples/weight_share at the tiny preset (CTest example.weight_share.npN).

Every mode runs at N workers; the outputs must be equal across modes (per request, and the
update mode's requests equal to the private run on the version they were served from), the
memory figures must be there and sane, the update mode must switch versions with no torn
read, and bad input must end with one clear line and a non-zero exit.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run(cmd, env=None, timeout=120):
    e = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    e.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--run", required=True, help="symmem-run")
    ap.add_argument("--bin", required=True, help="weight_share")
    a = ap.parse_args()
    n = a.np
    tmp = tempfile.mkdtemp(prefix="wshare-smoke-")
    try:
        gen = [sys.executable, os.path.join(HERE, "gen_weights.py"), "--preset", "tiny"]
        A, A32, Bw = (os.path.join(tmp, f) for f in ("a.safetensors", "a32.safetensors", "b.safetensors"))
        subprocess.run(gen + ["--out", A, "--f32", A32], check=True, capture_output=True)
        subprocess.run(gen + ["--seed", "2", "--out", Bw], check=True, capture_output=True)
        launch = [a.run, "-n", str(n), "--timeout", "90", a.bin]
        serve = ["--requests", "3", "--gen", "4", "--batch", "4", "--piece-kib", "5"]  # 5 KiB: matrices in row blocks

        def mode(m, extra, weights=A, launcher=True):
            out = os.path.join(tmp, f"{m}-{os.path.basename(weights)}.json")
            wargs = ["--weights-f32", A32] if m == "mmap" else ["--weights", weights]
            cmd = (launch if launcher else [a.bin, "--workers", str(n)]) + ["--mode", m] + wargs + serve + extra + ["--json", out]
            r = run(cmd)
            check(r.returncode == 0, f"{m}: exit {r.returncode}: {r.stderr.strip()[-400:]}")
            return json.load(open(out)) if r.returncode == 0 else None

        rep = {m: mode(m, []) for m in ("private", "mmap", "symm", "symm-staged", "symm-prefetch")}
        rep["fork"] = mode("fork", [], launcher=False)
        rep["private-b"] = mode("private", [], weights=Bw)
        rep["update"] = mode("update", ["--update-weights", Bw, "--updates", "3"]) if n >= 2 else None
        model = rep["private"]["model_f32_bytes"] if rep["private"] else 0

        def per_request(r):
            return {(w["pe"], ph, i): req[1] for w in r["per_worker"] if w["serves"]
                    for ph, p in enumerate(w["phases"]) for i, req in enumerate(p["requests"])}

        base = per_request(rep["private"]) if rep["private"] else {}
        check(len(base) == n * 4, f"private served {len(base)} requests, expected {n * 4}")
        for m in ("mmap", "fork", "symm", "symm-staged", "symm-prefetch"):
            r = rep[m]
            if not r:
                continue
            check(r["checksum"] == rep["private"]["checksum"], f"{m}: checksum {r['checksum']} != private {rep['private']['checksum']}")
            check(per_request(r) == base, f"{m}: per-request outputs differ from private")
        if rep["private-b"]:
            check(rep["private-b"]["checksum"] != rep["private"]["checksum"], "weights A and B give the same output")

        # Memory figures: present, positive, ordered, and what each mode should hold.
        for m, r in rep.items():
            if not r:
                continue
            for w in r["per_worker"]:
                e, s = w["mem_end"], w["mem_start"]
                check(e["rss_kb"] > 0 and e["pss_kb"] > 0 and e["uss_kb"] > 0, f"{m} pe {w['pe']}: empty smaps {e}")
                check(e["rss_kb"] >= e["pss_kb"] >= e["uss_kb"] * 0.99, f"{m} pe {w['pe']}: rss >= pss >= uss fails {e}")
                check(e["pss_kb"] >= e["pss_anon_kb"] + e["pss_file_kb"] + e["pss_shmem_kb"] - 2, f"{m}: pss parts exceed pss {e}")
                check(w["load_cpu_s"] >= 0 and w["load_wall_s"] >= 0, f"{m}: negative load time")
                if m != "fork":  # the load's phases add up to its CPU; symm modes map the peers' parts
                    ph = w["load_phases"]
                    cpu = sum(p["cpu_s"] for p in ph.values())
                    check(all(p["cpu_s"] >= 0 and p["wall_s"] >= 0 for p in ph.values()), f"{m}: negative phase {ph}")
                    check(abs(cpu - w["load_cpu_s"]) <= 1e-6 + 1e-6 * cpu, f"{m}: phases {cpu} != load CPU {w['load_cpu_s']}")
                    if m.startswith("symm") or m == "update":
                        check(ph["alloc"]["wall_s"] > 0 and ph["map"]["minflt"] > 0, f"{m}: no alloc or map phase {ph}")
            nd = r["node"]
            check(nd["used_after"] > 0, f"{m}: no node figure")
            if m.startswith("private"):
                # every worker holds a private copy: at least N copies of the model in anonymous
                # PSS (total PSS also moves with the libraries' share as other processes come and go)
                danon = sum(w["mem_end"]["pss_anon_kb"] - w["mem_start"]["pss_anon_kb"] for w in r["per_worker"]) * 1024
                check(danon >= 0.9 * n * model, f"{m}: sum dPss_Anon {danon} < {n} copies of {model}")
            if m in ("symm", "symm-staged", "symm-prefetch", "update"):
                shm = sum(w["mem_end"]["pss_shmem_kb"] for w in r["per_worker"]) * 1024
                copies = 2 if m == "update" else 1
                check(shm >= 0.9 * copies * model, f"{m}: sum Pss_Shmem {shm} < {copies} x model {model}")
                check(shm < (copies + 1) * model + 4 * 2**20 * n, f"{m}: sum Pss_Shmem {shm} is more than {copies} copies")
            if m == "mmap":
                # the mapping's own Pss: Pss_File as a whole moves with the libraries' share
                f = sum(w["weights_file_pss_kb"] for w in r["per_worker"]) * 1024
                check(f >= 0.9 * model, f"mmap: sum of the weights mapping's Pss {f} < model {model}")

        # symm-staged copies every unit on every forward; prefetch issues the same bytes.
        for m in ("symm-staged", "symm-prefetch"):
            if rep[m]:
                check(all(w["fetch_bytes"] > model for w in rep[m]["per_worker"]), f"{m}: fetched less than one model")

        u = rep["update"]
        if u:
            base_b = per_request(rep["private-b"]) if rep["private-b"] else {}
            pub = [w for w in u["per_worker"] if not w["serves"]]
            check(len(pub) == 1 and pub[0]["publishes"] == 3, "update: PE 0 did not publish 3 versions")
            for w in u["per_worker"]:
                if not w["serves"]:
                    continue
                check(w["torn"] == 0, f"update pe {w['pe']}: {w['torn']} torn reads")
                check(w["switches"] == 3, f"update pe {w['pe']}: {w['switches']} switches, expected 3")
                seen = set()
                for ph, p in enumerate(w["phases"]):
                    for i, (lat, h, ver) in enumerate(p["requests"]):
                        seen.add(ver)
                        ref = (base if ver % 2 == 0 else base_b).get((w["pe"], ph, i))
                        if ref is not None:
                            check(h == ref, f"update pe {w['pe']} req {ph}/{i} on v{ver}: {h} != {ref}")
                # the requests listed are the first 64 of a phase; served_mask counts every one
                seen |= {v for v in range(64) if w["served_mask"] >> v & 1}
                check(seen == {0, 1, 2, 3} or seen == {1, 2, 3}, f"update pe {w['pe']}: versions served {sorted(seen)}")

        # Bad input: one clear line from weight_share, non-zero exit, nothing left running.
        trunc = os.path.join(tmp, "trunc.safetensors")
        with open(A, "rb") as f, open(trunc, "wb") as g:
            g.write(f.read(os.path.getsize(A) // 2))
        bad_heads = os.path.join(tmp, "heads3.safetensors")
        subprocess.run(gen + ["--heads", "3", "--out", bad_heads], check=True, capture_output=True)
        big = os.path.join(tmp, "big.safetensors")  # 80 tiny layers: 11.8 MiB F32, > 4 x a 2 MiB heap
        subprocess.run(gen + ["--layers", "80", "--out", big], check=True, capture_output=True)
        cases = [
            ("missing file", launch + ["--mode", "symm", "--weights", os.path.join(tmp, "nothere")], {}, "cannot open weights file"),
            ("truncated file", launch + ["--mode", "private", "--weights", trunc], {}, "truncated"),
            ("truncated (fork)", [a.bin, "--mode", "fork", "--workers", str(n), "--weights", trunc], {}, "truncated"),
            ("shape not dividing", launch + ["--mode", "symm", "--weights", bad_heads], {}, "not divisible by n_heads"),
            ("heap too small", launch + ["--mode", "symm", "--weights", big], {"SHMEM_SYMMETRIC_SIZE": "2M"},
             "symmetric heap"),
        ]
        for what, cmd, env, needle in cases:
            r = run(cmd, env)
            ours = [l for l in r.stderr.splitlines() if l.startswith("weight_share:")]
            check(r.returncode != 0, f"{what}: exit code 0")
            check(len(ours) == 1 and needle in ours[0], f"{what}: expected one line with '{needle}', got {ours} / {r.stderr[-300:]}")
            check("Traceback" not in r.stderr and "terminate called" not in r.stderr and "Segmentation" not in r.stderr,
                  f"{what}: crashed: {r.stderr[-300:]}")
            print(f"{what}: exit {r.returncode}: {ours[0] if ours else '?'}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"weight_share smoke np{n}: 8 runs of the modes, 5 bad-input cases")
    if failures:
        print(f"{len(failures)} failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
