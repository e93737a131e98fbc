"""Generators of large models for benchmarks."""


def big_flat_net(n: int = 10_000) -> str:
    """A flat net with n places and n transitions: a ring of stations where
    every 5th place is a queueing place, with weights, delays and a parameter."""
    out = ["net big", "param d = 1 ms", "param k = 2"]
    for i in range(n):
        if i % 5 == 0:
            out.append(f"place p{i} queue fcfs servers k service exp(d)" + (" init 3" if i % 50 == 0 else ""))
        else:
            out.append(f"place p{i} capacity 100" + (" init 1" if i % 7 == 0 else ""))
    for i in range(n):
        j = (i + 1) % n
        if i % 3 == 0:
            out.append(f"transition t{i} : p{i} -> p{j} delay exp(2 * d)")
        else:
            out.append(f"transition t{i} : p{i} -> p{j} weight {1 + i % 4}")
    return "\n".join(out) + "\n"
