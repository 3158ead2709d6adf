// Example turnkey runtime plugin: OpenCV's DNN module running ONNX files on the CPU, registered
// as runtime "opencv-dnn" (docs/plugins.md). It uses nothing of turnkey but the C ABI header, as
// a plugin built outside this repository would.
//
// OpenCV reports failures as C++ exceptions: every entry point catches them, because nothing may
// unwind across the C ABI.
#include <cstdio>
#include <cstring>
#include <exception>
#include <opencv2/core.hpp>
#include <opencv2/core/utility.hpp>
#include <opencv2/core/utils/logger.hpp>
#include <opencv2/dnn.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "turnkey/plugin/turnkey_plugin.h"

namespace {

struct Output {
  std::string name;
  cv::Mat mat;
  std::vector<int64_t> shape;
};

}  // namespace

struct turnkey_session {
  cv::dnn::Net net;
  std::vector<cv::Mat> inputs;  // our copies: OpenCV may keep pointers into them
  std::vector<std::string> output_names;
  std::vector<cv::Mat> last;
  std::vector<Output> outputs;  // of the last run, filled on request
};

namespace {

void set_message(char* buffer, size_t size, const std::string& text) {
  if (!buffer || size == 0) return;
  std::snprintf(buffer, size, "%s", text.c_str());
}

// cv::Exception::what() is "OpenCV(4.6.0) /path/file.cpp:123: error: (-215:...) ..." over
// several lines; its `err` is the part a user can act on.
// Nested errors (the ONNX importer's) carry another "OpenCV(4.6.0) /path/x.cpp:92: error: "
// prefix inside `err`: the source location is no use to a user, the assertion is.
std::string describe(const cv::Exception& e) {
  std::string text = e.err.empty() ? e.what() : e.err;
  size_t nl = text.find('\n');
  if (nl != std::string::npos) text.resize(nl);
  for (size_t at = text.find("OpenCV("); at != std::string::npos; at = text.find("OpenCV(", at)) {
    size_t end = text.find(": error: ", at);
    if (end == std::string::npos) break;
    text.erase(at, end + 9 - at);
  }
  if (text.rfind("> ", 0) == 0) text.erase(0, 2);
  return e.func.empty() ? text : text + " (in " + e.func + ")";
}

int mat_type(int32_t dtype) {
  switch (dtype) {
    case TURNKEY_DTYPE_FLOAT32:
      return CV_32F;
    case TURNKEY_DTYPE_FLOAT16:
      return CV_16F;
    case TURNKEY_DTYPE_FLOAT64:
      return CV_64F;
    case TURNKEY_DTYPE_INT8:
      return CV_8S;
    case TURNKEY_DTYPE_UINT8:
      return CV_8U;
    case TURNKEY_DTYPE_INT16:
      return CV_16S;
    case TURNKEY_DTYPE_INT32:
      return CV_32S;
    default:
      return -1;  // int64 and bool: OpenCV 4.6 Mats have no such depth
  }
}

int32_t abi_dtype(int depth) {
  switch (depth) {
    case CV_32F:
      return TURNKEY_DTYPE_FLOAT32;
    case CV_16F:
      return TURNKEY_DTYPE_FLOAT16;
    case CV_64F:
      return TURNKEY_DTYPE_FLOAT64;
    case CV_8S:
      return TURNKEY_DTYPE_INT8;
    case CV_8U:
      return TURNKEY_DTYPE_UINT8;
    case CV_16S:
      return TURNKEY_DTYPE_INT16;
    case CV_32S:
      return TURNKEY_DTYPE_INT32;
    default:
      return 0;
  }
}

const char* dtype_label(int32_t dtype) {
  switch (dtype) {
    case TURNKEY_DTYPE_INT64:
      return "int64";
    case TURNKEY_DTYPE_BOOL:
      return "bool";
    default:
      return "this dtype";
  }
}

const char* plugin_version() { return CV_VERSION; }

int plugin_probe(char* reason, size_t reason_size) {
  try {
    // The DNN module can be built without its CPU backend; ask it.
    auto targets = cv::dnn::getAvailableTargets(cv::dnn::DNN_BACKEND_OPENCV);
    for (auto t : targets) {
      if (t == cv::dnn::DNN_TARGET_CPU) return 1;
    }
    set_message(reason, reason_size, "this OpenCV build has no CPU target for its DNN backend");
  } catch (const std::exception& e) {
    set_message(reason, reason_size, e.what());
  }
  return 0;
}

turnkey_session* plugin_load(const turnkey_load_request* request, char* error, size_t error_size) {
  try {
    if (std::strcmp(request->device, "x86") != 0) {
      set_message(error, error_size,
                  std::string("device '") + request->device + "' is not supported (x86 only)");
      return nullptr;
    }
    for (size_t i = 0; i < request->option_count; ++i) {
      // No runtime arguments yet: say so rather than ignore a typo.
      set_message(error, error_size,
                  std::string("unknown runtime argument '") + request->options[i].key +
                      "' (opencv-dnn takes none)");
      return nullptr;
    }
    for (size_t i = 0; i < request->input_count; ++i) {
      const turnkey_tensor& t = request->inputs[i];
      if (mat_type(t.dtype) < 0) {
        set_message(error, error_size,
                    std::string("input '") + t.name + "' is " + dtype_label(t.dtype) +
                        ", which OpenCV DNN " CV_VERSION " cannot take");
        return nullptr;
      }
    }
    // OpenCV logs import problems on stderr before it throws; the exception says the same.
    cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT);
    auto* session = new turnkey_session();
    try {
      session->net = cv::dnn::readNetFromONNX(request->onnx_path);
      session->net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
      session->net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
      if (request->threads > 0) cv::setNumThreads(request->threads);
      for (size_t i = 0; i < request->input_count; ++i) {
        const turnkey_tensor& t = request->inputs[i];
        const int type = mat_type(t.dtype);
        std::vector<int> dims(t.shape, t.shape + t.rank);
        if (dims.empty()) dims.push_back(1);  // a scalar as a one-element tensor
        cv::Mat view(static_cast<int>(dims.size()), dims.data(), type, const_cast<void*>(t.data));
        session->inputs.push_back(view.clone());
        session->net.setInput(session->inputs.back(), t.name);
      }
      session->output_names = session->net.getUnconnectedOutLayersNames();
      // The first forward allocates and fuses layers; errors in the model surface here, at
      // load, rather than in the timed loop.
      session->net.forward(session->last, session->output_names);
    } catch (...) {
      delete session;
      throw;
    }
    return session;
  } catch (const cv::Exception& e) {
    set_message(error, error_size, describe(e));
  } catch (const std::exception& e) {
    set_message(error, error_size, e.what());
  } catch (...) {
    set_message(error, error_size, "unknown error");
  }
  return nullptr;
}

