"""``Taskflow``'s own keyword arguments as a user's configuration hands them over: numpy integers, empty strings
from unset environment variables, a wrong probe object. Each is read or refused with a ConfigError saying what to
give, never a message that contradicts itself or a traceback."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sectorflow import ConfigError, Taskflow


def test_numpy_integers_are_integers_for_batch_size_num_threads_and_chunk_size(echo_registry):
    """``batch_size=np.int64(8)`` was refused as "batch_size=8: give an integer from 1 to 65536"."""
    items = [{"text": t} for t in ["a b", "ccc", "dd dd", "e"]]
    reference = [r.model_dump(exclude={"meta"}) for r in Taskflow("echo", batch_size=3)(items)]
    tf = Taskflow("echo", batch_size=np.int64(3), num_threads=np.int32(2))
    assert (tf.batch_size, tf.num_threads) == (3, 2)
    assert type(tf.batch_size) is int and type(tf.num_threads) is int
    assert [r.model_dump(exclude={"meta"}) for r in tf(items)] == reference
    assert [r.model_dump(exclude={"meta"}) for r in tf.stream(items, chunk_size=np.uint8(3))] == reference


@pytest.mark.parametrize("bad", [np.bool_(True), np.float64(8.0)])
def test_numpy_bools_and_floats_are_still_refused(echo_registry, bad):
    with pytest.raises(ConfigError, match=rf"^batch_size={re.escape(repr(bad))}: give an integer from 1 to 65536\.$"):
        Taskflow("echo", batch_size=bad)


def test_chunk_size_zero_is_refused_not_taken_as_the_default(echo_registry):
    with pytest.raises(ConfigError, match=r"^chunk_size=0: give a positive integer \(items held at a time\), or leave "
                                          r"it out for batch_size\.$"):
        list(Taskflow("echo").stream([{"text": "a"}], chunk_size=0))


@pytest.mark.parametrize(("task_path", "word"), [("", "empty"), ("  ", "blank")])
def test_an_empty_task_path_is_refused_before_any_bundle_is_looked_for(echo_registry, task_path, word):
    """``task_path=os.environ.get("MODEL_DIR", "")`` unset: ``Path("")`` is the current folder, and the error read
    ". is not a model bundle: it has no manifest.json"."""
    with pytest.raises(ConfigError) as info:
        Taskflow("echo", task_path=task_path)
    assert str(info.value) == (f"task_path={task_path!r} is {word}: give the path of a model bundle folder, or leave "
                               "it out for the task's own bundle (an empty path is usually an unset environment "
                               "variable in the configuration).")
    assert echo_registry.kinds() == []  # refused before any load was tried
    tf = Taskflow("echo")
    with pytest.raises(ConfigError, match=rf"^task_path={task_path!r} is {word}"):
        tf.reload(task_path)


def test_a_device_probe_that_is_not_one_is_a_config_error_not_an_attribute_error(echo_registry):
    with pytest.raises(ConfigError, match=r"^device_probe=.* \(object\): give a sectorflow\.DeviceProbe \(an object "
                                          r"with the methods gpu_count, custom_devices, xpu_count\)"):
        Taskflow("echo", device="auto", device_probe=object())


@pytest.mark.parametrize("raw", ["", "  ", "four"])
def test_an_empty_or_non_integer_sectorflow_num_threads_says_what_to_give(echo_registry, monkeypatch, raw):
    monkeypatch.setenv("SECTORFLOW_NUM_THREADS", raw)
    with pytest.raises(ConfigError) as info:
        Taskflow("echo")
    assert str(info.value) == (f"SECTORFLOW_NUM_THREADS={raw!r} is not an integer: give one from 1 to 1024 (CPU "
                               "threads of each predictor), or unset it for 1.")
