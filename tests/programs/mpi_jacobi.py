"""A Jacobi stencil with mpi4py: an N x N grid split into row strips, one per rank.

    mpiexec -n RANKS python mpi_jacobi.py N ITERATIONS

Each iteration exchanges the strip's edge rows with the neighbouring ranks (two
``Sendrecv``), updates the interior with numpy and sums the squared change over all
ranks (``allreduce``).  Rank 0 prints the loop's wall time (s) and the last change.
"""
import sys
import time

import numpy as np
from mpi4py import MPI


def main() -> None:
    n, iterations = int(sys.argv[1]), int(sys.argv[2])
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    rows = n // size
    u = np.zeros((rows + 2, n))
    u[:, 0] = 1.0                       # a hot left edge
    new = u.copy()
    up = rank - 1 if rank > 0 else MPI.PROC_NULL
    down = rank + 1 if rank < size - 1 else MPI.PROC_NULL
    comm.Barrier()
    t0 = time.perf_counter()
    change = 0.0
    for _ in range(iterations):
        comm.Sendrecv(u[1], dest=up, recvbuf=u[rows + 1], source=down)
        comm.Sendrecv(u[rows], dest=down, recvbuf=u[0], source=up)
        new[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        local = float(np.sum((new[1:-1] - u[1:-1]) ** 2))
        u, new = new, u
        change = comm.allreduce(local, op=MPI.SUM)
    elapsed = time.perf_counter() - t0
    if rank == 0:
        print(f"{elapsed:.4f} {change:.6g}")


if __name__ == "__main__":
    main()
