"""Functions run by symmem.testing.run from test_driver.py."""
import numpy as np

import symmem as sm


def ring():
    me, n = sm.my_pe(), sm.n_pes()
    a = sm.zeros(4, np.int64)
    sm.barrier_all()
    sm.put(a, np.full(4, me, np.int64), (me + 1) % n)
    sm.barrier_all()
    assert (a == (me - 1) % n).all()
    sm.free(a)


def fails_on_pe1():
    if sm.my_pe() == 1:
        raise ValueError("deliberate failure on PE 1")
