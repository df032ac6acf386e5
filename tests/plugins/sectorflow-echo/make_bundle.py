"""Make the echo plugin's tiny model bundles (a random-weight Paddle classifier; not a trained model).

    cd tests/plugins/sectorflow-echo && ../../../.venv/bin/python make_bundle.py

writes ``src/sectorflow_echo/bundle`` (task ``echo``) and ``src/sectorflow_echo/bundle_counter`` (task
``echo_counter``): ``model.json`` + ``model.pdiparams`` from ``paddle.jit.save`` (the predictor's input), the same
weights as ``weights.pdparams`` from ``paddle.save`` (so tests can recompute the output with numpy), and
``manifest.json`` from ``sectorflow.write_manifest``. ``paddle.seed(seed)`` fixes the weights.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

N_FEATURES = 4
LABELS = ["low", "mid", "high"]
HERE = Path(__file__).resolve().parent


def make_bundle(out_dir: str | Path, *, task: str = "echo", seed: int = 0, version: str = "1.0.0") -> Path:
    """Write a bundle for ``task`` into ``out_dir`` (replaced if present): softmax(x @ W + b), W of shape (4, 3)."""
    import paddle

    from sectorflow import write_manifest

    class EchoScorer(paddle.nn.Layer):
        """Linear(4 -> 3) then softmax: input ``x`` float32 [batch, 4], output float32 [batch, 3]."""

        def __init__(self) -> None:
            super().__init__()
            self.linear = paddle.nn.Linear(N_FEATURES, len(LABELS))

        def forward(self, x):  # noqa: ANN001 (jit.save needs the first argument named self and a plain signature)
            return paddle.nn.functional.softmax(self.linear(x), axis=-1)

    out = Path(out_dir)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    paddle.seed(seed)
    # Paddle names each traced op's "struct_name" from a process-wide counter (/Linear/, /Linear_1/, ... per earlier
    # traces in the process); start it afresh so model.json does not depend on what ran before (private API).
    from paddle.base import framework

    framework._name_struct = framework.NameStruct()
    with paddle.utils.unique_name.guard():  # parameter names independent of what the process built before
        layer = EchoScorer()
        layer.eval()
        paddle.jit.save(layer, str(out / "model"),
                        input_spec=[paddle.static.InputSpec([None, N_FEATURES], "float32", name="x")])
    paddle.save(layer.state_dict(), str(out / "weights.pdparams"))
    write_manifest(
        out, task=task, name="echo-linear", version=version, format="paddle-inference", precision="fp32",
        model_prefix="model", labels=LABELS, metrics={},
        provenance={"training_data": "none: random weights, not trained", "seed": seed,
                    "script": "tests/plugins/sectorflow-echo/make_bundle.py",
                    "command": "cd tests/plugins/sectorflow-echo && ../../../.venv/bin/python make_bundle.py"},
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    package = HERE / "src" / "sectorflow_echo"
    for task, folder in (("echo", "bundle"), ("echo_counter", "bundle_counter")):
        path = make_bundle(package / folder, task=task, seed=args.seed)
        print(path, sorted(p.name for p in path.iterdir()))


if __name__ == "__main__":
    main()
