"""Export the customer-service intent model to PaddleNLP ``Taskflow("text_classification", task_path=...)`` folders.

For ``benchmarks/paddlenlp_compare.py`` (issue 10: the same model served by PaddleNLP's own Taskflow). The model is
the installed plugin's shipped bundle (``sectorflow_customer_service.plugin.BUNDLE_DIR``, whatever its version and
SHA-256), rebuilt in fp32 by the plugin's own loader (``runtime.build_layer``): the MiniLM-L6 encoder, mean pooling
over non-padding tokens and the ``banking77`` head (77 intents). Two folders are written under ``--out``:

- ``finetune/``: PaddleNLP's standard fine-tuned layout, which Taskflow loads as ``BertForSequenceClassification``
  and converts to a static program itself (into ``finetune/static/`` on every construction in 3.0.0b4):
  ``config.json`` (``architectures: [BertForSequenceClassification]``, ``id2label``), ``model_state.pdparams``
  (PaddleNLP parameter names, ``bert.encoder.layers.N.self_attn.q_proj.weight`` ...), ``vocab.txt``,
  ``tokenizer_config.json``, ``id2label.json``. **Its head differs from the plugin's**: PaddleNLP's class
  classifies the [CLS] pooler output (``tanh(dense(h_cls))``), not the mean of the tokens. The encoder weights are
  the bundle's; the pooler is set to the identity (``dense = I, bias 0``) and the classifier to the banking77 head,
  so the architecture's cost equals the plugin's (one extra 384 x 384 matrix product on the [CLS] row) but its
  predictions do not (the head was trained on mean-pooled vectors). It measures PaddleNLP's runtime on equal work.
- ``meanpool/``: the plugin's exact model (mean pooling + banking77 head, logits ``[batch, 77]``) as a static
  program in ``meanpool/static/inference.json|.pdiparams`` plus the tokenizer files, ``config.json`` and
  ``id2label.json``, and no ``model_state.pdparams``. Taskflow's default (``finetune``) mode serves a task_path's
  ``static/inference`` program as it is when the folder has no ``model_state.pdparams`` (it converts only when
  the static files are missing or the parameters changed), so PaddleNLP's tokenizer, collator, predictor settings
  and post-processing run the very same network: predictions must match the plugin's.

(``is_static_model=True`` is not used: in 3.0.0b4 it takes the first file whose name contains ``.json`` as the
program, and the folder also needs ``config.json`` / ``tokenizer_config.json`` / ``id2label.json``.)

Also ``export.json``: the source bundle's name, version, SHA-256, and what each folder holds. Runs in the project's
``.venv`` (no PaddleNLP needed)::

    .venv/bin/python plugins/customer_service/scripts/export_paddlenlp.py --out /tmp/cs-paddlenlp
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE / "src"))

from sectorflow import import_paddle, load_bundle
from sectorflow_text_encoder import BertConfig
from sectorflow_customer_service.intent_model import IntentModel

paddle = import_paddle()

HEAD = "banking77"
_EMBEDDINGS = {"word.weight": "embeddings.word_embeddings.weight",
               "pos.weight": "embeddings.position_embeddings.weight",
               "token_type.weight": "embeddings.token_type_embeddings.weight",
               "ln.weight": "embeddings.layer_norm.weight", "ln.bias": "embeddings.layer_norm.bias"}
_LAYER_PARTS = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.out_proj",
                "ln1": "norm1", "ff1": "linear1", "ff2": "linear2", "ln2": "norm2"}
# BertConfig fields PaddleNLP's BertConfig reads under the same names
_CONFIG_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                  "hidden_act", "max_position_embeddings", "type_vocab_size", "layer_norm_eps", "pad_token_id",
                  "hidden_dropout_prob", "attention_probs_dropout_prob")


def paddlenlp_state(model: IntentModel, head: int) -> dict[str, np.ndarray]:
    """The ``BertForSequenceClassification`` state dict (PaddleNLP names, Linear weights ``[in, out]`` as in the
    plugin) of ``model``'s encoder with head number ``head`` as ``classifier`` and an identity pooler."""
    state: dict[str, np.ndarray] = {}
    for key, value in model.encoder.state_dict().items():
        array = np.asarray(value.numpy(), dtype=np.float32)
        if key in _EMBEDDINGS:
            state["bert." + _EMBEDDINGS[key]] = array
        else:
            _, index, part, kind = key.split(".")  # layers.<i>.<part>.<weight|bias>
            state[f"bert.encoder.layers.{index}.{_LAYER_PARTS[part]}.{kind}"] = array
    hidden = model.encoder.config.hidden_size
    state["bert.pooler.dense.weight"] = np.eye(hidden, dtype=np.float32)
    state["bert.pooler.dense.bias"] = np.zeros(hidden, dtype=np.float32)
    state["classifier.weight"] = np.asarray(model.heads[head].weight.numpy(), dtype=np.float32)
    state["classifier.bias"] = np.asarray(model.heads[head].bias.numpy(), dtype=np.float32)
    return state


