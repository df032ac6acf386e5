"""The Taskflow runtime on the echo test plugin's real Paddle predictor: calls, streaming, schema, result metadata,
thread safety, task events and hot reload."""

from __future__ import annotations

import hashlib
import json
import random
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from pydantic import BaseModel, ValidationInfo, field_validator

from core_support import ECHO_BUNDLE, EventRecorder, echo_plugin, load_make_bundle
from sectorflow import (
    BundleIntegrityError,
    CallContext,
    ConfigError,
    InvalidInputError,
    ResultMeta,
    Taskflow,
    hookimpl,
    load_pdparams,
)

WORDS = ["alpha", "Beta", "42", "gamma delta", "x", "Ship 7 crates", "   spaced   ", "UPPER lower 123"]


def texts(n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    return [{"text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))} for _ in range(n)]


def dumps(results) -> list[dict]:
    return [r.model_dump(mode="json") for r in results]


# --- calling -------------------------------------------------------------------------------------------------------

def test_one_item_gives_one_result_and_a_list_gives_a_list(echo_registry):
    tf = Taskflow("echo")
    one = tf({"text": "hello world"})
    assert type(one).__name__ == "EchoResult"
    assert one.text == "hello world" and len(one.scores) == 3 and abs(sum(one.scores) - 1) < 1e-6
    as_model = tf(echo_plugin().EchoInput(text="hello world"))
    listed = tf([{"text": "hello world"}, {"text": "bye"}])
    assert isinstance(listed, list) and len(listed) == 2
    assert as_model == one == listed[0]
    assert tf(({"text": "bye"},)) == [listed[1]]
    assert tf([]) == []


def test_invalid_items_are_one_typed_error_listing_every_bad_row(echo_registry):
    with pytest.raises(InvalidInputError) as info:
        Taskflow("echo")([{"text": "ok"}, {"text": ""}, {"txt": "typo"}])
    assert info.value.http_status == 422
    assert [(d["row"], d["field"]) for d in info.value.details] == [(2, "text"), (3, "text")]
    assert "row 2: text: String should have at least 1 character" in str(info.value)


def test_options_reach_the_pipeline_and_unknown_options_are_refused(echo_registry):
    assert Taskflow("echo", uppercase=True)({"text": "Hi there"}).text == "HI THERE"
    with pytest.raises(ConfigError, match=r"has no option\(s\) \['shout'\]; its options are: uppercase"):
        Taskflow("echo", shout=True)
    for bad in (0, 65537, "8"):
        with pytest.raises(ConfigError, match="give an integer from 1 to 65536"):
            Taskflow("echo", batch_size=bad)


def test_batching_lives_in_forward_and_does_not_change_results(echo_registry):
    items = texts(7)
    reference = Taskflow("echo", batch_size=64)(items)
    tf = Taskflow("echo", batch_size=3)
    sizes: list[int] = []
    forward = tf.pipeline.forward
    tf.pipeline.forward = lambda batch: sizes.append(len(batch)) or forward(batch)
    assert dumps(tf(items)) == dumps(reference)
    assert sizes == [3, 3, 1]


def test_stream_keeps_order_and_holds_at_most_one_chunk(echo_registry):
    tf = Taskflow("echo", batch_size=4)
    items = texts(23, seed=1)
    pulled = 0

    def source():
        nonlocal pulled
        for item in items:
            pulled += 1
            yield item

    delivered = 0
    out = []
    for result in tf.stream(source(), chunk_size=5):
        delivered += 1
        assert pulled - delivered < 5  # never more than one chunk read ahead of what was delivered
        out.append(result)
    assert dumps(out) == dumps(tf(items))
    assert list(tf.stream(iter([]))) == []


def test_stream_numbers_bad_rows_across_chunks(echo_registry):
    items = texts(15)
    items[11] = {"text": ""}
    results = Taskflow("echo").stream(items, chunk_size=5)
    assert len([next(results) for _ in range(10)]) == 10
    with pytest.raises(InvalidInputError) as info:
        next(results)
    assert [d["row"] for d in info.value.details] == [12]


def test_schema_is_json_schema_of_input_and_output(echo_registry):
    schema = Taskflow("echo").schema()
    assert schema["task"] == "echo"
    assert schema["input"]["required"] == ["text"]
    assert schema["input"]["properties"]["text"]["minLength"] == 1
    assert schema["output"]["required"] == ["text", "label", "scores"]
    assert set(schema["output"]["properties"]) == {"meta", "text", "label", "scores"}
    assert schema["output"]["$defs"]["ResultMeta"]["required"] == ["task", "plugin"]
    json.dumps(schema)  # JSON-ready


def test_every_result_names_the_bundle_that_answered(echo_registry):
    tf = Taskflow("echo")
    result = tf({"text": "who answered?"})
    manifest = json.loads((ECHO_BUNDLE / "manifest.json").read_text())
    assert result.meta == ResultMeta(
        task="echo", plugin="echo", model_name=manifest["name"], model_version=manifest["version"],
        bundle_sha256=hashlib.sha256((ECHO_BUNDLE / "manifest.json").read_bytes()).hexdigest(),
        device="cpu", precision="fp32")
    assert json.loads(result.model_dump_json())["meta"]["bundle_sha256"] == result.meta.bundle_sha256
    assert "model=echo-linear@1.0.0" in repr(tf)


# --- thread safety -------------------------------------------------------------------------------------------------

def run_threads(n_threads: int, work) -> list:
    barrier = threading.Barrier(n_threads)
    out: list = [None] * n_threads
    errors: list[BaseException] = []

    def body(i: int) -> None:
        try:
            barrier.wait()
            out[i] = work(i)
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    return out


def test_eight_threads_on_one_stateless_taskflow_give_the_serial_results(echo_registry):
    tf = Taskflow("echo", batch_size=2)
    calls = [[texts(1 + (t + c) % 5, seed=100 * t + c) for c in range(12)] for t in range(8)]
    serial = [[dumps(tf(call)) for call in thread_calls] for thread_calls in calls]
    concurrent = run_threads(8, lambda t: [dumps(tf(call)) for call in calls[t]])
    assert concurrent == serial


def test_eight_threads_on_one_stateful_taskflow_equal_a_serial_run_in_the_same_order(echo_registry):
    tf = Taskflow("echo_counter", batch_size=2)
    calls = [[texts(3, seed=100 * t + c) for c in range(6)] for t in range(8)]
    per_thread = run_threads(8, lambda t: [(call, dumps(tf(call))) for call in calls[t]])
    done = sorted(((results[0]["seq"], call, results) for thread in per_thread for call, results in thread),
                  key=lambda entry: entry[0])
    # Each call was atomic: its items got consecutive numbers, and all 144 numbers were handed out once.
    assert [r["seq"] for _, _, results in done for r in results] == list(range(1, 8 * 6 * 3 + 1))
    # Replaying the calls one at a time, in the order they took, gives exactly the same results.
    replay = Taskflow("echo_counter", batch_size=2)
    assert [dumps(replay(call)) for _, call, _ in done] == [results for _, _, results in done]
    replay.reset_state()
    assert replay({"text": "again"}).seq == 1


# --- task events ---------------------------------------------------------------------------------------------------

def test_events_come_in_order_with_the_callers_context(echo_registry):
    tf = Taskflow("echo")
    context = CallContext(actor="alice", tenant="bank-1", source="10.0.0.7", request_id="req-1", channel="http")
    results = tf.run([{"text": "one"}, {"text": "two"}], context=context)
    with pytest.raises(InvalidInputError):
        tf.run([{"text": ""}], context=context)
    events = echo_registry.events
    assert [e.kind for e in events] == ["model_loaded", "call_started", "call_finished", "call_failed"]
    loaded, started, finished, failed = events
    assert loaded.meta == tf.meta and loaded.details["batch_size"] == 32 and loaded.duration_ms >= 0
    assert loaded.context.channel == "python" and loaded.context.actor == "local"
    for event in (started, finished, failed):
        assert event.context is context and event.task == "echo" and event.meta == tf.meta
    assert started.n_items == finished.n_items == 2
    assert [i.text for i in started.inputs] == ["one", "two"] and started.outputs is None
    assert finished.outputs == results and finished.duration_ms >= 0
    assert failed.n_items == 1 and failed.error.startswith("InvalidInputError: ") and failed.inputs is None
    assert started.time <= finished.time <= failed.time


def test_each_call_gets_its_own_request_id_by_default(echo_registry):
    tf = Taskflow("echo")
    tf({"text": "a"})
    tf({"text": "b"})
    ids = [e.context.request_id for e in echo_registry.events if e.kind == "call_started"]
    assert len(ids) == 2 and ids[0] != ids[1] and all(len(i) == 32 for i in ids)


class BrokenPipeline(echo_plugin().EchoPipeline):
    def forward(self, batch):
        raise RuntimeError("the model fell over")


def test_a_failing_pipeline_emits_call_failed_after_call_started(registry):
    from core_support import EventRecorder

    spec = replace(_echo_spec(), pipeline=BrokenPipeline, aliases=())
    recorder = EventRecorder()
    registry({"broken": _plugin(spec), "recorder": recorder})
    with pytest.raises(RuntimeError, match="the model fell over"):
        Taskflow("echo")({"text": "boom"})
    assert recorder.kinds() == ["model_loaded", "call_started", "call_failed"]
    assert recorder.events[-1].error == "RuntimeError: the model fell over"


class InterruptedPipeline(echo_plugin().EchoPipeline):
    def forward(self, batch):
        raise KeyboardInterrupt


def test_a_call_interrupted_by_ctrl_c_still_emits_call_failed_and_the_interrupt_goes_on(registry):
    """KeyboardInterrupt is no Exception: before, an interrupted call left its call_started without an end, so the
    audit log could not tell a Ctrl-C from a crash."""
    from core_support import EventRecorder

    spec = replace(_echo_spec(), pipeline=InterruptedPipeline, aliases=())
    recorder = EventRecorder()
    registry({"interrupted": _plugin(spec), "recorder": recorder})
    with pytest.raises(KeyboardInterrupt):
        Taskflow("echo")({"text": "stop"})
    assert recorder.kinds() == ["model_loaded", "call_started", "call_failed"]
    assert recorder.events[-1].error == "KeyboardInterrupt"


class FailingObserver:
    @hookimpl
    def sectorflow_task_event(self, event):
        if event.kind == "call_finished":
            raise OSError("audit log is full")


def test_an_observer_that_raises_makes_the_call_fail(registry):
    registry({"echo": echo_plugin(), "audit": FailingObserver()})
    tf = Taskflow("echo")
    with pytest.raises(OSError, match="audit log is full"):
        tf({"text": "must be recorded"})


def _echo_spec():
    captured = []
    echo_plugin().sectorflow_register_tasks(register=captured.append)
    return captured[0]


def _plugin(spec):
    class One:
        @hookimpl
        def sectorflow_register_tasks(self, register):
            register(spec)

    return One()


# --- hot reload ----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def second_bundle(tmp_path_factory) -> Path:
    """A bundle with other weights (seed 1) and version 2.0.0, made by the plugin's committed script."""
    return load_make_bundle().make_bundle(tmp_path_factory.mktemp("v2") / "bundle", task="echo", seed=1,
                                          version="2.0.0")


def numpy_scores(bundle: Path, text: str) -> np.ndarray:
    weights = load_pdparams(bundle / "weights.pdparams")
    logits = echo_plugin().features(text) @ weights["linear.weight"] + weights["linear.bias"]
    return np.exp(logits) / np.exp(logits).sum()


def test_reload_swaps_to_a_good_bundle(echo_registry, second_bundle):
    tf = Taskflow("echo")
    old = tf({"text": "reload me"})
    context = CallContext(actor="ops")
    new_meta = tf.reload(second_bundle, context=context)
    new = tf({"text": "reload me"})
    assert new.meta == new_meta == tf.meta
    assert (new_meta.model_version, new_meta.bundle_sha256) == (
        "2.0.0", hashlib.sha256((second_bundle / "manifest.json").read_bytes()).hexdigest())
    np.testing.assert_allclose(old.scores, numpy_scores(ECHO_BUNDLE, "reload me"), rtol=1e-5)
    np.testing.assert_allclose(new.scores, numpy_scores(second_bundle, "reload me"), rtol=1e-5)
    assert not np.allclose(old.scores, new.scores)
    kinds = [(e.kind, e.meta.model_version, e.context.actor) for e in echo_registry.events if e.kind.startswith("model")]
    assert kinds == [("model_loaded", "1.0.0", "local"), ("model_loaded", "2.0.0", "ops"),
                     ("model_unloaded", "1.0.0", "ops")]


def test_reload_of_a_corrupt_bundle_raises_and_keeps_the_old_one_serving(echo_registry, second_bundle, tmp_path):
    import shutil

    corrupt = tmp_path / "corrupt"
    shutil.copytree(second_bundle, corrupt)
    (corrupt / "model.pdiparams").write_bytes(b"\0" * 110)
    tf = Taskflow("echo")
    before_meta, before = tf.meta, tf({"text": "still here"})
    with pytest.raises(BundleIntegrityError, match="model.pdiparams"):
        tf.reload(corrupt)
    assert tf.meta == before_meta
    assert tf({"text": "still here"}) == before
    assert echo_registry.kinds()[-4:] == ["call_finished", "model_load_failed", "call_started", "call_finished"]


def test_reload_while_eight_threads_call_never_mixes_bundles(echo_registry, second_bundle):
    tf = Taskflow("echo")
    expected = {m: dumps([r])[0] for m, r in (("1.0.0", tf({"text": "swap"})),)}
    stop = threading.Event()

    def caller(_: int) -> list:
        seen = []
        while not stop.is_set() or len(seen) < 5:
            seen.append(dumps([tf({"text": "swap"})])[0])
        return seen

    def swapper() -> None:
        try:
            for path in (second_bundle, ECHO_BUNDLE, second_bundle):
                tf.reload(path)
        finally:
            stop.set()

    threading.Thread(target=swapper).start()
    seen = [r for batch in run_threads(8, caller) for r in batch]
    tf.reload(second_bundle)
    expected["2.0.0"] = dumps([tf({"text": "swap"})])[0]
    assert {r["meta"]["model_version"] for r in seen} <= {"1.0.0", "2.0.0"}
    for result in seen:  # scores always come from the bundle the metadata names
        assert result == expected[result["meta"]["model_version"]]


def test_thread_count_comes_from_the_argument_or_sectorflow_num_threads(echo_registry, monkeypatch):
    monkeypatch.setenv("SECTORFLOW_NUM_THREADS", "3")
    assert Taskflow("echo").num_threads == 3
    assert Taskflow("echo", num_threads=2).num_threads == 2
    monkeypatch.setenv("SECTORFLOW_NUM_THREADS", "many")
    with pytest.raises(ConfigError, match="SECTORFLOW_NUM_THREADS='many' is not an integer"):
        Taskflow("echo")


def test_reload_of_a_bundle_paddle_cannot_parse_is_a_bundle_error_with_an_event(echo_registry, second_bundle,
                                                                                 tmp_path):
    """Hashes that match but a program Paddle cannot read: a typed BundleError and a model_load_failed event."""
    import shutil

    from sectorflow import BundleError, write_manifest

    broken = tmp_path / "broken"
    shutil.copytree(second_bundle, broken)
    (broken / "model.json").write_text('{"not": "a program"}')
    manifest = json.loads((broken / "manifest.json").read_text())
    (broken / "manifest.json").unlink()
    write_manifest(broken, **{k: v for k, v in manifest.items() if k != "files"})
    tf = Taskflow("echo")
    before = tf({"text": "still here"})
    with pytest.raises(BundleError, match="failed to load") as caught:
        tf.reload(broken)
    assert not isinstance(caught.value, BundleIntegrityError)
    assert tf({"text": "still here"}) == before
    failed = [e for e in echo_registry.events if e.kind == "model_load_failed"]
    assert len(failed) == 1 and failed[0].details["task_path"] == str(broken)


def test_meta_is_set_like_a_field_the_pipeline_set(echo_registry):
    """The runtime sets ``meta`` without pydantic's __setattr__; it must still count as a set field."""
    result = Taskflow("echo")({"text": "x"})
    dumped = result.model_dump(exclude_unset=True)
    assert dumped["meta"]["task"] == "echo" and dumped["meta"]["bundle_sha256"] == result.meta.bundle_sha256
    assert type(result).model_validate_json(result.model_dump_json()) == result


def test_reload_of_a_stateful_task_keeps_its_state(echo_registry, tmp_path):
    """A model swap must not forget the task's history: the counter goes on where the old pipeline stopped."""
    counter_v2 = load_make_bundle().make_bundle(tmp_path / "counter_v2", task="echo_counter", seed=1, version="2.0.0")
    tf = Taskflow("echo_counter")
    assert [r.seq for r in tf([{"text": "a"}, {"text": "bb"}])] == [1, 2]
    tf.reload(counter_v2)
    after = tf({"text": "ccc"})
    assert (after.seq, after.chars_so_far, after.meta.model_version) == (3, 6, "2.0.0")


def test_an_item_of_the_wrong_type_is_named_by_row_without_a_field():
    from pydantic import BaseModel

    from sectorflow.validation import validate_items

    class Item(BaseModel):
        text: str

    with pytest.raises(InvalidInputError) as info:
        validate_items(Item, [{"text": "ok"}, 123], first_row=1)
    assert "row 2: got int: give a dict of Item's fields or an instance of Item." in info.value.message
    assert "None" not in info.value.message
    assert info.value.details == [{"row": 2, "field": None, "reason": info.value.details[0]["reason"]}]


class LengthSortedPipeline(echo_plugin().EchoPipeline):
    """The echo model with a batch key: features carry their text's length, forward records the lengths it got."""

    seen: list[list[int]] = []

    def preprocess(self, items):
        return [(len(item.text), f) for item, f in zip(items, super().preprocess(items))]

    def batch_key(self, feature):
        return feature[0]

    def forward(self, batch):
        type(self).seen.append([n for n, _ in batch])
        return super().forward([f for _, f in batch])


def test_a_batch_key_groups_similar_items_into_batches_and_keeps_the_output_order(registry):
    items = [{"text": "x" * n} for n in (9, 1, 7, 3, 8, 2, 6, 4)]
    registry({"echo": _plugin(_echo_spec())})
    reference = [{k: v for k, v in r.items() if k != "meta"} for r in dumps(Taskflow("echo", batch_size=64)(items))]
    registry({"sorted": _plugin(replace(_echo_spec(), pipeline=LengthSortedPipeline, aliases=()))})
    LengthSortedPipeline.seen = []
    results = Taskflow("echo", batch_size=3)(items)
    assert [{k: v for k, v in r.items() if k != "meta"} for r in dumps(results)] == reference  # input order
    assert LengthSortedPipeline.seen == [[1, 2, 3], [4, 6, 7], [8, 9]]
    LengthSortedPipeline.seen = []
    Taskflow("echo", batch_size=8)(items)  # one batch: nothing to sort
    assert LengthSortedPipeline.seen == [[9, 1, 7, 3, 8, 2, 6, 4]]


# --- validation context from the task options (TaskSpec.input_context) ---------------------------------------------

class PrefixedInput(BaseModel):
    """An echo input whose validator reads the validation context: ``prefix`` is put before the text."""

    text: str

    @field_validator("text")
    @classmethod
    def _prefixed(cls, value: str, info: ValidationInfo) -> str:
        prefix = (info.context or {}).get("prefix")
        return f"{prefix}{value}" if prefix else value


def _prefix_context(options):
    prefix = options.get("prefix")
    if prefix is not None and not isinstance(prefix, str):
        raise ConfigError(f"prefix={prefix!r}: give a string.")
    return {} if prefix is None else {"prefix": prefix}


def test_input_context_from_options_reaches_validation_of_raw_items_only(registry):
    spec = replace(_echo_spec(), input_model=PrefixedInput, context_from_options=_prefix_context,
                   options={**_echo_spec().options, "prefix": "text put before each raw item"})
    registry({"echo": _plugin(spec)})
    tf = Taskflow("echo", prefix=">> ")
    assert tf.input_context == {"prefix": ">> "}
    assert tf({"text": "abc"}).text == ">> abc"
    assert [r.text for r in tf.stream([{"text": "x"}, {"text": "y"}], chunk_size=1)] == [">> x", ">> y"]
    # an item that is already a validated input model is taken as it is
    assert tf(PrefixedInput(text="done")).text == "done"
    assert Taskflow("echo").input_context == {}
    assert Taskflow("echo")({"text": "abc"}).text == "abc"
    with pytest.raises(ConfigError, match="prefix=3: give a string"):
        Taskflow("echo", prefix=3)


def test_tasks_without_input_context_have_none(echo_registry):
    assert Taskflow("echo").input_context is None


# --- arguments and inputs a user gets wrong (fresh-user pass) -------------------------------------------------------

def test_a_misspelt_option_or_keyword_is_named_with_the_closest_real_one(echo_registry):
    with pytest.raises(ConfigError) as info:
        Taskflow("echo", upercase=True)
    assert info.value.message == ("Task 'echo' has no option(s) ['upercase'] ('upercase': did you mean 'uppercase'?); "
                                  "its options are: uppercase.")
    assert info.value.details == {"unknown": ["upercase"], "options": ["uppercase"]}
    with pytest.raises(ConfigError, match=r"\('batchsize': did you mean 'batch_size'\?\)"):
        Taskflow("echo", batchsize=8)
    with pytest.raises(ConfigError, match=r"\('Num_Threads': did you mean 'num_threads'\?\)"):
        Taskflow("echo", Num_Threads=2)
    with pytest.raises(ConfigError, match=r"has no option\(s\) \['colour'\]; its options"):  # nothing close
        Taskflow("echo", colour="red")


@pytest.mark.parametrize("bad", [0, -1, 1025, 10**9, 1.5, "2", True])
def test_num_threads_outside_1_to_1024_or_not_an_integer_is_refused(echo_registry, bad):
    with pytest.raises(ConfigError, match=r"give an integer from 1 to 1024 \(CPU threads"):
        Taskflow("echo", num_threads=bad)


def test_num_threads_and_batch_size_that_are_integers_pass_and_bools_do_not(echo_registry):
    tf = Taskflow("echo", num_threads=2, batch_size=1)
    assert (tf.num_threads, tf.pipeline.num_threads, tf.batch_size) == (2, 2, 1)
    with pytest.raises(ConfigError, match=r"batch_size=True: give an integer from 1 to 65536"):
        Taskflow("echo", batch_size=True)


def test_precision_in_capitals_is_read_and_a_non_string_task_path_is_a_config_error(echo_registry):
    assert Taskflow("echo", precision=" FP32 ").precision == "fp32"
    assert Taskflow("echo", precision="FP32")({"text": "hi"}).meta.precision == "fp32"
    with pytest.raises(ConfigError, match=r"task_path=3 \(int\): give the path of a model bundle folder"):
        Taskflow("echo", task_path=3)


def test_a_generator_or_map_is_a_list_of_items_and_a_set_is_refused(echo_registry):
    tf = Taskflow("echo")
    expected = dumps(tf([{"text": "a b"}, {"text": "ccc"}]))
    assert dumps(tf({"text": t} for t in ["a b", "ccc"])) == expected
    assert dumps(tf(map(lambda t: {"text": t}, ["a b", "ccc"]))) == expected
    assert dumps(tf.run({"text": "a b"})) == expected[:1]  # one item given to run() is a list of one
    assert dumps(tf.stream({"text": "ccc"})) == expected[1:]  # and to stream(): not its keys one by one
    assert tf(iter([])) == []
    with pytest.raises(InvalidInputError, match=r"Got a set of 2 item\(s\): give a list, so that result i answers "
                                                 r"item i \(a set has no order\)"):
        tf({"x", "y"})
    with pytest.raises(ConfigError, match=r"chunk_size=-1: give a positive integer"):
        list(tf.stream([{"text": "a"}], chunk_size=-1))


def test_a_lone_surrogate_in_a_text_says_how_to_fix_it(echo_registry):
    with pytest.raises(InvalidInputError) as info:
        Taskflow("echo")([{"text": "ok"}, {"text": "bad \udcff byte"}])
    (problem,) = info.value.details
    assert (problem["row"], problem["field"]) == (2, "text")
    assert problem["reason"].startswith("contains an unpaired surrogate (e.g. '\\udcff'")
    assert "decode the source as UTF-8" in problem["reason"]


def test_a_context_that_is_no_call_context_and_a_bad_reload_path_are_config_errors(echo_registry):
    tf = Taskflow("echo")
    for call in (lambda: tf({"text": "hi"}, context="dr.li"), lambda: tf.run([{"text": "hi"}], context={"actor": "x"}),
                 lambda: tf.reload(context="dr.li")):
        with pytest.raises(ConfigError, match=r"give a sectorflow.CallContext, e.g. CallContext\(actor='dr.li'"):
            call()
    assert "call_started" not in [e.kind for e in echo_registry.events if e.kind != "model_loaded"]
    with pytest.raises(ConfigError, match=r"task_path=3 \(int\): give the path of a model bundle folder"):
        tf.reload(3)
    assert tf({"text": "hi"}, context=CallContext(actor="dr.li")).text == "hi"  # still serving


@pytest.mark.parametrize(("raw", "expected"), [("2", 2), ("0", 1), ("1025", None), ("abc", None)])
def test_sectorflow_num_threads_is_read_and_bounded(echo_registry, monkeypatch, raw, expected):
    monkeypatch.setenv("SECTORFLOW_NUM_THREADS", raw)
    if expected is None:
        with pytest.raises(ConfigError, match=rf"SECTORFLOW_NUM_THREADS='{raw}'"):
            Taskflow("echo")
    else:
        assert Taskflow("echo").num_threads == expected


def test_a_pipeline_that_fails_on_an_option_value_names_the_options_in_its_error(echo_registry, monkeypatch):
    """aml's thresholds=3 failed inside the plugin with "'int' object is not iterable", reported as a model bundle
    that failed to load, without a word about the option."""
    from sectorflow import BundleError

    class Choking(echo_plugin().EchoPipeline):
        def load(self):
            iter(self.options["uppercase"])  # a plugin's own unchecked option use

    from dataclasses import replace as replace_spec

    from sectorflow import plugins

    monkeypatch.setitem(plugins.registered_tasks(), "echo", replace_spec(plugins.get_task("echo"), pipeline=Choking))
    with pytest.raises(BundleError) as caught:
        Taskflow("echo", uppercase=3)
    assert "failed to load with option(s) uppercase: TypeError: 'int' object is not iterable; check those options" \
        in caught.value.message
    assert caught.value.details["options"] == ["uppercase"]


def test_a_key_that_a_lenient_input_model_ignores_is_named_once_with_the_closest_field(caplog):
    """aml's Transaction ignores unknown keys (pydantic's default): {"sender_contry": "KP"} lost the high-risk-
    jurisdiction alert without a word. validate_items now logs each such key once per model."""
    from pydantic import BaseModel, Field

    from sectorflow.validation import validate_items

    class Payment(BaseModel):
        amount: float
        sender_country: str | None = None
        bank: str | None = Field(default=None, alias="bank_code")

    with caplog.at_level("WARNING", logger="sectorflow.taskflow"):
        first = validate_items(Payment, [{"amount": 1, "sender_contry": "KP"}, {"amount": 2, "bank_code": "B"}])
        validate_items(Payment, [{"amount": 3, "sender_contry": "KP", "memo": "rent"}])
        validate_items(Payment, [{"amount": 4, "sender_contry": "KP", "memo": "rent"}])
    assert [p.sender_country for p in first] == [None, None] and first[1].bank == "B"
    assert [r.getMessage() for r in caplog.records] == [
        "Payment: 'sender_contry' (did you mean 'sender_country'?) is not a field and was ignored; its fields: "
        "amount, sender_country, bank.",
        "Payment: 'memo' is not a field and was ignored; its fields: amount, sender_country, bank.",
    ]


def test_instances_are_taken_without_the_model_key_lookup_and_a_later_dict_is_still_checked(caplog, monkeypatch):
    """``sectorflow run`` validates each row alone and the typed aml readers yield model instances: the lookup of
    the model's keys (for the ignored-key warning) ran once per row, about 3 % of a run. It now runs at the first
    item that is no instance; the warning for a dict after instances is unchanged."""
    from pydantic import BaseModel

    from sectorflow import validation

    class Payment(BaseModel):
        amount: float
        sender_country: str | None = None

    given = [Payment(amount=1), Payment(amount=2)]
    real = validation._known_keys

    def refused(model):  # noqa: ANN001, ANN202
        raise AssertionError("the keys of a model were looked up for instances alone")

    monkeypatch.setattr(validation, "_known_keys", refused)
    out = validation.validate_items(Payment, given)
    assert out == given and all(a is b for a, b in zip(out, given))
    monkeypatch.setattr(validation, "_known_keys", real)
    with caplog.at_level("WARNING", logger="sectorflow.taskflow"):
        mixed = validation.validate_items(Payment, [given[0], {"amount": 3, "sender_contry": "KP"}])
    assert mixed[0] is given[0] and mixed[1].amount == 3.0 and mixed[1].sender_country is None
    assert [r.getMessage() for r in caplog.records] == [
        "Payment: 'sender_contry' (did you mean 'sender_country'?) is not a field and was ignored; its fields: "
        "amount, sender_country."]
