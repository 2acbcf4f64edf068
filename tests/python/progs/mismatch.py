"""A collective allocation that differs across PEs raises SymmetryError on every PE, with
both call sites, instead of hanging."""
import numpy as np

import symmem as sm

sm.init(timeout=60)
me = sm.my_pe()
try:
    if me == 0:
        a = sm.zeros(100)
    else:
        a = sm.zeros(200)
    raise SystemExit("PE %d: no error" % me)
except sm.SymmetryError as e:
    msg = str(e)
    print("PE %d: %s" % (me, msg), flush=True)
    assert isinstance(e, ValueError)
    assert "PE 0 mismatch.py:11" in msg and "PE 1 mismatch.py:13" in msg, msg
sm.finalize()
