// Choosing the Python interpreter that runs scripts: --python > TURNKEY_PYTHON > `python3` on
// PATH > /usr/bin/python3, the first that can import torch. A probe runs the candidate (~20 ms
// for a plain interpreter, ~0.4-1.7 s through a pyenv shim), so what it found is remembered in
// <state dir>/interpreters.json, keyed by everything that can change the answer (the candidate
// as named and as resolved, PATH, PYTHONPATH/PYTHONHOME, pyenv's version selection) and
// checked against the files the answer rests on (the interpreter, torch's package files, every
// folder on its sys.path: an install or removal changes their mtime). A stale entry is
// re-probed, never used. Thread-safe.
#pragma once

#include <filesystem>
#include <string>

namespace turnkey {

struct PythonInterpreter {
  // What turnkey executes: the candidate itself, or for a pyenv shim the interpreter the shim
  // selects (same program, without the shim's shell start-up).
  std::string path;
  std::string candidate;       // as chosen: "/root/.pyenv/shims/python3", "venv/bin/python"
  std::string source;          // "--python", "TURNKEY_PYTHON", "PATH", "default"
  std::string python_version;  // "3.11.2"
  std::string torch_version;   // public part: "1.13.0a0"; "" when torch cannot be imported
  std::string onnx_version;    // "" when onnx is not installed there
  // TensorFlow's and Keras's versions from their metadata (not imported): "" when absent there.
  std::string tensorflow_version, keras_version;
  // Opsets its torch.onnx (TorchScript exporter) writes, from torch/onnx/_constants.py: 7-17 for
  // torch 1.13, 7-20 for 2.6. 0 when that file was not found (then nothing is checked early).
  int export_opset_min = 0;
  int export_opset_max = 0;
  bool from_cache = false;  // this process did not run a probe for it
};

// The interpreter for `override_path` (--python; "" for none). Throws Error(InvalidInput)
// naming what was tried when none has torch.
const PythonInterpreter& find_interpreter(const std::string& override_path);

}  // namespace turnkey
