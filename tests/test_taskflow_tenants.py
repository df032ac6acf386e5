"""Per-tenant state of stateful tasks (``CallContext.tenant``): the echo plugin's ``echo_counter`` numbers the items
it has seen, so a counter that one tenant's items moved shows up at once in another tenant's results."""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import pytest

from core_support import EventRecorder, echo_plugin, load_make_bundle
from sectorflow import CallContext, ConfigError, TaskSpec, Taskflow, hookimpl


def bank(tenant: str | None, actor: str = "clerk") -> CallContext:
    return CallContext(actor=actor, tenant=tenant)


def seqs(results) -> list[tuple[int, int]]:
    return [(r.seq, r.chars_so_far) for r in results]


def test_each_tenant_counts_only_its_own_items(echo_registry):
    tf = Taskflow("echo_counter")
    assert seqs(tf([{"text": "aaa"}, {"text": "bb"}], context=bank("bank-1"))) == [(1, 3), (2, 5)]
    assert seqs(tf([{"text": "c"}], context=bank("bank-2"))) == [(1, 1)]  # bank 1's two items are not seen
    assert seqs(tf([{"text": "dddd"}])) == [(1, 4)]  # no context: the default tenant, a third history
    assert seqs(tf([{"text": "e"}], context=bank("bank-1", actor="other-clerk"))) == [(3, 6)]  # same tenant, shared
    assert seqs(tf([{"text": "ff"}], context=bank(None))) == [(2, 6)]  # tenant None is the default tenant
    assert tf.tenants() == [None, "bank-1", "bank-2"]
    # the default tenant's pipeline is the loaded one; another tenant's is its own, with the same model
    assert tf.pipeline.seen == 2 and tf._tenant_pipeline("bank-1")[0].seen == 3
    other = tf._tenant_pipeline("bank-2")[0]
    assert other is not tf.pipeline and other.labels == tf.pipeline.labels and other.bundle is tf.pipeline.bundle


def test_reset_forgets_one_tenant_and_is_an_event(echo_registry):
    tf = Taskflow("echo_counter")
    tf([{"text": "aa"}], context=bank("bank-1"))
    tf([{"text": "bbb"}, {"text": "c"}], context=bank("bank-2"))
    tf([{"text": "d"}])
    admin = CallContext(actor="ops", tenant="bank-1")
    assert tf.reset_state("bank-1", context=admin) is True
    assert tf.tenants() == [None, "bank-2"]
    assert seqs(tf([{"text": "e"}], context=bank("bank-2"))) == [(3, 5)]  # untouched
    assert seqs(tf([{"text": "f"}])) == [(2, 2)]  # untouched
    assert seqs(tf([{"text": "gg"}], context=bank("bank-1"))) == [(1, 2)]  # starts again
    assert tf.reset_state("bank-9") is False  # never called: nothing to forget
    assert tf.reset_state() is True and seqs(tf([{"text": "h"}])) == [(1, 1)]  # the default tenant
    assert seqs(tf([{"text": "i"}], context=bank("bank-2"))) == [(4, 6)]
    resets = [e for e in echo_registry.events if e.kind == "state_reset"]
    assert [(e.context.actor, e.details) for e in resets] == [
        ("ops", {"tenant": "bank-1", "had_state": True}), ("local", {"tenant": "bank-9", "had_state": False}),
        ("local", {"tenant": None, "had_state": True})]
    assert all(e.task == "echo_counter" and e.meta == tf.meta for e in resets)
    with pytest.raises(ConfigError, match="tenant=3"):
        tf.reset_state(3)


def test_a_stateless_task_has_no_tenants(echo_registry):
    tf = Taskflow("echo")
    tf([{"text": "x"}], context=bank("bank-1"))
    assert tf.tenants() == [] and tf.reset_state("bank-1") is False
    with pytest.raises(ConfigError, match="stateless"):
        tf._tenant_pipeline("bank-1")


