"""Two branches' own messages for the customer_service intent head's federated tests: 8 banking77 train rows of each
of 6 intents per branch, different rows per branch (``../shared/data/banking77``, CC BY 4.0)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

BANKING77 = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "banking77"
INTENTS = ("card_arrival", "lost_or_stolen_card", "exchange_rate", "pin_blocked", "top_up_failed",
           "transfer_not_received_by_recipient")
TEXTS = ["I am still waiting on my card?", "My card got stolen yesterday", "what rate do you use to exchange money",
         "my top-up did not go through", "the transfer never reached my friend"]
"""Messages the tests ask the served bundle about (not in either branch's file)."""


def branch_files(folder: Path, branches: int = 2, per_intent: int = 8) -> list[Path]:
    """Write ``branch<i>.jsonl`` (``{"text", "label"}`` a line) for each branch under ``folder``; their paths."""
    by_label: dict[str, list[str]] = {w: [] for w in INTENTS}
    with open(BANKING77 / "train.csv", encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["category"] in by_label:
                by_label[row["category"]].append(row["text"])
    paths = []
    for b in range(branches):
        path = folder / f"branch{b}.jsonl"
        path.write_text("".join(json.dumps({"text": t, "label": y}) + "\n" for y in INTENTS
                                for t in by_label[y][per_intent * b:per_intent * (b + 1)]), encoding="utf-8")
        paths.append(path)
    return paths
