"""Sweeps on a Dask cluster: sweep points sharded across workers.

The unit of work is a sweep point with all its replications, because a point
stops on its own precision rule; since a point's lanes depend only on the seed
and the point's index (its lanes' spawn keys), every shard returns exactly the
numbers a local run gives.  Dask is optional (``pip install qpn[distributed]``).

>>> from dask.distributed import LocalCluster                      # doctest: +SKIP
>>> with LocalCluster(n_workers=2, processes=True) as cluster:    # doctest: +SKIP
...     sw = simulate(net, sweep={"lambda": [0.5, 0.8]},
...                   options={"time": 1e4, "scheduler": cluster.scheduler_address})
"""
from __future__ import annotations

from qpn.errors import QPNError


def _shard(net, params: dict, points: list[dict], offsets: list[int], options) -> list:
    """Run on a worker: the given points, with their global point offsets."""
    from qpn.compile import compile_net

    from .solver import _simulate_compiled
    compiled = [compile_net(net, {**params, **pt}) for pt in points]
    sw = _simulate_compiled(compiled, points, options, True, point_offsets=offsets)
    return [pr.result for pr in sw.points]


def _client(scheduler):
    try:
        from dask.distributed import Client
    except ImportError:
        raise QPNError("the --scheduler option needs Dask: pip install 'qpn[distributed]'") from None
    if isinstance(scheduler, str):
        try:
            return Client(scheduler, timeout="5s"), True
        except OSError as exc:
            raise QPNError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    return scheduler, False       # a Client given by the caller


def simulate_distributed(net, *, sweep: dict | None, options, params: dict | None = None):
    """Like ``simulate`` but with the points run as Dask tasks on ``options['scheduler']``
    (an address such as ``tcp://host:8786`` or a ``dask.distributed.Client``)."""
    from qpn.compile import compile_net

    from .options import DESOptions
    from .solver import PointResult, SweepResult, replications, sweep_points
    o = DESOptions.of(options)
    scheduler = o.scheduler
    params = dict(params or {})
    points = sweep_points(sweep)
    compiled = [compile_net(net, {**params, **pt}) for pt in points]   # checks params here, once
    o = o.replace(scheduler=None, replications=replications(compiled, o, len(points)), quiet=True)
    client, own = _client(scheduler)
    try:
        workers = max(len(client.scheduler_info().get("workers", {})), 1)
        nshards = min(len(points), 4 * workers)
        bounds = [round(i * len(points) / nshards) for i in range(nshards + 1)]
        futures = []
        for a, b in zip(bounds, bounds[1:]):
            futures.append(client.submit(_shard, net, params, points[a:b], list(range(a, b)), o,
                                         pure=False))
        try:
            parts = client.gather(futures)
        except KeyboardInterrupt:
            client.cancel(futures)
            raise
    finally:
        if own:
            client.close()
    results = [r for part in parts for r in part]
    for r in results:
        r.explanation.append(f"distributed: {len(points)} point(s) in {nshards} shard(s) "
                             f"on {workers} worker(s)")
    if sweep is None:
        return results[0]
    return SweepResult([PointResult(p, r) for p, r in zip(points, results)],
                       {"lanes": len(points) * o.replications, "shards": nshards, "workers": workers})
