#!/usr/bin/env bash
# Side environment for the PaddleNLP references: SimpleServing (benchmarks/serve_paddlenlp.py) and Taskflow
# serving the customer-service model from a task_path (benchmarks/paddlenlp_compare.py).
#
# PaddleNLP is not installed in the project's .venv: its pins (numpy<=1.26.4 through tool_helpers, aistudio-sdk,
# pyarrow, huggingface_hub, datasets) conflict with what other parts of the project may need. This script makes a
# separate, git-ignored .venv-paddlenlp (the .gitignore ignores .venv-*/) with the pins that make paddlenlp 3.0.0b4
# import on Paddle 3.3.1 (see ../shared/notes/stack-facts.md). sectorflow is not installed there: the reference
# server reads the bundle's files itself (and checks their SHA-256 against the manifest), and the Taskflow
# comparison serves folders written by plugins/customer_service/scripts/export_paddlenlp.py.
#
#   bash benchmarks/paddlenlp_env.sh            # about 2-5 minutes with a warm pip cache
#   PYTHON=/path/to/python3.11 bash benchmarks/paddlenlp_env.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
VENV=.venv-paddlenlp
if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
# Without constraints pip's resolver backtracks through hundreds of versions of PaddleNLP's dependencies (it had
# unpacked 184 candidates after 16 minutes here). Where the project's .venv exists, the packages both environments
# share are held at the versions it uses, except three that PaddleNLP and datasets need older: huggingface_hub
# (<2), tokenizers (<0.22), fsspec (<=2026.6.0), and the ones pinned below (the project's .venv may hold NumPy 2 and
# pyarrow 26, which would make the pins below unsatisfiable: "Cannot install pyarrow==21.0.0").
CONSTRAINTS=()
if [ -x .venv/bin/python ]; then
    .venv/bin/python -m pip freeze --exclude-editable 2>/dev/null \
        | grep -v -i -E '^(sectorflow|huggingface[-_]hub|tokenizers|fsspec|torch|numpy|pyarrow|datasets|aistudio[-_]sdk|paddlepaddle|paddlenlp|scipy|pandas|scikit[-_]learn|numba|llvmlite|onnx|onnxruntime|opencv[-_a-z]*|ml[-_]dtypes)=|@ file:' \
        > "$VENV/constraints.txt" || true
    CONSTRAINTS=(-c "$VENV/constraints.txt")
fi
"$VENV/bin/python" -m pip install --quiet "${CONSTRAINTS[@]}" \
    paddlepaddle==3.3.1 paddlenlp==3.0.0b4 \
    aistudio-sdk==0.2.6 pyarrow==21.0.0 'huggingface_hub>=0.25,<2' datasets==5.0.1 numpy==1.26.4 \
    uvicorn httptools uvloop
"$VENV/bin/python" - <<'PY'
import numpy, paddle, paddlenlp
from paddlenlp import SimpleServer  # noqa: F401  (the reference server)
assert numpy.__version__ == "1.26.4", numpy.__version__
print(f"ok: paddle {paddle.__version__}, paddlenlp {paddlenlp.__version__}, numpy {numpy.__version__}")
PY
