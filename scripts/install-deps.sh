#!/usr/bin/env bash
# Installs the Debian packages symmem needs to build, test and benchmark.
# Safe to run repeatedly; does nothing when everything is already present.
set -euo pipefail
pkgs=(cmake g++ clang ccache make pkg-config libgtest-dev libgmock-dev libbenchmark-dev libssl-dev
      libucx-dev ucx-utils openmpi-bin libopenmpi-dev pybind11-dev python3-dev python3-numpy
      python3-pytest python3-matplotlib python3-torch python3-mpi4py procps libopenblas-dev iproute2)
pkgs+=(libclang-rt-14-dev)  # scripts/sanitize.sh: libFuzzer
pkgs+=(slurm-wlm)  # live.slurm: a one-node Slurm of its own (auth/none; munge comes along unused)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  # No package may start its daemon (munged, slurmctld, slurmd): the tests start their own.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod +x /usr/sbin/policy-rc.d
    trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
