"""mpirun -np 2: init_mpi() gets the unique id through mpi4py."""
from mpi4py import MPI
import numpy as np

import symmem as sm

sm.init_mpi()
comm = MPI.COMM_WORLD
assert sm.my_pe() == comm.Get_rank() and sm.n_pes() == comm.Get_size()
x = sm.allreduce(np.array([sm.my_pe()], np.int64))
assert x[0] == comm.allreduce(sm.my_pe())
print("rank %d: init_mpi ok" % sm.my_pe(), flush=True)
sm.finalize()
