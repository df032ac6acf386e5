"""Hot reload under load: a corrupt or unloadable bundle leaves the old model serving, with zero failed requests."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from .conftest import auth


@pytest.fixture(scope="module")
def server(make_server, bundles):
    return make_server(tasks={"score": {"max_batch_size": 16, "max_queue_delay_ms": 1, "instances": 2}},
                       server={"allowed_bundle_roots": [str(bundles["root"])], "threads": 2})


class Hammer:
    """Clients that call ``score`` without pause until stopped, recording status and model version."""

    def __init__(self, url: str, clients: int = 3) -> None:
        self.results: list[tuple[int, str | None, float | None]] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._loop, args=(url,)) for _ in range(clients)]
        for t in self._threads:
            t.start()

    def _loop(self, url: str) -> None:
        with httpx.Client(base_url=url, headers=auth("alice"), timeout=30) as client:
            while not self._stop.is_set():
                r = client.post("/v1/tasks/score", json={"inputs": [{"features": [1, 2, 3, 4]}]})
                out = r.json()["outputs"][0] if r.status_code == 200 else {}
                self.results.append((r.status_code, out.get("meta", {}).get("model_version"), out.get("score")))

    def wait_for(self, count: int, timeout: float = 60) -> None:
        """Block until at least ``count`` answers arrived (so that requests overlap what happens meanwhile)."""
        deadline = time.monotonic() + timeout
        while len(self.results) < count and time.monotonic() < deadline:
            time.sleep(0.01)

    def stop(self) -> list[tuple[int, str | None, float | None]]:
        self._stop.set()
        for t in self._threads:
            t.join(30)
        return self.results


def _reload(server, path, key: str = "admin") -> httpx.Response:
    return server.client.post("/v1/admin/models/score/reload", headers=auth(key),
                              json={"task_path": str(path)} if path else None)


def test_reload_under_load_with_bad_bundles_then_a_good_one(server, bundles, tasks):
    hammer = Hammer(server.url)
    try:
        hammer.wait_for(5)
        corrupt = _reload(server, bundles["corrupt"])
        garbage = _reload(server, bundles["garbage"])
        good = _reload(server, bundles["v2"])
        hammer.wait_for(len(hammer.results) + 5)
        after = server.client.post("/v1/tasks/score", headers=auth("alice"),
                                   json={"inputs": [{"features": [1, 2, 3, 4]}]}).json()["outputs"][0]
    finally:
        results = hammer.stop()

    assert corrupt.status_code == 400 and corrupt.json()["error"] == "BundleIntegrityError"
    assert "model.pdiparams" in corrupt.json()["message"]
    assert garbage.status_code == 400 and garbage.json()["error"] == "BundleError"
    assert good.status_code == 200, good.text
    assert good.json()["previous"]["model_version"] == "1" and good.json()["current"]["model_version"] == "2"
    assert after["meta"]["model_version"] == "2" and after["score"] == pytest.approx(20.0)

    assert len(results) > 10
    assert {status for status, _, _ in results} == {200}  # zero failed requests during the reloads
    for _, version, score in results:  # every answer is wholly from one bundle
        assert (version, score) in (("1", pytest.approx(10.0)), ("2", pytest.approx(20.0)))

    load_events = [e for e in tasks.events if e.task == "score" and e.kind in ("model_load_failed", "model_loaded")
                   and e.context.actor == "admin"]
    kinds = [e.kind for e in load_events]
    assert kinds[0] == "model_load_failed" and kinds[-1] == "model_loaded"  # the hash failure is audited
    assert load_events[-1].meta.model_version == "2" and load_events[-1].context.channel == "http"
    assert server.metric("sectorflow_model_reloads_total", task="score", outcome="failure") == 2
    assert server.metric("sectorflow_model_reloads_total", task="score", outcome="success") == 1
    assert server.metric("sectorflow_model_info", task="score", model_version="2") == 1
    assert server.metric("sectorflow_model_info", task="score", model_version="1") == 0
    listing = {r["task"]: r for r in server.client.get("/v1/tasks", headers=auth("alice")).json()}
    assert listing["score"]["model"]["version"] == "2"


def test_reload_needs_admin_scope_and_an_allowed_root(server, bundles, tmp_path):
    assert _reload(server, bundles["v1"], key="alice").status_code == 403
    outside = _reload(server, tmp_path)
    assert outside.status_code == 403 and "allowed bundle roots" in outside.json()["message"]
    missing = _reload(server, bundles["root"] / "nope")
    assert missing.status_code == 400 and missing.json()["error"] == "BundleError"
    unknown = server.client.post("/v1/admin/models/nope/reload", headers=auth("admin"))
    assert unknown.status_code == 404


def test_a_task_whose_model_fails_to_load_does_not_take_the_others_down(make_server, bundles):
    server = make_server(wait="loaded", tasks={"score": {"task_path": str(bundles["corrupt"])}},
                         defaults={"max_queue_delay_ms": 0})
    ready = server.client.get("/readyz")
    assert ready.status_code == 503 and ready.json()["tasks"]["score"] == "failed"
    assert "BundleIntegrityError" in ready.json()["failed"]["score"]
    refused = server.client.post("/v1/tasks/score", headers=auth("alice"),
                                 json={"inputs": [{"features": [1, 1, 1, 1]}]})
    assert refused.status_code == 503 and "failed to load" in refused.json()["message"]
    assert server.client.post("/v1/tasks/echo", headers=auth("alice"), json={"inputs": [{"text": "ok"}]}
                              ).status_code == 200
    listing = {r["task"]: r for r in server.client.get("/v1/tasks", headers=auth("alice")).json()}
    assert listing["score"]["status"] == "failed" and listing["echo"]["status"] == "ready"
    reload = server.client.post("/v1/admin/models/score/reload", headers=auth("admin"))
    assert reload.status_code == 400 and "no loaded model" in reload.json()["message"]


def test_a_task_option_that_changes_how_raw_items_are_read_is_refused_by_the_server(make_server, bundles):
    # the server validates request bodies itself, without the task's validation context (TaskSpec.input_context),
    # so such an option (aml's input_timezone) would silently apply to files and Python calls only: refused, named
    server = make_server(wait="loaded", tasks={"echo": {"options": {"prefix": ">> "}}},
                         defaults={"max_queue_delay_ms": 0})
    ready = server.client.get("/readyz")
    assert ready.status_code == 503 and ready.json()["tasks"]["echo"] == "failed"
    assert ready.json()["failed"]["echo"].startswith("ConfigError: option(s) prefix of task echo change how raw "
                                                     "input is read")
    scored = server.client.post("/v1/tasks/score", headers=auth("alice"), json={"inputs": [{"features": [1, 1, 1, 1]}]})
    assert scored.status_code == 200 and scored.json()["outputs"][0]["score"] == pytest.approx(4.0)


def test_a_task_path_with_a_nul_or_empty_is_422_not_500(server, bundles):
    """Fresh-user finding: with allowed_bundle_roots set, a task_path holding a NUL made Path.resolve() raise
    ValueError: a 500."""
    for bad, says in ((str(bundles["root"]) + "/v1\u0000x", "NUL character"), ("", "at least 1 character")):
        r = server.client.post("/v1/admin/models/score/reload", headers=auth("admin"), json={"task_path": bad})
        assert r.status_code == 422, r.text
        assert r.json()["details"][0]["field"] == "task_path" and says in r.json()["details"][0]["reason"]
