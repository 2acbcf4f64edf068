"""torchrun --nnodes 2 (test_driver.py: two launches on this machine, one per emulated node,
SYMMEM_NODE_ID telling them apart): sm.init() from torchrun's environment, or init_torch()
with "torch" as the argument; a reduction, puts to the next rank (on the other node for the
last rank of each node) and TEAM_SHARED as the ranks of this launch."""
import os
import sys

import numpy as np

import symmem as sm

if sys.argv[1:] == ["torch"]:
    sm.init_torch()
else:
    sm.init()
me, n = sm.my_pe(), sm.n_pes()
a = sm.full(4096, me + 1, np.float32)
sm.TEAM_WORLD.reduce(a, a, op="sum")
assert (a == n * (n + 1) / 2).all(), a[:4]
right = (me + 1) % n
b = sm.zeros(8, np.int64)
sm.barrier_all()
sm.put(b, np.arange(8) + 10 * me, right)
sm.barrier_all()
assert (b == np.arange(8) + 10 * ((me - 1) % n)).all(), b
local = int(os.environ["LOCAL_WORLD_SIZE"])
assert sm.TEAM_SHARED.n_pes == local, (sm.TEAM_SHARED.n_pes, local)
print("rank %d of %d: two nodes ok" % (me, n), flush=True)
sm.free(a)
sm.free(b)
sm.finalize()
