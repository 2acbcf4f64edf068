#!/usr/bin/env bash
# cmake --install puts the package where the pinned interpreter looks under the prefix
# (staged with DESTDIR), and the installed module finds libsymmem through its RUNPATH.
set -euo pipefail
build=$1 py=$2
stage=$(mktemp -d /tmp/symmem-py-install.XXXXXX)
trap 'rm -rf "$stage"' EXIT
DESTDIR=$stage cmake --install "$build" --prefix /usr/local >/dev/null
site=$("$py" -c 'import sys; print(next(p for p in sys.path if p.startswith("/usr/local/lib/python3") and p.endswith("dist-packages")))')
test -f "$stage$site/symmem/py.typed" && test -f "$stage$site/symmem/__init__.pyi"
env -u PYTHONPATH PYTHONPATH="$stage$site" "$py" -c '
import symmem, numpy as np
assert symmem.__file__.startswith("'"$stage"'"), symmem.__file__
symmem.init(heap_size="32M")
a = symmem.zeros(4); symmem.put(a, np.ones(4), 0); assert a.sum() == 4
symmem.free(a); symmem.finalize(); print("installed module ok")'
