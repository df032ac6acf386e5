"""RFC 9162 hashing and proofs against the transparency-dev/merkle test vectors (compliance/tests/vectors)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from sectorflow.compliance import merkle

VECTORS = Path(__file__).parent / "vectors"
CONSTANTS = json.loads((VECTORS / "testonly-constants.json").read_text())
LEAVES = [merkle.leaf_hash(bytes.fromhex(x)) for x in CONSTANTS["leaf_inputs_hex"]]


def b(text: str) -> bytes:
    return base64.b64decode(text)


def test_hasher_vectors() -> None:
    h = CONSTANTS["hasher"]
    assert merkle.empty_root().hex() == h["empty_root"]
    assert merkle.leaf_hash(b"").hex() == h["empty_leaf"]
    assert merkle.leaf_hash(b"L123456").hex() == h["leaf_L123456"]
    assert merkle.node_hash(b"N123", b"N456").hex() == h["node_N123_N456"]


@pytest.mark.parametrize("size", range(9))
def test_roots_of_reference_tree(size: int) -> None:
    assert merkle.root_of(LEAVES[:size]).hex() == CONSTANTS["root_hashes_hex"][size]


@pytest.mark.parametrize("path", sorted((VECTORS / "inclusion").glob("*/*.json")), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_inclusion_vectors(path: Path) -> None:
    v = json.loads(path.read_text())
    args = (v["leafIdx"], v["treeSize"], b(v["leafHash"]), [b(p) for p in v["proof"]], b(v["root"]))
    if v["wantErr"]:
        with pytest.raises(merkle.ProofError):
            merkle.verify_inclusion(*args)
    else:
        merkle.verify_inclusion(*args)
        # and our generator produces exactly the published proof for the same tree
        assert merkle.inclusion_proof(v["leafIdx"], LEAVES[:v["treeSize"]]) == args[3]
        assert merkle.root_of(LEAVES[:v["treeSize"]]) == args[4]


@pytest.mark.parametrize("path", sorted((VECTORS / "consistency").glob("*/*.json")),
                         ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_consistency_vectors(path: Path) -> None:
    v = json.loads(path.read_text())
    args = (v["size1"], v["size2"], b(v["root1"]), b(v["root2"]), [b(p) for p in v["proof"]])
    if v["wantErr"]:
        with pytest.raises(merkle.ProofError):
            merkle.verify_consistency(*args)
    else:
        merkle.verify_consistency(*args)
        assert merkle.consistency_proof(v["size1"], LEAVES[:v["size2"]]) == args[4]


def test_every_proof_of_small_trees_verifies_and_any_flipped_bit_fails() -> None:
    for n in range(1, 34):
        leaves = [merkle.leaf_hash(i.to_bytes(2, "big")) for i in range(n)]
        root = merkle.root_of(leaves)
        for i in range(n):
            proof = merkle.inclusion_proof(i, leaves)
            merkle.verify_inclusion(i, n, leaves[i], proof, root)
            for j in range(len(proof)):
                bad = list(proof)
                bad[j] = bytes([bad[j][0] ^ 1]) + bad[j][1:]
                with pytest.raises(merkle.ProofError):
                    merkle.verify_inclusion(i, n, leaves[i], bad, root)
        for m in range(0, n + 1):
            proof = merkle.consistency_proof(m, leaves)
            merkle.verify_consistency(m, n, merkle.root_of(leaves[:m]), root, proof)
            if proof:
                bad = proof[:-1] + [bytes(32)]
                with pytest.raises(merkle.ProofError):
                    merkle.verify_consistency(m, n, merkle.root_of(leaves[:m]), root, bad)


def test_compact_range_matches_recursive_definition_and_restores() -> None:
    leaves = [merkle.leaf_hash(bytes([i])) for i in range(100)]

    def mth(d: list[bytes]) -> bytes:  # RFC 9162 2.1.1, literally
        if len(d) == 1:
            return d[0]
        k = 1 << ((len(d) - 1).bit_length() - 1)
        return merkle.node_hash(mth(d[:k]), mth(d[k:]))

    cr = merkle.CompactRange()
    for n, leaf in enumerate(leaves, 1):
        cr.append(leaf)
        assert cr.root() == mth(leaves[:n])
    again = merkle.CompactRange.restore(cr.size, cr.peaks)
    again.append(merkle.leaf_hash(b"x"))
    assert again.root() == mth(leaves + [merkle.leaf_hash(b"x")])
    with pytest.raises(merkle.ProofError):
        merkle.CompactRange.restore(7, cr.peaks[:1])


def test_memoised_proof_builder_gives_the_same_proofs() -> None:
    leaves = [merkle.leaf_hash(i.to_bytes(2, "big")) for i in range(300)]
    plain, memo = merkle.ProofBuilder(leaves, memo_min=10**9), merkle.ProofBuilder(leaves, memo_min=2)
    root = merkle.root_of(leaves)
    assert memo.root(0, 300) == root
    for i in (0, 1, 127, 128, 255, 256, 299):
        assert memo.inclusion(i) == plain.inclusion(i)
        merkle.verify_inclusion(i, 300, leaves[i], memo.inclusion(i), root)
    for m in (1, 2, 100, 256, 257, 299):
        assert memo.consistency(m) == plain.consistency(m)
