"""The JSON-lines output of ``sectorflow run aml`` stays byte for byte what it was (issue 21: speed work on the hot
path, the account features, the case book and the result objects must change no output).

The first :data:`ROWS` rows of AMLGentex ``dev_s303`` (:data:`RESULTS` transactions: the reader leaves out the
generator's 4,000 opening balances; 1,662 results with case updates, 15 with alerts, 33 flagged under the shipped
bundle) go through the CLI as a user runs it (``--format amlgentex --on-error skip``); the SHA-256 of the output file
must equal :data:`RECORDED`'s, taken from the first :data:`RESULTS` lines of the output of the whole file at main
f83b661 (the README's command; the results of a file's head do not depend on its tail).

The digest holds for one bundle (every line's ``meta.bundle_sha256``): after a retraining of the shipped bundle the
outputs legitimately change, and the test skips and says how to record the new digest
(``.venv/bin/python plugins/aml/tests/test_output_unchanged.py`` prints it; record it from the tree *before* a speed
change, then make the change).
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "amlgentex_dev" / "dev_s303" / \
    "transactions.csv.gz"
ROWS = 20_000
RESULTS = 16_000
RECORDED = {"bundle_sha256": "6e3019749d3ab394b0de84eca9a32ca12028584de391865e589ee6b8b1371cfc",
            "sha256": "222d66e514547d185237b946298d1cf7c4ea56efdb501e25aa80dff9316d0c72"}
"""Bundle and output digest, recorded at main f83b661 (2 Dec 2026)."""


def run_head(folder: Path, main) -> Path:  # noqa: ANN001 - the CLI's main
    head = folder / "head.csv.gz"
    with gzip.open(DATA, "rt", newline="") as src, gzip.open(head, "wt", newline="") as out:
        out.writelines(itertools.islice(src, ROWS + 1))
    target = folder / "out.jsonl"
    code = main(["run", "aml", str(head), "--format", "amlgentex", "--on-error", "skip", "--output", str(target)])
    assert code == 0
    return target


@pytest.mark.skipif(not DATA.exists(), reason="needs ../shared/data/amlgentex_dev/dev_s303")
def test_jsonl_output_is_byte_identical(tmp_path: Path, cli_main) -> None:  # noqa: ANN001
    target = run_head(tmp_path, cli_main)
    raw = target.read_bytes()
    lines = raw.splitlines()
    assert len(lines) == RESULTS
    bundle = json.loads(lines[0])["meta"]["bundle_sha256"]
    if bundle != RECORDED["bundle_sha256"]:
        pytest.skip(f"the shipped bundle changed ({bundle[:12]}, recorded {RECORDED['bundle_sha256'][:12]}): record "
                    "the new digest with `.venv/bin/python plugins/aml/tests/test_output_unchanged.py`")
    digest = hashlib.sha256(raw).hexdigest()
    assert digest == RECORDED["sha256"], "the aml output changed: compare with benchmarks/aml_equality.py --rev REV"


if __name__ == "__main__":  # print the digest of this tree's output, to record it
    import tempfile

    from sectorflow.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        out = run_head(Path(tmp), main).read_bytes()
    print(json.dumps({"bundle_sha256": json.loads(out.splitlines()[0])["meta"]["bundle_sha256"],
                      "sha256": hashlib.sha256(out).hexdigest()}))
    sys.exit(0)
