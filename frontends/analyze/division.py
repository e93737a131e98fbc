"""Work divided among threads, read from what each thread was given.

A pool whose threads loop without taking work items (lock-step rounds, forked workers
that each compute a share) either does the same work per thread at any pool size or
divides a fixed amount among its threads.  One trace cannot tell them apart from the
CPU alone; what the threads were *given* often can.  ``qpn trace`` records the shape
of each thread's arguments (``thread_start`` ``args``: an int's value, a range, an
array's rows with its base and offset, a sized object's length and identity), and a
pool's threads divide their work when their arguments are the parts of one whole:

* two int arguments that, thread by thread, are adjacent bounds (``(1, 500)``,
  ``(500, 999)``): a range cut into parts;
* ranges that follow each other (``range(0, 50)``, ``range(50, 100)``);
* arrays that are views of one base array at different offsets (rows of one matrix);
* sized objects, each thread its own, of nearly equal length (slices of a list);
* an int that equals the number of threads, beside an index 0 .. n-1 (``work(i, n)``).

Otherwise the trace says nothing and the division stays an assumption.

>>> starts = [{"args": [["i", 1], ["i", 500]]}, {"args": [["i", 500], ["i", 999]]}]
>>> divided(starts)[0]
True
>>> divided([{"args": [["n", 30000, 7], ["n", 2, 9], ["i", 0]]},
...          {"args": [["n", 30000, 8], ["n", 2, 9], ["i", 1]]}])[0]
True
>>> divided([{"args": [["n", 60000, 7]]}, {"args": [["n", 60000, 7]]}])[0] is None
True
"""
from __future__ import annotations


def _tiles(intervals) -> bool:
    """Intervals that follow each other without gaps or overlaps (within one)."""
    iv = sorted(intervals)
    return all(lo < hi for lo, hi in iv) and all(
        abs(iv[m][1] - iv[m + 1][0]) <= 1 for m in range(len(iv) - 1))


def divided(starts: list) -> tuple[bool | None, str]:
    """(True, why) when the threads' arguments (``thread_start`` events of one pool, at
    least two) are the parts of one whole; (None, "") when they do not tell."""
    args = [e.get("args") for e in starts]
    k = len(args)
    if k < 2 or any(not a for a in args) or len({len(a) for a in args}) != 1:
        return None, ""
    n = len(args[0])
    col = [[a[j] for a in args] for j in range(n)]
    for j in range(n - 1):
        if all(x[0] == "i" for x in col[j]) and all(x[0] == "i" for x in col[j + 1]):
            iv = [(x[1], y[1]) for x, y in zip(col[j], col[j + 1])]
            if _tiles(iv):
                lo, hi = min(a for a, _ in iv), max(b for _, b in iv)
                return True, (f"arguments {j + 1} and {j + 2} of its {k} threads are adjacent "
                              f"bounds that cut {lo}..{hi} into {k} parts")
    for j, c in enumerate(col):
        kinds = {x[0] for x in c}
        if kinds == {"r"} and all(x[3] == c[0][3] for x in c) and \
                _tiles([(x[1], x[2]) for x in c]):
            return True, f"argument {j + 1}: {k} ranges that follow each other"
        if kinds == {"a"} and len({x[2] for x in c}) == 1 and len({x[3] for x in c}) == k:
            rows = sum(x[1] for x in c)
            return True, (f"argument {j + 1}: {k} views of one array at different offsets "
                          f"({rows} rows in all)")
        if kinds == {"n"} and len({x[2] for x in c}) == k:
            lens = [x[1] for x in c]
            if min(lens) > 1 and max(lens) - min(lens) <= max(1, 0.02 * max(lens)):
                return True, (f"argument {j + 1}: each thread its own object of about "
                              f"{sum(lens) // k} items ({sum(lens)} in all): slices of one "
                              "input (if each was a whole copy, set the split to 0)")
    ints = [j for j, c in enumerate(col) if all(x[0] == "i" for x in c)]
    for j in ints:
        if all(x[1] == k for x in col[j]):
            for i in ints:
                if i != j and sorted(x[1] for x in col[i]) == list(range(k)):
                    return True, (f"argument {j + 1} is the number of threads ({k}) and "
                                  f"argument {i + 1} each one's index")
    return None, ""


__all__ = ["divided"]
