"""An all-pairs n-body step with mpi4py: each rank owns N / RANKS bodies.

    mpiexec -n RANKS python mpi_nbody.py N STEPS

Each step gathers every rank's positions (``Allgather``), computes the forces on the
rank's own bodies from all N with numpy, moves them, and sums the kinetic energy over
the ranks (``allreduce``).  Rank 0 prints the loop's wall time (s) and the energy.
"""
import sys
import time

import numpy as np
from mpi4py import MPI


def main() -> None:
    n, steps = int(sys.argv[1]), int(sys.argv[2])
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    mine = n // size
    start = np.random.default_rng(0).random((n, 3))       # one problem, whatever the ranks
    pos = start[rank * mine:(rank + 1) * mine].copy()
    vel = np.zeros((mine, 3))
    everyone = np.empty((mine * size, 3))
    dt, soft = 1e-4, 1e-2
    comm.Barrier()
    t0 = time.perf_counter()
    energy = 0.0
    for _ in range(steps):
        comm.Allgather(pos, everyone)
        d = everyone[None, :, :] - pos[:, None, :]
        inv = ((d * d).sum(axis=2) + soft) ** -1.5
        acc = (d * inv[:, :, None]).sum(axis=1)
        vel += dt * acc
        pos += dt * vel
        energy = comm.allreduce(0.5 * float((vel * vel).sum()), op=MPI.SUM)
    elapsed = time.perf_counter() - t0
    if rank == 0:
        print(f"{elapsed:.4f} {energy:.6g}")


if __name__ == "__main__":
    main()
