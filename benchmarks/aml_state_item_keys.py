"""What ``sectorflow run --state`` pays to remember the keys of the transactions it feeds (``state_items``) and to
look them up in the next run (:class:`sectorflow.cli_state.FedItems`), against the run's own ``Taskflow.run`` time,
on the first N transactions of the AMLSim sample in chunks of 8,192 (the default --checkpoint-rows). Prints ratios.

    .venv/bin/python benchmarks/aml_state_item_keys.py [--n 20000] [--no-model]
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import tempfile
import time
from pathlib import Path

from sectorflow import StateKeeper, Taskflow, open_state_store
from sectorflow.cli_state import FedItems
from sectorflow_aml.loaders import READERS

RUN = Path(__file__).resolve().parents[2] / "shared" / "data" / "amlsim_sample" / "20K_fanin200cycle200"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--no-model", action="store_true")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="sectorflow-keys-"))
    source = folder / "slice.csv"
    with gzip.open(RUN / "transactions.csv.gz", "rt") as src, open(source, "w") as dst:
        dst.writelines(itertools.islice(src, args.n + 1))
    txns = [t for _, t in READERS["amlsim"](source)]
    tf = Taskflow("aml", model=not args.no_model)
    store = open_state_store(folder / "state.sqlite")
    fed = FedItems(StateKeeper(tf, store), tf._current[0], start_seq=10**12, ids_by_row=False)
    chunks = [txns[i:i + 8192] for i in range(0, len(txns), 8192)]
    start = time.perf_counter()
    for chunk in chunks:
        with store.transaction():
            store.append("aml", "default", [], keys=fed.keys(chunk))
    record = time.perf_counter() - start
    start = time.perf_counter()
    found = sum(len(fed.seen(chunk)) for chunk in chunks)
    lookup = time.perf_counter() - start
    start = time.perf_counter()
    for chunk in chunks:
        tf.run(chunk)
    run = time.perf_counter() - start
    print(f"{len(txns):,} transactions (model {'off' if args.no_model else 'on'}): recording the keys {record:.3f} s, "
          f"looking them up {lookup:.3f} s ({found:,} found), Taskflow.run {run:.3f} s; "
          f"keys / run = {(record + lookup) / run:.3f}")


if __name__ == "__main__":
    main()