def test_reload_carries_each_tenants_own_state(echo_registry, tmp_path):
    counter_v2 = load_make_bundle().make_bundle(tmp_path / "counter_v2", task="echo_counter", seed=1, version="2.0.0")
    tf = Taskflow("echo_counter")
    tf([{"text": "aaa"}], context=bank("bank-1"))
    tf([{"text": "b"}, {"text": "cc"}], context=bank("bank-2"))
    tf([{"text": "dddd"}, {"text": "e"}, {"text": "f"}])
    tf.reload(counter_v2)
    after = {tenant: tf([{"text": "zz"}], context=bank(tenant)) for tenant in ("bank-1", "bank-2", None, "bank-3")}
    assert {t: seqs(r) for t, r in after.items()} == {"bank-1": [(2, 5)], "bank-2": [(3, 5)], None: [(4, 8)],
                                                      "bank-3": [(1, 2)]}
    assert {r[0].meta.model_version for r in after.values()} == {"2.0.0"}
    assert tf._tenant_pipeline("bank-1")[0].bundle.path == tf.pipeline.bundle.path == counter_v2


class RefusingCounter(echo_plugin().CounterPipeline):
    """A counter whose state cannot be carried over for a tenant that has seen the text 'poison'."""

    def preprocess(self, items):
        self.poisoned = getattr(self, "poisoned", False) or any(i.text == "poison" for i in items)
        return super().preprocess(items)

    def adopt_state(self, previous):
        if getattr(previous, "poisoned", False):
            raise ConfigError("this tenant's state cannot be carried over")
        super().adopt_state(previous)


class Plugins:
    """``refusing_counter`` (see :class:`RefusingCounter`) and ``gated_counter`` (see :class:`GatedCounter`), on
    bundles made for them by the echo plugin's committed script."""

    def __init__(self, root: Path) -> None:
        make = load_make_bundle().make_bundle
        self.bundles = {name: make(root / name, task=name, seed=0, version="1.0.0")
                        for name in ("refusing_counter", "gated_counter")}

    @hookimpl
    def sectorflow_register_tasks(self, register: Any) -> None:
        echo = echo_plugin()
        common = dict(input_model=echo.EchoInput, output_model=echo.CounterResult, stateful=True)
        register(TaskSpec(name="refusing_counter", pipeline=RefusingCounter,
                          default_bundle=self.bundles["refusing_counter"], **common))
        register(TaskSpec(name="gated_counter", pipeline=GatedCounter, default_bundle=self.bundles["gated_counter"],
                          **common))


def test_a_reload_that_fails_for_one_tenant_leaves_every_tenant_on_the_old_model(registry, tmp_path):
    recorder = EventRecorder()
    registry({"echo": echo_plugin(), "mine": Plugins(tmp_path), "recorder": recorder})
    tf = Taskflow("refusing_counter")
    tf([{"text": "a"}], context=bank("bank-1"))
    tf([{"text": "poison"}], context=bank("bank-2"))
    tf([{"text": "b"}])
    before = tf.meta
    with pytest.raises(ConfigError, match="cannot be carried over"):
        tf.reload()  # the same bundle: the new pipeline cannot adopt bank 2's state
    assert tf.meta == before and recorder.kinds()[-1] == "model_load_failed"
    for tenant, expected in (("bank-1", (2, 2)), ("bank-2", (2, 7)), (None, (2, 2))):
        result = tf({"text": "z"}, context=bank(tenant))
        assert (result.seq, result.chars_so_far) == expected and result.meta == before


def test_a_tenant_whose_first_call_fails_keeps_nothing(echo_registry):
    tf = Taskflow("echo_counter")
    slot = tf._tenants.slot("bank-1")
    broken = tf.pipeline.spawn()
    broken.preprocess = lambda items: (_ for _ in ()).throw(RuntimeError("boom"))
    tf._tenants._make = lambda tenant, loaded: broken
    with pytest.raises(RuntimeError, match="boom"):
        tf([{"text": "x"}], context=bank("bank-1"))
    assert tf.tenants() == [] and slot.pipeline is None  # the empty pipeline is not kept
    tf._tenants._make = tf._spawn_tenant
    assert seqs(tf([{"text": "yy"}], context=bank("bank-1"))) == [(1, 2)]


