"""schemathesis against the live /openapi.json: valid and invalid requests for every operation, no 5xx.

Bounded for CI: a fixed number of examples per operation and generation mode (``SECTORFLOW_FUZZ_EXAMPLES``, default
6), derandomized (same cases each run).
"""

from __future__ import annotations

import os

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402

from .conftest import SECRETS  # noqa: E402

EXAMPLES = int(os.environ.get("SECTORFLOW_FUZZ_EXAMPLES", "6"))  # raise it for a deeper local run
NOTHING_TO_FUZZ = {"/healthz", "/readyz", "/metrics"}  # no parameters or body


@pytest.fixture(scope="module")
def server(make_server, bundles):
    return make_server(defaults={"max_queue_delay_ms": 0},
                       server={"allowed_bundle_roots": [str(bundles["root"])], "max_items_per_request": 64})


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_server_errors(server, mode):
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.path for op in operations} >= {"/v1/tasks/score", "/v1/tasks/echo", "/v1/tasks/ledger", "/v1/tasks",
                                              "/v1/admin/models/{task}/reload", "/metrics"}
    seen: list[tuple[str, int]] = []
    headers = {"Authorization": f"Bearer {SECRETS['fuzz']}"}
    for operation in operations:
        if operation.path in NOTHING_TO_FUZZ:
            continue

        @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy(generation_mode=mode))
        def check(case) -> None:
            response = case.call(base_url=server.url, headers=headers, timeout=30)
            seen.append((operation.path, response.status_code))  # noqa: B023 - check() runs within the iteration
            assert response.status_code < 500, (case.method, case.formatted_path, case.body, response.text)

        try:
            check()
        except Unsatisfiable:  # an operation without parameters has no invalid variant
            assert mode is GenerationMode.NEGATIVE
    assert len(seen) >= len(operations)
    if mode is GenerationMode.POSITIVE:  # valid bodies were accepted, not only refused
        assert any(path == "/v1/tasks/score" and status == 200 for path, status in seen)
    else:
        assert any(path == "/v1/tasks/score" and status == 422 for path, status in seen)
