"""Train the medical_report span tagger on the project's generated corpus and export it as the shipped bundle.

    python plugins/medical_report/scripts/train_tagger.py --epochs 10
    python plugins/medical_report/scripts/train_tagger.py --export-only   # rewrite model.json/.pdiparams only

Data: :mod:`sectorflow_medical_report.corpus` (project-written templates, all four styles): train = seed 1,
validation = seed 2 (the epoch with the best validation F1 is kept), test = seed 3 (reported only). No real report
is read. Writes ``src/sectorflow_medical_report/bundle/``: ``model.json`` + ``model.pdiparams`` (paddle.jit.save,
served by a paddle.inference predictor), ``weights.safetensors`` (float32 state dict, the federated starting point),
``vocab.json`` and ``manifest.json`` (metrics, provenance, sha256 of every file).

The inference program is saved from :func:`sectorflow_medical_report.tagger.make_export_layer` (the same function
without the GRU's ``sequence_length``, so that the ONNX export agrees with Paddle on padded batches).
``--export-only`` rebuilds just that program from the bundle's ``weights.safetensors`` and ``vocab.json`` (no
training; metrics and provenance kept, the export recorded under ``provenance.inference_program``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from sectorflow import import_paddle, write_manifest
from sectorflow_medical_report import __version__, corpus, lexicon, tagger

BUNDLE = HERE.parent / "src" / "sectorflow_medical_report" / "bundle"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-train", type=int, default=2400)
    ap.add_argument("--n-eval", type=int, default=600)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=BUNDLE)
    ap.add_argument("--export-only", action="store_true",
                    help="rewrite the inference program of the bundle in --out from its weights.safetensors")
    args = ap.parse_args()
    if args.export_only:
        export_only(args.out)
        return
    paddle = import_paddle()
    paddle.seed(args.seed)
    train, val, test = (corpus.generate(args.n_train, 1), corpus.generate(args.n_eval, 2),
                        corpus.generate(args.n_eval, 3))
    forms = [f for table in (lexicon.FINDINGS, lexicon.ANATOMY) for v in table.values() for f in v[0] + v[1]]
    vocab = tagger.build_vocab([d["text"] for d in train] + forms + ["0123456789.,;:()-x×~ "])
    index = {c: i for i, c in enumerate(vocab)}
    tr, va, te = (tagger.examples(d, index) for d in (train, val, test))
    layer = tagger.make_layer(len(vocab))
    best, best_state, history = -1.0, None, []
    start = time.time()
    for epoch in range(1, args.epochs + 1):
        loss = tagger.train_epochs(layer, tr, 1, seed=args.seed + epoch)
        vloss, vm = tagger.evaluate_layer(layer, va)
        history.append({"epoch": epoch, "train_loss": round(loss, 4), "val_loss": round(vloss, 4), **vm})
        print(json.dumps(history[-1]), f"{time.time() - start:.0f}s", flush=True)
        if vm["f1"] > best:
            best, best_state = vm["f1"], {k: v.numpy().copy() for k, v in layer.state_dict().items()}
    layer.set_state_dict({k: paddle.to_tensor(v) for k, v in best_state.items()})
    vloss, vm = tagger.evaluate_layer(layer, va)
    tloss, tm = tagger.evaluate_layer(layer, te)
    out = args.out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    layer.eval()
    tagger.save_inference(layer, str(out / "model"))
    from safetensors.numpy import save_file

    save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in best_state.items()},
              str(out / "weights.safetensors"))
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    write_manifest(
        out, task="medical_report", name="span-tagger-bigru", version=__version__, format="paddle-inference",
        precision="fp32", cpu_onednn=False, labels=list(tagger.TAGS),
        metrics={"validation": {**vm, "loss": round(vloss, 4), "n": len(va),
                                "split": "generated corpus seed 2 (epoch chosen on it)"},
                 "test": {**tm, "loss": round(tloss, 4), "n": len(te), "split": "generated corpus seed 3"},
                 "metric": "exact span match, micro over ANAT and FIND", "history": history},
        provenance={"training_data": "project-generated annotated snippets (sectorflow_medical_report.corpus), "
                                     f"{args.n_train} train (seed 1), {args.n_eval} val (seed 2), {args.n_eval} test "
                                     "(seed 3), four styles (en narrative/telegraphic, zh narrative/structured)",
                    "real_reports_used": "none (iu_xray and cmeee are evaluation-only and never read here)",
                    "script": "plugins/medical_report/scripts/train_tagger.py",
                    "command": f"python plugins/medical_report/scripts/train_tagger.py --epochs {args.epochs} "
                               f"--n-train {args.n_train} --n-eval {args.n_eval} --seed {args.seed}",
                    "architecture": f"char embedding {tagger.EMBED} + BiGRU {tagger.HIDDEN} + linear, BIO {list(tagger.TAGS)}",
                    "seed": args.seed, "inference_program": INFERENCE_PROGRAM})
    print("validation", vm, "test", tm, "->", out)


INFERENCE_PROGRAM = ("tagger.make_export_layer: forward GRU, backward GRU over each row reversed within its length, "
                     "positions past the length zeroed (no sequence_length; ONNX export checked within 1e-4)")


def export_only(out: Path) -> None:
    """Rewrite ``model.json`` + ``model.pdiparams`` of the bundle in ``out`` from its float32 weights."""
    from safetensors.numpy import load_file

    paddle = import_paddle()
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    vocab = json.loads((out / "vocab.json").read_text(encoding="utf-8"))
    layer = tagger.make_layer(len(vocab))
    layer.set_state_dict({k: paddle.to_tensor(v) for k, v in load_file(str(out / "weights.safetensors")).items()})
    layer.eval()
    tagger.save_inference(layer, str(out / "model"))
    manifest.pop("files")
    manifest["provenance"]["inference_program"] = INFERENCE_PROGRAM
    manifest["provenance"]["inference_program_command"] = ("python plugins/medical_report/scripts/train_tagger.py "
                                                           "--export-only")
    write_manifest(out, **manifest)
    print("inference program rewritten ->", out)


if __name__ == "__main__":
    main()