class GatedCounter(echo_plugin().CounterPipeline):
    """A counter whose call holds on the text 'wait' until the test releases it."""

    entered = threading.Event()
    release = threading.Event()

    def preprocess(self, items):
        if any(i.text == "wait" for i in items):
            GatedCounter.entered.set()
            assert GatedCounter.release.wait(30), "never released"
        return super().preprocess(items)


def test_another_tenants_call_does_not_wait_for_a_running_one(registry, tmp_path):
    registry({"echo": echo_plugin(), "mine": Plugins(tmp_path)})
    tf = Taskflow("gated_counter")
    GatedCounter.entered.clear()
    GatedCounter.release.clear()
    held: list[Any] = []
    worker = threading.Thread(target=lambda: held.append(tf({"text": "wait"}, context=bank("bank-1"))))
    worker.start()
    try:
        assert GatedCounter.entered.wait(30)
        # bank 1's call holds bank 1's lock; bank 2 and the default tenant run meanwhile
        assert seqs(tf([{"text": "a"}, {"text": "bb"}], context=bank("bank-2"))) == [(1, 1), (2, 3)]
        assert seqs(tf([{"text": "ccc"}])) == [(1, 3)]
        assert tf._tenants.slot("bank-1").lock.locked() and not held
    finally:
        GatedCounter.release.set()
        worker.join(30)
    assert seqs(held) == [(1, 4)]


def test_concurrent_tenants_give_each_tenants_serial_results(echo_registry):
    """Three tenants, two threads each, calls interleaved: each call is atomic within its tenant, and replaying a
    tenant's calls in the order they ran, on a fresh Taskflow, gives exactly that tenant's results."""
    tf = Taskflow("echo_counter", batch_size=2)
    tenants = ["bank-1", "bank-2", "bank-3"]
    rng = random.Random(7)
    calls = {(t, k): [[{"text": "x" * rng.randint(1, 6)} for _ in range(rng.randint(1, 3))] for _ in range(8)]
             for t in tenants for k in range(2)}
    done: dict[tuple[str, int], list[Any]] = {}
    errors: list[BaseException] = []

    def client(tenant: str, k: int) -> None:
        try:
            done[tenant, k] = [(call, tf(call, context=bank(tenant))) for call in calls[tenant, k]]
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=client, args=key) for key in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    for tenant in tenants:
        ran = sorted((results[0].seq, call, results) for k in range(2) for call, results in done[tenant, k])
        count = sum(len(call) for k in range(2) for call in calls[tenant, k])
        assert [r.seq for _, _, results in ran for r in results] == list(range(1, count + 1))
        replay = Taskflow("echo_counter", batch_size=2)
        assert [seqs(replay(call)) for _, call, _ in ran] == [seqs(results) for _, _, results in ran]
    assert tf.tenants() == tenants and tf.pipeline.seen == 0


def test_spawn_makes_a_loaded_pipeline_with_the_same_settings_and_empty_state(echo_registry):
    tf = Taskflow("echo_counter", batch_size=4, uppercase=True)
    tf([{"text": "abc"}])
    spawned = tf.pipeline.spawn()
    assert type(spawned) is type(tf.pipeline) and spawned is not tf.pipeline
    assert (spawned.seen, spawned.chars) == (0, 0) and (tf.pipeline.seen, tf.pipeline.chars) == (1, 3)
    assert (spawned.batch_size, spawned.options, spawned.bundle, spawned.device) == (
        4, {"uppercase": True}, tf.pipeline.bundle, tf.pipeline.device)
    assert spawned.labels == tf.pipeline.labels
