"""torchrun --nproc-per-node 2: init_torch() gets the unique id through torch.distributed."""
import torch

import symmem as sm

sm.init_torch()
me, n = sm.my_pe(), sm.n_pes()
import torch.distributed as dist
assert me == dist.get_rank() and n == dist.get_world_size()
a = sm.zeros(1024, dtype="float32")
t = torch.from_dlpack(a)
t.fill_(me + 1)
sm.TEAM_WORLD.reduce(a, a, op="sum")
assert bool((t == n * (n + 1) / 2).all())
sm.free(a) if False else None
del t
sm.free(a)
print("rank %d: init_torch ok" % me, flush=True)
sm.finalize()
dist.destroy_process_group()
