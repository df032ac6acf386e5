"""``import_paddle()`` gives every calling thread Paddle's dynamic (eager) mode."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_a_thread_that_did_not_import_paddle_gets_dynamic_mode_from_import_paddle():
    # A fresh interpreter: Paddle first imported by a worker thread (as a Flower simulation's server thread does),
    # then used from the main thread, which Paddle leaves in static mode.
    script = textwrap.dedent("""
        import threading
        threading.Thread(target=lambda: __import__("paddle")).start()
        for t in threading.enumerate():
            if t is not threading.main_thread():
                t.join()
        import paddle
        plain = paddle.in_dynamic_mode()
        from sectorflow import import_paddle
        pd = import_paddle()
        layer = pd.nn.Linear(2, 3)
        print(plain, pd.in_dynamic_mode(), type(layer.weight).__name__)
        out = []
        worker = threading.Thread(target=lambda: out.append(import_paddle().in_dynamic_mode()))
        worker.start(); worker.join()
        print(out[0])
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    first, second = done.stdout.strip().splitlines()[-2:]
    assert first == "False True EagerParamBase"  # Paddle alone leaves the main thread static; import_paddle fixes it
    assert second == "True"  # and any other thread that calls it
