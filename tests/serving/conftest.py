"""Fixtures for the serving tests: tiny in-process tasks (one on a real Paddle bundle), real uvicorn servers.

Tasks registered here through the plugin manager (no installed plugin is loaded):
    score   stateless, a paddle.inference predictor of a 4->1 linear layer (bundle written with paddle.jit.save)
    echo    stateless, pure Python; ``text="boom"`` is refused by the pipeline, ``text="block"`` waits on a gate
    ledger  stateful running balances (kept across a reload); an item for account ``frozen`` makes the whole call
            fail before any change, one for account ``hold`` waits on LEDGER_GATE
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

import httpx
import numpy as np
import pytest
import sectorflow
import uvicorn
from pydantic import BaseModel, Field
from sectorflow import InvalidInputError, Pipeline, TaskResult, TaskSpec, hookimpl, plugins, write_manifest
from sectorflow.serving import create_app, hash_key, load_config

# --- tasks ---------------------------------------------------------------------------------------------------------


class ScoreIn(BaseModel):
    features: list[Annotated[float, Field(ge=-1e6, le=1e6)]] = Field(min_length=4, max_length=4,
                                                                     description="Four numbers.")


class ScoreOut(TaskResult):
    score: float


SCORE_HOLD = 777.0  # a score item whose first feature is this waits on SCORE_GATE inside the model call
SCORE_GATE = {"entered": threading.Event(), "release": threading.Event()}


class ScorePipeline(Pipeline):
    def load(self) -> None:
        self.pool = self.predictor_pool()

    def preprocess(self, items: Sequence[ScoreIn]) -> list[Any]:
        return [item.features for item in items]

    def forward(self, batch: Sequence[Any]) -> list[Any]:
        if any(row[0] == SCORE_HOLD for row in batch):  # holds the call until a test releases it
            SCORE_GATE["entered"].set()
            SCORE_GATE["release"].wait(20)
        out = self.pool.run({self.pool.input_names[0]: np.asarray(batch, dtype="float32")})[0]
        return [float(v) for v in out.reshape(-1)]

    def postprocess(self, items: Sequence[ScoreIn], raw: Sequence[Any]) -> list[ScoreOut]:
        return [ScoreOut(score=value) for value in raw]


class EchoIn(BaseModel):
    text: str = Field(min_length=1, max_length=200)
    repeat: int = Field(1, ge=1, le=3)


class EchoOut(TaskResult):
    text: str
    length: int


GATE = {"entered": threading.Event(), "release": threading.Event()}
PROCESSED: list[str] = []


class EchoPipeline(Pipeline):
    def preprocess(self, items: Sequence[EchoIn]) -> list[Any]:
        bad = [i + 1 for i, item in enumerate(items) if item.text == "boom"]
        if bad:
            raise InvalidInputError("text 'boom' is refused by the echo task.",
                                    details=[{"row": r, "field": "text", "reason": "refused"} for r in bad])
        return list(items)

    def forward(self, batch: Sequence[EchoIn]) -> list[Any]:
        if any(item.text == "block" for item in batch):
            GATE["entered"].set()
            GATE["release"].wait(20)
        PROCESSED.extend(item.text for item in batch)
        return [item.text.upper() * item.repeat for item in batch]

    def postprocess(self, items: Sequence[EchoIn], raw: Sequence[Any]) -> list[EchoOut]:
        return [EchoOut(text=text, length=len(text)) for text in raw]


class LedgerIn(BaseModel):
    account: str = Field(min_length=1, max_length=32)
    amount: float = Field(ge=-1e9, le=1e9)


class LedgerOut(TaskResult):
    account: str
    balance: float
    seen: int


LEDGER_GATE = {"entered": threading.Event(), "release": threading.Event()}  # an item for account ``hold`` waits


class LedgerPipeline(Pipeline):
    def load(self) -> None:
        self.balances: dict[str, float] = {}
        self.seen = 0

    def preprocess(self, items: Sequence[LedgerIn]) -> list[Any]:
        frozen = [i + 1 for i, item in enumerate(items) if item.account == "frozen"]
        if frozen:  # checked before any state changes: the call is all or nothing
            raise InvalidInputError("account 'frozen' accepts no transactions.",
                                    details=[{"row": r, "field": "account", "reason": "frozen"} for r in frozen])
        return list(items)

    def forward(self, batch: Sequence[LedgerIn]) -> list[Any]:
        if any(item.account == "hold" for item in batch):  # holds the call until a test releases it
            LEDGER_GATE["entered"].set()
            LEDGER_GATE["release"].wait(20)
        out = []
        for item in batch:
            self.balances[item.account] = self.balances.get(item.account, 0.0) + item.amount
            self.seen += 1
            out.append((item.account, self.balances[item.account], self.seen))
        return out

    def postprocess(self, items: Sequence[LedgerIn], raw: Sequence[Any]) -> list[LedgerOut]:
        return [LedgerOut(account=a, balance=b, seen=s) for a, b, s in raw]

    def reset_state(self) -> None:
        self.load()

    def adopt_state(self, previous: Pipeline) -> None:
        self.balances, self.seen = previous.balances, previous.seen


class TestTasks:
    def __init__(self, score_bundle: Path) -> None:
        self.score_bundle = score_bundle
        self.events: list[sectorflow.TaskEvent] = []

    @hookimpl
    def sectorflow_register_tasks(self, register: Any) -> None:
        register(TaskSpec("score", ScoreIn, ScoreOut, ScorePipeline, version="1.0", description="Linear score",
                          default_bundle=self.score_bundle, examples=({"features": [1.0, 2.0, 3.0, 4.0]},)))
        register(TaskSpec("echo", EchoIn, EchoOut, EchoPipeline, description="Upper-case echo", aliases=("shout",),
                          examples=({"text": "hello", "repeat": 2},),
                          options={"prefix": "a validation context for raw items (the server refuses it)"},
                          context_from_options=lambda options: {"prefix": options["prefix"]} if "prefix" in options else {}))
        register(TaskSpec("ledger", LedgerIn, LedgerOut, LedgerPipeline, stateful=True,
                          examples=({"account": "acc-1", "amount": 12.5},)))

    @hookimpl
    def sectorflow_task_event(self, event: sectorflow.TaskEvent) -> None:
        self.events.append(event)


# --- bundles -------------------------------------------------------------------------------------------------------


def make_score_bundle(folder: Path, weight: float, version: str) -> Path:
    """A paddle-inference bundle of ``score = weight * sum(features)`` written with paddle.jit.save."""
    from sectorflow._paddle import import_paddle

    paddle = import_paddle()
    folder.mkdir(parents=True, exist_ok=True)
    layer = paddle.nn.Linear(4, 1)
    layer.weight.set_value(np.full((4, 1), weight, dtype="float32"))
    layer.bias.set_value(np.zeros((1,), dtype="float32"))
    layer.eval()
    paddle.jit.save(layer, str(folder / "model"),
                    input_spec=[paddle.static.InputSpec([None, 4], "float32", name="features")])
    write_manifest(folder, task="score", name="tiny-linear", version=version, format="paddle-inference")
    return folder


@pytest.fixture(scope="session")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bundles")
    v1 = make_score_bundle(root / "v1", 1.0, "1")
    v2 = make_score_bundle(root / "v2", 2.0, "2")
    corrupt = root / "corrupt"
    shutil.copytree(v2, corrupt)
    data = bytearray((corrupt / "model.pdiparams").read_bytes())
    data[-1] ^= 0xFF
    (corrupt / "model.pdiparams").write_bytes(bytes(data))  # hash check fails
    garbage = root / "garbage"
    shutil.copytree(v2, garbage)
    (garbage / "model.json").write_text("{ not a program", encoding="utf-8")
    write_manifest(garbage, task="score", name="tiny-linear", version="3", format="paddle-inference")
    return {"root": root, "v1": v1, "v2": v2, "corrupt": corrupt, "garbage": garbage}


@pytest.fixture(scope="package")
def tasks(bundles: dict[str, Path]) -> Iterator[TestTasks]:
    """The test tasks, registered for the tests of this folder only (the registry and plugin selection are restored
    afterwards, so tests that run later in the same session see the installed plugins again)."""
    old = os.environ.get("SECTORFLOW_LOAD_PLUGINS")
    os.environ["SECTORFLOW_LOAD_PLUGINS"] = "builtin_observers"
    plugins.reset()
    test_tasks = TestTasks(bundles["v1"])
    plugins.get_plugin_manager().register(test_tasks, name="serving_tests")
    yield test_tasks
    plugins.reset()
    if old is None:
        os.environ.pop("SECTORFLOW_LOAD_PLUGINS", None)
    else:
        os.environ["SECTORFLOW_LOAD_PLUGINS"] = old


# --- keys and servers ----------------------------------------------------------------------------------------------

SECRETS = {name: f"sf_test_{name}_secret_0123456789abcdef" for name in
           ("alice", "bob", "admin", "batchy", "fuzz", "watcher")}
KEYS = [
    {"id": "alice", "sha256": hash_key(SECRETS["alice"]), "tenant": "bank-1", "scopes": ["task:*", "metrics"]},
    {"id": "bob", "sha256": hash_key(SECRETS["bob"]), "tenant": "bank-2", "scopes": ["task:echo"],
     "rate_limit": "5/minute"},
    {"id": "admin", "sha256": hash_key(SECRETS["admin"]), "scopes": ["admin", "metrics"]},
    {"id": "batchy", "sha256": hash_key(SECRETS["batchy"]), "scopes": ["task:*"], "lane": "batch"},
    {"id": "fuzz", "sha256": hash_key(SECRETS["fuzz"]), "scopes": ["task:*", "admin", "metrics", "audit"]},
    {"id": "watcher", "sha256": hash_key(SECRETS["watcher"]), "scopes": ["audit"]},
]


def auth(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {SECRETS[name]}"}


class Server:
    """A real uvicorn server on 127.0.0.1 (free port) in a thread. Construction returns once /readyz says 200
    (``wait="ready"``) or once no task is still loading (``wait="loaded"``: some may have failed)."""

    def __init__(self, app: Any, wait: str = "ready") -> None:
        self.app = app
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                ready = httpx.get(f"{self.url}/readyz", timeout=2)
                if ready.status_code == 200 or (wait == "loaded" and "loading" not in ready.json()["tasks"].values()):
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        else:
            raise RuntimeError("server did not become ready")
        self.client = httpx.Client(base_url=self.url, timeout=30)

    def metric(self, name: str, **labels: str) -> float:
        """One sample of /metrics (0.0 when absent)."""
        text = self.client.get("/metrics", headers=auth("admin")).text
        want = ",".join(f'{k}="{v}"' for k, v in labels.items())
        total = 0.0
        for line in text.splitlines():
            if line.startswith("#"):
                continue
            sample, _, value = line.rpartition(" ")
            metric_name, _, label_text = sample.partition("{")
            if metric_name == name and all(part in label_text for part in want.split(",") if part):
                total += float(value)
        return total

    def close(self) -> None:
        self.client.close()
        self.server.should_exit = True
        self.thread.join(30)


@pytest.fixture(scope="module")
def make_server(tasks: TestTasks) -> Iterator[Any]:
    servers: list[Server] = []

    def make(wait: str = "ready", **config: Any) -> Server:
        config.setdefault("keys", KEYS)
        server = Server(create_app(load_config(data=config, environ={})), wait=wait)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.close()
