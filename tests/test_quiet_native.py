"""Third-party banners (paddle2onnx's "[Paddle2ONNX] ..." on stdout, onnxruntime's colour-coded warnings on stderr)
do not reach the terminal during ``sectorflow models quantize|export``; a failure keeps them, as a warning."""

from __future__ import annotations

import logging
import os

import pytest

from sectorflow.models.export import quiet_native


def test_native_output_is_kept_off_the_terminal_and_logged_when_the_block_fails(capfd, caplog):
    with caplog.at_level(logging.DEBUG, logger="sectorflow"), quiet_native("tool"):
        os.write(1, b"[Paddle2ONNX] Start parsing the Paddle model file...\n")
        os.write(2, b"\x1b[1;31m2026 [W:onnxruntime] a warning\x1b[m\n")
    assert capfd.readouterr() == ("", "")
    assert caplog.records[-1].levelno == logging.DEBUG
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="sectorflow"), pytest.raises(RuntimeError):
        with quiet_native("paddle2onnx"):
            os.write(2, b"\x1b[1;31mUnsupported operator: foo\x1b[m\n")
            raise RuntimeError("conversion failed")
    assert capfd.readouterr() == ("", "")
    assert [r.getMessage() for r in caplog.records] == ["paddle2onnx said (last lines):\nUnsupported operator: foo"]
    print("after")  # descriptors are back
    assert capfd.readouterr().out == "after\n"
