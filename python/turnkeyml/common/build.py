"""Build constants the reference tool's documents name (`turnkey.common.build.DEFAULT_ONNX_OPSET`).

The C++ core holds the same default (src/stages/export_pytorch.cpp); TURNKEY_ONNX_OPSET overrides it per
run, --onnx-opset / onnx_opset= per call.
"""

DEFAULT_ONNX_OPSET = 17