def paddlenlp_config(config: BertConfig, labels: list[str]) -> dict[str, Any]:
    """PaddleNLP ``config.json`` of a ``BertForSequenceClassification`` over ``labels``."""
    out: dict[str, Any] = {field: getattr(config, field) for field in _CONFIG_FIELDS}
    out.update(architectures=["BertForSequenceClassification"], model_type="bert", pool_act="tanh",
               tokenizer_class="BertTokenizer", id2label={str(i): name for i, name in enumerate(labels)},
               label2id={name: i for i, name in enumerate(labels)}, num_labels=len(labels))
    return out


class _MeanPoolLogits(paddle.nn.Layer):
    """``input_ids`` int64 ``[batch, seq]`` -> logits ``[batch, n_labels]`` of one head (mean pooling)."""

    def __init__(self, model: IntentModel, head: int) -> None:
        super().__init__()
        self.model, self.head = model, head

    def forward(self, input_ids):  # first argument must be named self for paddle.jit.save
        return self.model.heads[self.head](self.model.pooled(input_ids))


def _tokenizer_files(folder: Path, vocab: Path, config: dict[str, Any], labels: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(vocab, folder / "vocab.txt")
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "BertTokenizer", "do_lower_case": True, "model_max_length": 512}, indent=1))
    (folder / "config.json").write_text(json.dumps(config, indent=1))
    (folder / "id2label.json").write_text(json.dumps({str(i): name for i, name in enumerate(labels)}, indent=1))


def write_finetune(folder: Path, model: IntentModel, head: int, labels: list[str], vocab: Path) -> None:
    """PaddleNLP's fine-tuned layout (``BertForSequenceClassification``, CLS pooler; see the module docstring)."""
    _tokenizer_files(folder, vocab, paddlenlp_config(model.encoder.config, labels), labels)
    state = {k: paddle.to_tensor(v) for k, v in paddlenlp_state(model, head).items()}
    paddle.save(state, str(folder / "model_state.pdparams"))


def write_meanpool(folder: Path, model: IntentModel, head: int, labels: list[str], vocab: Path) -> None:
    """The plugin's exact network as ``static/inference.json|.pdiparams`` with PaddleNLP's tokenizer files."""
    _tokenizer_files(folder, vocab, paddlenlp_config(model.encoder.config, labels), labels)
    layer = _MeanPoolLogits(model, head)
    layer.eval()
    paddle.jit.save(layer, str(folder / "static" / "inference"),
                    input_spec=[paddle.static.InputSpec([None, None], "int64", name="input_ids")])


def export(bundle_dir: Path, out: Path, head_name: str = HEAD) -> dict[str, Any]:
    """Write ``out/finetune``, ``out/meanpool`` and ``out/export.json`` from the bundle in ``bundle_dir``."""
    from sectorflow_customer_service.runtime import build_layer, heads_of

    bundle = load_bundle(bundle_dir, expected_task="customer_service")
    heads = [name for name, _ in heads_of(bundle)]
    if head_name not in heads:
        raise SystemExit(f"bundle {bundle_dir} has heads {heads}, not {head_name!r}")
    head = heads.index(head_name)
    labels = list(bundle.read_json("labels.json")[head_name])
    model = build_layer(bundle)  # fp32, eval mode
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    vocab = bundle.file("vocab.txt")
    write_finetune(out / "finetune", model, head, labels, vocab)
    write_meanpool(out / "meanpool", model, head, labels, vocab)
    info = {"source_bundle": {"name": bundle.name, "version": bundle.version, "sha256": bundle.sha256,
                              "path": str(bundle_dir)},
            "head": head_name, "labels": len(labels),
            "finetune": "BertForSequenceClassification: CLS pooler (identity dense + tanh) + banking77 head; "
                        "same encoder weights; predictions differ from the plugin's (mean pooling)",
            "meanpool": "static program of the plugin's network (mean pooling + banking77 head); same predictions"}
    (out / "export.json").write_text(json.dumps(info, indent=1))
    return info


def main(argv: list[str] | None = None) -> None:
    from sectorflow_customer_service.plugin import BUNDLE_DIR

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to (re)write")
    parser.add_argument("--bundle", type=Path, default=BUNDLE_DIR, help="customer-service bundle (default: the "
                                                                         "installed plugin's)")
    args = parser.parse_args(argv)
    print(json.dumps(export(args.bundle, args.out), indent=1))


if __name__ == "__main__":
    main()
