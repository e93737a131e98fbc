"""Count word frequencies of a synthetic corpus with one thread per chunk.

A seeded, Zipf-distributed text of roughly MEGABYTES MB is generated in
memory, split into THREADS parts on word boundaries, counted per thread into
its own Counter, and the counters are merged to report the top 10 words.

Usage: python wordfreq.py [MEGABYTES] [THREADS]
"""
import collections
import itertools
import random
import sys
import threading

VOCAB_SIZE = 5000
SEED = 12345


def make_vocabulary(rng, size):
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    weights = [26 - i for i in range(len(letters))]
    words = set()
    while len(words) < size:
        n = rng.randint(2, 9)
        words.add("".join(rng.choices(letters, weights=weights, k=n)))
    vocab = sorted(words)
    rng.shuffle(vocab)  # rank order unrelated to spelling
    return vocab


def generate_text(megabytes, seed=SEED):
    rng = random.Random(seed)
    vocab = make_vocabulary(rng, VOCAB_SIZE)
    # Zipf-like weights: frequency of rank r proportional to 1/r
    cum = list(itertools.accumulate(1.0 / r for r in range(1, len(vocab) + 1)))
    target = int(megabytes * 1_000_000)
    parts = []
    size = 0
    while size < target:
        line = " ".join(rng.choices(vocab, cum_weights=cum, k=12))
        parts.append(line)
        size += len(line) + 1
    return "\n".join(parts)


def split_text(text, n):
    """Split text into n roughly equal pieces, cutting only at whitespace."""
    chunks = []
    start = 0
    length = len(text)
    for i in range(1, n + 1):
        end = length if i == n else max(start, length * i // n)
        while end < length and not text[end].isspace():
            end += 1
        chunks.append(text[start:end])
        start = end
    return chunks


def count_words(chunk, results, index):
    counter = collections.Counter()
    for line in chunk.splitlines():
        for word in line.split():
            counter[word] += 1
    results[index] = counter


def main():
    megabytes = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    nthreads = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    if megabytes <= 0 or nthreads < 1:
        sys.exit("MEGABYTES and THREADS must be positive")

    text = generate_text(megabytes)
    chunks = split_text(text, nthreads)

    results = [None] * nthreads
    threads = [threading.Thread(target=count_words, args=(chunk, results, i),
                                name=f"counter-{i}")
               for i, chunk in enumerate(chunks)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()

    total = collections.Counter()
    for c in results:
        total.update(c)

    top = total.most_common(10)
    top_str = ", ".join(f"{w}:{n}" for w, n in top)
    print(f"{len(text)} chars, {sum(total.values())} words, {len(total)} distinct, "
          f"{nthreads} threads; top 10: {top_str}")


if __name__ == "__main__":
    main()