int plugin_run(turnkey_session* session, char* error, size_t error_size) {
  try {
    session->net.forward(session->last, session->output_names);
    session->outputs.clear();
    return 0;
  } catch (const cv::Exception& e) {
    set_message(error, error_size, describe(e));
  } catch (const std::exception& e) {
    set_message(error, error_size, e.what());
  } catch (...) {
    set_message(error, error_size, "unknown error");
  }
  return 1;
}

size_t plugin_output_count(turnkey_session* session) { return session->last.size(); }

int plugin_output(turnkey_session* session, size_t index, turnkey_tensor* out) {
  try {
    if (index >= session->last.size()) return 1;
    if (session->outputs.size() != session->last.size()) {
      session->outputs.clear();
      for (size_t i = 0; i < session->last.size(); ++i) {
        Output o;
        o.name = i < session->output_names.size() ? session->output_names[i] : "";
        o.mat = session->last[i].isContinuous() ? session->last[i] : session->last[i].clone();
        for (int d = 0; d < o.mat.dims; ++d) o.shape.push_back(o.mat.size[d]);
        session->outputs.push_back(std::move(o));
      }
    }
    const Output& o = session->outputs[index];
    out->name = o.name.c_str();
    out->dtype = abi_dtype(o.mat.depth());
    out->rank = static_cast<int32_t>(o.shape.size());
    out->shape = o.shape.data();
    out->data = o.mat.data;
    out->size_bytes = static_cast<uint64_t>(o.mat.total() * o.mat.elemSize());
    return out->dtype == 0 ? 1 : 0;
  } catch (...) {
    return 1;
  }
}

void plugin_destroy(turnkey_session* session) { delete session; }

const char* const kDevices[] = {"x86", nullptr};

const turnkey_plugin kPlugin = {
    TURNKEY_PLUGIN_ABI_VERSION,
    sizeof(turnkey_plugin),
    "opencv-dnn",
    "OpenCV DNN",
    kDevices,
    plugin_version,
    plugin_probe,
    plugin_load,
    plugin_run,
    plugin_output_count,
    plugin_output,
    plugin_destroy,
};

}  // namespace

extern "C" TURNKEY_PLUGIN_EXPORT const turnkey_plugin* turnkey_plugin_entry(void) {
  return &kPlugin;
}
