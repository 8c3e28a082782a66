"""The bundled engines (see engines/registry.py)."""

import os

# One BLAS thread for numpy, set before numpy loads (the package is imported before any of
# its modules): the network's matrices are small, so BLAS threads only add hand-offs
# (measured: a 31-position forward pass took 10 ms with OpenBLAS's threads on the busy
# machine, 0.3 ms without), the machine is shared, and training results stay exact.
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
