"""Ctrl-C in a wait: PE 0 waits for a value nobody writes, the others in a barrier PE 0
never reaches. The driver sends SIGINT to symmem-run, which passes it to every PE."""
import numpy as np

import symmem as sm

sm.init()
flag = sm.zeros(1, np.int64)
sm.barrier_all()
print("PE %d ready" % sm.my_pe(), flush=True)
try:
    if sm.my_pe() == 0:
        sm.wait_until(flag, "==", 1, index=0)
    else:
        sm.barrier_all()
except KeyboardInterrupt:
    print("PE %d: KeyboardInterrupt in the wait" % sm.my_pe(), flush=True)
    raise
