"""The INT8/ONNX model toolchain behind ``sectorflow models quantize|export|list``.

- :mod:`sectorflow.models.export`: a task's fp32 ``paddle-inference`` bundle to an ONNX bundle (paddle2onnx), checked
  against the Paddle predictor.
- :mod:`sectorflow.models.quantize`: the INT8 ONNX bundle of a task, refused when it loses more than the margin on
  the task's validation set.
- :mod:`sectorflow.models.weight_only`, :mod:`sectorflow.models.onnx_compact`: the steps quantize runs (int8 storage
  of weights ONNX Runtime's quantizer does not cover; a smaller graph text).
- :mod:`sectorflow.models.int8_store`: where INT8 bundles are kept and how ``precision="int8"`` finds them.
- :mod:`sectorflow.models.cli`: the ``sectorflow models`` commands.

The ONNX libraries (``sectorflow[int8]``) are imported only inside the functions that use them, so importing this
package needs the base dependencies only. Running a bundle of format ``onnx`` stays in :mod:`sectorflow.onnx_runtime`.
"""
