// The openvino runtime's module (turnkey_openvino.so, see
// include/turnkey/runtime/runtime_module.h): everything that touches OpenVINO, loaded only when a
// run uses openvino, so that turnkey builds and starts without it. The ONNX file is read by
// OpenVINO's ONNX frontend and compiled for its CPU plugin with a performance hint: LATENCY for one
// request, THROUGHPUT (streams chosen by OpenVINO) when requests are in flight; each caller gets an
// infer request of its own.
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <openvino/frontend/manager.hpp>
#include <openvino/op/parameter.hpp>
#include <openvino/op/relu.hpp>
#include <openvino/openvino.hpp>

#include "openvino_options.h"
#include "openvino_tensors.h"
#include "turnkey/common/error.h"
#include "turnkey/runtime/runtime_module.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One Core per process: it holds the loaded plugins and frontends.
ov::Core& core() {
  static ov::Core c;
  return c;
}

// The process's one-time start, out of any model's load time and memory: the CPU plugin (on a
// one-node model) and the ONNX frontend.
void initialize() {
  static std::once_flag once;
  std::call_once(once, [] {
    try {
      auto x = std::make_shared<ov::op::v0::Parameter>(ov::element::f32, ov::Shape{1});
      auto relu = std::make_shared<ov::op::v0::Relu>(x);
      auto model = std::make_shared<ov::Model>(ov::OutputVector{relu}, ov::ParameterVector{x});
      ov::CompiledModel warm = core().compile_model(model, "CPU");
      warm.create_infer_request().infer();
      ov::frontend::FrontEndManager().load_by_framework("onnx");
    } catch (const std::exception& e) {
      throw Error(ErrorKind::Runtime, "OpenVINO could not start: " + first_line(e.what()));
    }
  });
}

// The ONNX graph's inputs, reshaped to the prepared tensors' shapes where a dimension is
// dynamic (benchmark_app -shape does the same), unless reshape=false keeps them dynamic.
bool make_static(ov::Model& model, const std::vector<HostTensor>& inputs) {
  std::map<ov::Output<ov::Node>, ov::PartialShape> shapes;
  bool dynamic = false;
  for (ov::Output<ov::Node>& in : model.inputs()) {
    const HostTensor& t = inputs[openvino_tensors::prepared_input(in.get_names(), inputs)];
    dynamic = dynamic || in.get_partial_shape().is_dynamic();
    shapes[in] = ov::PartialShape(std::vector<ov::Dimension>(t.shape.begin(), t.shape.end()));
  }
  if (dynamic) model.reshape(shapes);
  return dynamic;
}

class OpenVinoSession final : public Session {
 public:
  OpenVinoSession(const fs::path& path, const std::vector<HostTensor>& inputs,
                  const RuntimeOptions& options)
      : inputs_(inputs), settings_(openvino_options::parse(options)) {
    const auto read_start = Clock::now();
    std::shared_ptr<ov::Model> model = core().read_model(path.string());
    if (settings_.reshape) reshaped_ = make_static(*model, inputs_);
    read_s_ = seconds_since(read_start);
    const auto compile_start = Clock::now();
    compiled_ = core().compile_model(model, "CPU", openvino_options::compile_config(settings_));
    compile_s_ = seconds_since(compile_start);
    for (const ov::Output<const ov::Node>& in : compiled_.inputs()) {
      HostTensor& t = inputs_[openvino_tensors::prepared_input(in.get_names(), inputs_)];
      input_tensors_.push_back(openvino_tensors::wrap(t));
    }
    request_ = new_request();
  }

  void run() override { infer(request_); }
  std::vector<HostTensor> outputs() override { return read_outputs(request_); }
  nlohmann::json stats() const override;
  OpProfile profile(int calls, const fs::path& raw_file) override;
  std::unique_ptr<Session> caller() override;

