"""The generated everyday bank (``sectorflow_aml.everyday``): deterministic, everyday patterns AMLSim lacks, and the
shipped scorer's training includes it."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from sectorflow import load_bundle
from sectorflow_aml.everyday import everyday_bank
from sectorflow_aml.plugin import BUNDLE_DIR
from sectorflow_aml.training import EVERYDAY_SEEDS

DIGEST = ("import hashlib; from sectorflow_aml.everyday import everyday_bank; tx = everyday_bank(5, 40, 60); "
          "print(hashlib.sha256(repr([(t.transaction_id, t.timestamp.isoformat(), t.sender_account, "
          "t.receiver_account, str(t.amount), t.channel.value) for t in tx]).encode()).hexdigest())")


def test_the_same_seed_gives_the_same_bank_in_any_process():
    # string hashing is randomised per process: the generator must not depend on set order (it once did)
    digests = {subprocess.run([sys.executable, "-c", DIGEST], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout.strip() for seed in ("1", "2")}
    assert len(digests) == 1 and len(next(iter(digests))) == 64


def test_the_bank_holds_the_repeats_amlsim_lacks_in_time_order():
    txns = everyday_bank(5, customers=40, days=60)
    assert [t.timestamp for t in txns] == sorted(t.timestamp for t in txns)
    assert all(t.amount > 0 and t.sender_account != t.receiver_account for t in txns)
    assert len({t.transaction_id for t in txns}) == len(txns)
    last: dict[tuple[str, str], object] = {}
    repeats = 0
    for t in txns:  # the same payer and payee again within 30 days: 0 of 112,673 normal AMLSim transfers do this
        prev = last.get((t.sender_account, t.receiver_account))
        repeats += prev is not None and t.timestamp - prev <= timedelta(days=30)
        last[(t.sender_account, t.receiver_account)] = t.timestamp
    assert repeats > len(txns) // 10
    assert everyday_bank(6, 40, 60)[0].sender_account.startswith("E6-")  # seeds never share accounts
    with pytest.raises(ValueError):
        everyday_bank(5, customers=5)


def test_the_shipped_scorer_records_its_everyday_training_banks():
    provenance = load_bundle(BUNDLE_DIR).manifest["provenance"]
    assert provenance["everyday_banks"]["seeds"] == list(EVERYDAY_SEEDS)
    assert "--everyday " + " ".join(map(str, EVERYDAY_SEEDS)) in provenance["command"]
    assert 7 not in EVERYDAY_SEEDS  # benchmarks/aml_everyday.py reports false alarms on seed 7
