// The torchscript runtime's module (turnkey_torchscript.so, see include/turnkey/runtime/runtime_module.h):
// everything that touches LibTorch, loaded only when a run uses torchscript, so that no other
// command pays LibTorch's start-up (~0.65 s, ~165 MB with Debian's build).
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/script.h>
#include <torch/version.h>

#include <chrono>
#include <cstring>

#include "turnkey/common/error.h"
#include "turnkey/runtime/runtime_module.h"

namespace turnkey {

namespace fs = std::filesystem;

namespace {

bool parse_bool_arg(const std::string& key, const std::string& value) {
  if (value == "true" || value == "1" || value == "True") return true;
  if (value == "false" || value == "0" || value == "False") return false;
  throw Error(ErrorKind::InvalidInput,
              fmt::format("torchscript: {}={} is not true or false", key, value));
}

c10::ScalarType to_torch(DType d) {
  switch (d) {
    case DType::Float32:
      return torch::kFloat32;
    case DType::Float16:
      return torch::kFloat16;
    case DType::Float64:
      return torch::kFloat64;
    case DType::Int8:
      return torch::kInt8;
    case DType::Uint8:
      return torch::kUInt8;
    case DType::Int16:
      return torch::kInt16;
    case DType::Int32:
      return torch::kInt32;
    case DType::Int64:
      return torch::kInt64;
    case DType::Bool:
      return torch::kBool;
    case DType::BFloat16:
      return torch::kBFloat16;
    default:  // LibTorch 1.13 has no uint16/32/64, strings or float8
      break;
  }
  // dtype_name lives in tk_common, which this module does not link.
  throw Error(ErrorKind::InvalidInput,
              "torchscript: an input has an element type LibTorch 1.13 lacks (unsigned above 8 "
              "bits, string, float8) or none");
}

DType from_torch(c10::ScalarType t) {
  switch (t) {
    case torch::kFloat32:
      return DType::Float32;
    case torch::kFloat16:
      return DType::Float16;
    case torch::kFloat64:
      return DType::Float64;
    case torch::kInt8:
      return DType::Int8;
    case torch::kUInt8:
      return DType::Uint8;
    case torch::kInt16:
      return DType::Int16;
    case torch::kInt32:
      return DType::Int32;
    case torch::kInt64:
      return DType::Int64;
    case torch::kBool:
      return DType::Bool;
    default:
      return DType::Unknown;
  }
}

void collect_tensors(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) {
    out.push_back(v.toTensor());
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) collect_tensors(e, out);
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) collect_tensors(e, out);
  } else if (v.isGenericDict()) {
    for (const auto& kv : v.toGenericDict()) collect_tensors(kv.value(), out);
  }
}

class TorchScriptSession final : public Session {
 public:
  TorchScriptSession(const fs::path& module_path, const std::vector<HostTensor>& inputs,
                     const RuntimeOptions& options) {
    bool freeze = false, optimize = false;
    for (const auto& [key, value] : options.runtime_args) {
      if (key == "freeze") {
        freeze = parse_bool_arg(key, value);
      } else if (key == "optimize" || key == "optimize_for_inference") {
        optimize = parse_bool_arg(key, value);
      } else {
        throw Error(ErrorKind::InvalidInput,
                    fmt::format("torchscript: unknown runtime argument '{}' (known: freeze, "
                                "optimize)",
                                key));
      }
    }
    if (options.threads > 0) at::set_num_threads(options.threads);
    const auto load_start = std::chrono::steady_clock::now();
    try {
      module_ = torch::jit::load(module_path.string());
      module_.eval();
      if (freeze || optimize) module_ = torch::jit::freeze(module_);
      if (optimize) module_ = torch::jit::optimize_for_inference(module_);
    } catch (const c10::Error& e) {
      throw Error(ErrorKind::Runtime,
                  "LibTorch could not load the traced module: " + first_line(e.what()));
    }
    jit_load_s_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
    for (const HostTensor& t : inputs) {
      at::Tensor tensor = torch::from_blob(const_cast<std::byte*>(t.data.data()), t.shape,
                                           torch::TensorOptions().dtype(to_torch(t.dtype)))
                              .clone();
      inputs_.emplace_back(std::move(tensor));
    }
  }

  void run() override {
    try {
      c10::InferenceMode guard;
      last_ = module_.forward(inputs_);
    } catch (const c10::Error& e) {
      throw Error(ErrorKind::Runtime, first_line(e.what()));
    }
  }

  void release_outputs() override { last_ = c10::IValue(); }

  // The load alone (torch::jit::load, freeze, optimize); the runtime's load_s adds the trace.
  nlohmann::json stats() const override { return {{"jit_load_s", jit_load_s_}}; }

  // LibTorch's Module::forward may run on several threads at once: a caller shares the module
  // (a handle to the same object) and the input tensors, read-only, with its own outputs.
  std::unique_ptr<Session> caller() override {
    return std::unique_ptr<Session>(new TorchScriptSession(*this));
  }

  std::vector<HostTensor> outputs() override {
    std::vector<at::Tensor> tensors;
    collect_tensors(last_, tensors);
    std::vector<HostTensor> out;
    for (size_t i = 0; i < tensors.size(); ++i) {
      at::Tensor t = tensors[i].contiguous().cpu();
      HostTensor h;
      h.name = fmt::format("output_{}", i);
      h.dtype = from_torch(t.scalar_type());
      h.shape = t.sizes().vec();
      const size_t bytes = t.numel() * t.element_size();
      h.data.resize(bytes);
      if (bytes) std::memcpy(h.data.data(), t.data_ptr(), bytes);
      out.push_back(std::move(h));
    }
    return out;
  }

 private:
  torch::jit::Module module_;
  std::vector<c10::IValue> inputs_;
  c10::IValue last_;
  double jit_load_s_ = 0;

  TorchScriptSession(const TorchScriptSession& other)
      : Session(), module_(other.module_), inputs_(other.inputs_), jit_load_s_(other.jit_load_s_) {}
};


std::unique_ptr<Session> open_session(const fs::path& module_path,
                                      const std::vector<HostTensor>& inputs,
                                      const RuntimeOptions& options) {
  return std::make_unique<TorchScriptSession>(module_path, inputs, options);
}

}  // namespace

}  // namespace turnkey

extern "C" __attribute__((visibility("default"))) const turnkey::RuntimeModule*
turnkey_runtime_module_v1() {
  static const turnkey::RuntimeModule module{turnkey::kRuntimeModuleAbi, "torchscript",
                                             TORCH_VERSION, &turnkey::open_session};
  return &module;
}