  ov::InferRequest new_request() {
    ov::InferRequest r = compiled_.create_infer_request();
    const auto ports = compiled_.inputs();
    for (size_t i = 0; i < ports.size(); ++i) r.set_tensor(ports[i], input_tensors_[i]);
    return r;
  }
  static void infer(ov::InferRequest& r) {
    try {
      r.infer();
    } catch (const std::exception& e) {
      throw Error(ErrorKind::Runtime, first_line(e.what()));
    }
  }
  std::vector<HostTensor> read_outputs(ov::InferRequest& r) {
    std::vector<HostTensor> out;
    const auto ports = compiled_.outputs();
    for (size_t i = 0; i < ports.size(); ++i) {
      // Outputs are matched by position (the ONNX graph's order); a name is for messages.
      const std::string name =
          ports[i].get_names().empty() ? fmt::format("output_{}", i) : ports[i].get_any_name();
      out.push_back(openvino_tensors::to_host(r.get_tensor(ports[i]), name));
    }
    return out;
  }

 private:
  std::vector<HostTensor> inputs_;  // owns the bytes the input tensors point into
  openvino_options::Settings settings_;
  ov::CompiledModel compiled_;
  std::vector<ov::Tensor> input_tensors_;  // shared, read-only, by every request
  ov::InferRequest request_;
  double read_s_ = 0, compile_s_ = 0;
  bool reshaped_ = false;
};

// Another caller: an infer request of its own on the owner's compiled model, the owner's input
// tensors (read-only). Under the THROUGHPUT hint OpenVINO runs requests on its streams at once.
class OpenVinoCaller final : public Session {
 public:
  explicit OpenVinoCaller(OpenVinoSession& owner) : owner_(owner), request_(owner.new_request()) {}
  void run() override { OpenVinoSession::infer(request_); }
  std::vector<HostTensor> outputs() override { return owner_.read_outputs(request_); }

 private:
  OpenVinoSession& owner_;
  ov::InferRequest request_;
};

std::unique_ptr<Session> OpenVinoSession::caller() {
  return std::make_unique<OpenVinoCaller>(*this);
}

json OpenVinoSession::stats() const {
  json s = openvino_options::compiled_facts(compiled_);
  s["openvino_read_s"] = read_s_;
  s["openvino_compile_s"] = compile_s_;
  s["openvino_reshaped"] = reshaped_;
  return s;
}

OpProfile OpenVinoSession::profile(int calls, const fs::path& raw_file) {
  if (!settings_.profiling) {
    throw Error(ErrorKind::Internal, "openvino: profile() on a session compiled without profiling");
  }
  infer(request_);  // warm-up, not counted
  std::vector<std::vector<ov::ProfilingInfo>> per_call;
  double run_ms = 0;  // the calls alone, not the reading of their counters
  for (int i = 0; i < calls; ++i) {
    const auto start = Clock::now();
    infer(request_);
    run_ms += seconds_since(start) * 1000.0;
    per_call.push_back(request_.get_profiling_info());  // the last call's counters
  }
  OpProfile p = openvino_tensors::sum_profile(per_call, raw_file);
  p.run_ms = run_ms;
  return p;
}

std::unique_ptr<Session> open_session(const fs::path& model, const std::vector<HostTensor>& inputs,
                                      const RuntimeOptions& options) {
  try {
    return std::make_unique<OpenVinoSession>(model, inputs, options);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(ErrorKind::Runtime, "OpenVINO could not load the model: " + first_line(e.what()));
  }
}

// "2026.4.1-22982" of the build number "2026.4.1-22982-e213a147257-releases/2026/4".
const char* library_version() {
  static const std::string v = [] {
    std::string build = ov::get_openvino_version().buildNumber;
    const size_t first = build.find('-');
    const size_t second = first == std::string::npos ? first : build.find('-', first + 1);
    return second == std::string::npos ? build : build.substr(0, second);
  }();
  return v.c_str();
}

}  // namespace

}  // namespace turnkey

extern "C" __attribute__((visibility("default"))) const turnkey::RuntimeModule*
turnkey_runtime_module_v1() {
  static const turnkey::RuntimeModule module{turnkey::kRuntimeModuleAbi, "openvino",
                                             turnkey::library_version(), &turnkey::open_session,
                                             &turnkey::initialize};
  return &module;
}
