"""Exact FAQ search (customer_service ``FaqIndex``) at the sizes an FAQ has: per-query time and the block's memory.

Vectors are random unit vectors (the search's cost does not depend on what they encode), float32 as the encoders
give them; queries are searched in the index's blocks (``QUERY_BLOCK``), k=3 as the task asks. Prints one line per
size: entries, dimensions, milliseconds per query (median of ``--repeats`` runs over ``--queries`` queries), and
the similarity block's megabytes.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/faq_search.py            # 1,000 to 100,000 entries, 384 and 768
    .venv/bin/python benchmarks/faq_search.py --sizes 2000 --dims 384 --queries 64 --repeats 1   # a quick check
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from sectorflow_customer_service.faq import QUERY_BLOCK, _Partition


def unit(rows: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    x = rng.standard_normal((rows, dim), dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--dims", type=int, nargs="+", default=[384, 768])
    parser.add_argument("--queries", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'entries':>8} {'dim':>4} {'ms/query':>9} {'block MB':>9}")
    for dim in args.dims:
        for size in args.sizes:
            part = _Partition([None] * size, unit(size, dim, rng))  # type: ignore[list-item]
            queries = unit(args.queries, dim, rng)
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                found = part.search(queries, 3)
                times.append((time.perf_counter() - start) / len(queries) * 1000)
            assert len(found) == len(queries) and all(len(row) == min(3, size) for row in found)
            block_mb = min(QUERY_BLOCK, len(queries)) * size * 4 / 1e6
            print(f"{size:>8} {dim:>4} {statistics.median(times):>9.3f} {block_mb:>9.1f}")


if __name__ == "__main__":
    main()
