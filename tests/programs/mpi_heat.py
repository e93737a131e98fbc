"""Heat diffusion with mpi4py: non-blocking halo exchange overlapped with the interior.

    mpiexec -n RANKS python mpi_heat.py N ITERATIONS CHECK_EVERY

An N x N plate split into row strips.  Each iteration posts the edge rows to the
neighbours (``Irecv``/``Isend``), updates the rows that need no halo while the messages
travel, waits for them (``Waitall``), then updates the two edge rows.  Every CHECK_EVERY
iterations the ranks sum the largest change (``allreduce``: a convergence check).  Rank 0
prints the loop's wall time (s) and the last check's value.
"""
import sys
import time

import numpy as np
from mpi4py import MPI


def main() -> None:
    n, iterations, every = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    rows = n // size
    u = np.zeros((rows + 2, n))
    if rank == 0:
        u[1, :] = 100.0                  # a hot top edge
    new = u.copy()
    up = rank - 1 if rank > 0 else MPI.PROC_NULL
    down = rank + 1 if rank < size - 1 else MPI.PROC_NULL
    comm.Barrier()
    t0 = time.perf_counter()
    change = 0.0
    for it in range(1, iterations + 1):
        reqs = [comm.Irecv(u[0], source=up), comm.Irecv(u[rows + 1], source=down),
                comm.Isend(u[1], dest=up), comm.Isend(u[rows], dest=down)]
        # the interior (rows 2 .. rows-1) needs no halo
        new[2:rows, 1:-1] = u[2:rows, 1:-1] + 0.2 * (
            u[1:rows - 1, 1:-1] + u[3:rows + 1, 1:-1] + u[2:rows, :-2] + u[2:rows, 2:]
            - 4 * u[2:rows, 1:-1])
        MPI.Request.Waitall(reqs)
        for r in (1, rows):              # the two edge rows, now that the halo is here
            new[r, 1:-1] = u[r, 1:-1] + 0.2 * (u[r - 1, 1:-1] + u[r + 1, 1:-1] + u[r, :-2]
                                               + u[r, 2:] - 4 * u[r, 1:-1])
        if it % every == 0:
            change = comm.allreduce(float(np.abs(new[1:-1] - u[1:-1]).max()), op=MPI.MAX)
        u, new = new, u
    elapsed = time.perf_counter() - t0
    if rank == 0:
        print(f"{elapsed:.4f} {change:.6g}")


if __name__ == "__main__":
    main()
