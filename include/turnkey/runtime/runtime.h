// Runtime registry: every runtime is one entry in one table (runtime_registry.cpp), looked up by
// name, with a probe() that says why it is unavailable. A Session holds a loaded model with its
// inputs bound; run() performs exactly one inference and nothing else, so the measurement loop
// can time it. Sessions are not thread-safe.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "turnkey/common/tensor.h"

namespace turnkey {

struct Availability {
  bool available = false;
  std::string reason;  // why not, when !available ("needs PyTorch >= 2.0, found 1.13.1")
};

struct RuntimeOptions {
  std::string device = "x86";
  int threads = 0;                                  // intra-op threads; 0 = physical cores
  std::map<std::string, std::string> runtime_args;  // runtime-specific (--rt-args key=value)
};

class Session {
 public:
  virtual ~Session() = default;
  virtual void run() = 0;  // one inference on the bound inputs; throws Error(Runtime)
  // Outputs of the last run(), copied to host (for correctness checks; never in the timed loop).
  virtual std::vector<HostTensor> outputs() { return {}; }
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual std::string name() const = 0;          // CLI name: "ort"
  virtual std::string display_name() const = 0;  // "ONNX Runtime"
  virtual std::vector<std::string> devices() const = 0;
  virtual Availability probe() const = 0;
  virtual std::string version() const = 0;
  virtual std::unique_ptr<Session> load(const std::filesystem::path& onnx_path,
                                        const std::vector<HostTensor>& inputs,
                                        const RuntimeOptions& options) const = 0;
};

// All runtimes, in registration order. Never null entries.
const std::vector<const Runtime*>& runtime_registry();
// nullptr when no runtime has that name.
const Runtime* find_runtime(const std::string& name);
std::vector<std::string> runtime_names();

}  // namespace turnkey
