"""gc.freeze once the models are loaded, counted per server, undone by the last one at shutdown (serving.gcfreeze)."""

from __future__ import annotations

import gc

import sectorflow
from sectorflow.serving import create_app, gcfreeze, load_config

from .conftest import KEYS, Server, auth


def test_a_ready_server_freezes_the_loaded_objects_and_unfreezes_at_shutdown(tasks):
    before, threshold = gcfreeze.holders(), gc.get_threshold()
    made_before = [object()]  # a container that exists before the server is ready: frozen with the rest
    server = Server(create_app(load_config(data={"keys": KEYS}, environ={})))
    try:
        assert gcfreeze.holders() == before + 1
        assert sectorflow.gc_frozen()  # declared to the core: the AML pipeline's hand-over leaves it alone
        assert gc.get_freeze_count() > 1000  # the loaded libraries and models (some 10^5 objects)
        assert gc.get_threshold()[0] >= gcfreeze.GEN0_THRESHOLD
        assert gc.is_tracked(made_before) and made_before not in gc.get_objects(generation=2)
        r = server.client.post("/v1/tasks/score", headers=auth("alice"), json={"inputs": [{"features": [1, 2, 3, 4]}]})
        assert r.status_code == 200, r.text
        # a second server holds the freeze too; closing it leaves the first one's in place
        other = Server(create_app(load_config(data={"keys": KEYS}, environ={})))
        assert gcfreeze.holders() == before + 2
        other.close()
        assert gcfreeze.holders() == before + 1 and gc.get_freeze_count() > 1000
    finally:
        server.close()
    assert gcfreeze.holders() == before
    if before == 0:
        assert gc.get_freeze_count() == 0
        assert gc.get_threshold() == threshold
        assert not sectorflow.gc_frozen()


def test_freeze_gc_false_leaves_the_collector_alone(tasks):
    before, frozen, threshold = gcfreeze.holders(), gc.get_freeze_count(), gc.get_threshold()
    server = Server(create_app(load_config(data={"keys": KEYS, "server": {"freeze_gc": False}}, environ={})))
    try:
        assert gcfreeze.holders() == before
        if before == 0:
            assert gc.get_freeze_count() == frozen == 0
            assert gc.get_threshold() == threshold
    finally:
        server.close()
