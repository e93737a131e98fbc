"""Direct-summation n-body simulation of a small disc galaxy, using numpy.

N bodies (a heavy central mass plus a rotating, exponentially distributed
disc of stars) are integrated for STEPS leapfrog (kick-drift-kick) time
steps with Plummer-softened gravity.  Each of THREADS worker threads owns a
contiguous slice of the bodies and, every step, computes the accelerations
of its slice from all N bodies with vectorized numpy.  The threads meet at
a threading.Barrier after the forces are computed; the barrier action (run
by one thread before any thread is released) advances velocities and
positions for the whole system, then everyone proceeds to the next step.

At the end the main thread prints the relative energy drift and the final
centre of mass.

Usage: python galaxy.py [STEPS] [THREADS]
"""

import sys
import threading

import numpy as np

N_BODIES = 1000
G = 1.0
SOFTENING = 0.05
DT = 0.002
CENTRAL_MASS = 50.0
DISC_MASS = 10.0
SEED = 7


def make_galaxy(n, rng):
    pos = np.zeros((n, 3))
    vel = np.zeros((n, 3))
    mass = np.full(n, DISC_MASS / (n - 1))
    mass[0] = CENTRAL_MASS
    r = rng.exponential(1.0, n - 1) + 0.1
    theta = rng.uniform(0.0, 2.0 * np.pi, n - 1)
    pos[1:, 0] = r * np.cos(theta)
    pos[1:, 1] = r * np.sin(theta)
    pos[1:, 2] = rng.normal(0.0, 0.05, n - 1)
    # circular velocity from the enclosed mass (central mass + inner disc)
    order = np.argsort(r)
    enclosed = np.empty(n - 1)
    enclosed[order] = CENTRAL_MASS + np.cumsum(mass[1:][order])
    vcirc = np.sqrt(G * enclosed / np.sqrt(r * r + SOFTENING ** 2))
    vel[1:, 0] = -vcirc * np.sin(theta)
    vel[1:, 1] = vcirc * np.cos(theta)
    vel[1:] += rng.normal(0.0, 0.02, (n - 1, 3))
    # move to the centre-of-mass frame
    vel -= (mass[:, None] * vel).sum(axis=0) / mass.sum()
    pos -= (mass[:, None] * pos).sum(axis=0) / mass.sum()
    return pos, vel, mass


def accelerations(pos, mass, lo, hi, out):
    """Accelerations of bodies lo:hi due to all bodies, written into out."""
    d = pos[None, :, :] - pos[lo:hi, None, :]          # (k, n, 3)
    r2 = np.einsum("ijk,ijk->ij", d, d)
    r2 += SOFTENING * SOFTENING
    inv_r3 = r2 ** -1.5
    inv_r3 *= mass[None, :]
    out[lo:hi] = G * np.einsum("ij,ijk->ik", inv_r3, d)


def energy(pos, vel, mass):
    kinetic = 0.5 * np.sum(mass * np.sum(vel * vel, axis=1))
    d = pos[None, :, :] - pos[:, None, :]
    r = np.sqrt(np.sum(d * d, axis=2) + SOFTENING * SOFTENING)
    pot = -G * np.sum(np.triu(mass[:, None] * mass[None, :] / r, k=1))
    return kinetic + pot


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    nthreads = int(sys.argv[2]) if len(sys.argv) > 2 else 4

    rng = np.random.default_rng(SEED)
    pos, vel, mass = make_galaxy(N_BODIES, rng)
    acc = np.zeros_like(pos)
    e0 = energy(pos, vel, mass)

    bounds = np.linspace(0, N_BODIES, nthreads + 1).astype(int)
    state = {"step": 0, "first": True}

    def integrate():
        # Runs in exactly one thread once all slices of acc are up to date.
        # Leapfrog: finish the previous kick, then kick + drift for the next.
        if not state["first"]:
            vel[:] += 0.5 * DT * acc
            state["step"] += 1
        state["first"] = False
        if state["step"] < steps:
            vel[:] += 0.5 * DT * acc
            pos[:] += DT * vel

    barrier = threading.Barrier(nthreads, action=integrate)

    def worker(idx):
        lo, hi = bounds[idx], bounds[idx + 1]
        # initial forces, then one force evaluation per step
        for _ in range(steps + 1):
            accelerations(pos, mass, lo, hi, acc)
            # integrate() runs once every slice is done; no thread is
            # released (and reads pos again) until it has finished.
            barrier.wait()

    threads = [threading.Thread(target=worker, args=(i,), name=f"nbody-{i}")
               for i in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    e1 = energy(pos, vel, mass)
    com = (mass[:, None] * pos).sum(axis=0) / mass.sum()
    print(f"n={N_BODIES} steps={state['step']} threads={nthreads} "
          f"energy_drift={(e1 - e0) / abs(e0):+.3e} "
          f"com=({com[0]:+.2e},{com[1]:+.2e},{com[2]:+.2e})")


if __name__ == "__main__":
    main()
