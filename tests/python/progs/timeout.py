"""A barrier with timeout= where the last PE never arrives: every other PE gets
symmem.Timeout (a TimeoutError) naming that PE."""
import os
import time

import symmem as sm

sm.init()
me, n = sm.my_pe(), sm.n_pes()
sm.barrier_all()
if me == n - 1:
    time.sleep(3)
    os._exit(0)  # never arrives
try:
    sm.barrier_all(timeout=1.0)
    raise SystemExit("PE %d: the barrier returned without PE %d" % (me, n - 1))
except TimeoutError as e:
    assert isinstance(e, sm.Timeout)
    print("PE %d: %s" % (me, e), flush=True)
    assert ("PE(s) %d never arrived" % (n - 1)) in str(e), str(e)
sm.finalize()  # returns at once: the job cannot continue
print("PE %d: finalize returned" % me, flush=True)
