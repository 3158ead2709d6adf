#include "model_io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/inliner/inliner.h>
#include <onnx/shape_inference/implementation.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <new>
#include <set>
#include <utility>
#include <vector>

#include "turnkey/common/error.h"
#include "turnkey/common/files.h"

#ifndef TURNKEY_LIBONNX_VERSION
#define TURNKEY_LIBONNX_VERSION "(unknown version)"
#endif

namespace turnkey::transforms::detail {

namespace fs = std::filesystem;

namespace {

Error invalid(const std::string& reason) { return Error(ErrorKind::InvalidInput, reason); }
Error export_error(const std::string& reason) { return Error(ErrorKind::Export, reason); }

bool is_external(const onnx::TensorProto& t) {
  return t.has_data_location() && t.data_location() == onnx::TensorProto::EXTERNAL;
}

// Calls `fn` on every tensor of `graph` and its subgraphs: initializers, sparse initializers,
// attribute tensors. `what` names the tensor for messages.
void for_each_tensor(onnx::GraphProto* graph,
                     const std::function<void(onnx::TensorProto*, const std::string&)>& fn) {
  for (auto& t : *graph->mutable_initializer()) fn(&t, fmt::format("initializer '{}'", t.name()));
  for (auto& s : *graph->mutable_sparse_initializer()) {
    fn(s.mutable_values(), fmt::format("sparse initializer '{}'", s.values().name()));
    fn(s.mutable_indices(), fmt::format("sparse initializer '{}' indices", s.values().name()));
  }
  for (auto& node : *graph->mutable_node()) {
    for (auto& attr : *node.mutable_attribute()) {
      const std::string what = fmt::format("attribute '{}' of node '{}'", attr.name(), node.name());
      if (attr.has_t()) fn(attr.mutable_t(), what);
      for (auto& t : *attr.mutable_tensors()) fn(&t, what);
      if (attr.has_sparse_tensor()) {
        fn(attr.mutable_sparse_tensor()->mutable_values(), what);
        fn(attr.mutable_sparse_tensor()->mutable_indices(), what);
      }
      if (attr.has_g()) for_each_tensor(attr.mutable_g(), fn);
      for (auto& g : *attr.mutable_graphs()) for_each_tensor(&g, fn);
    }
  }
}

bool parse_int64(const std::string& s, int64_t* out) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && ptr == end && *out >= 0;
}

bool is_within(const fs::path& base, const fs::path& p) {
  auto [b, q] = std::mismatch(base.begin(), base.end(), p.begin(), p.end());
  return b == base.end();
}

// Reads external data into raw_data. Locations are resolved inside `model_dir` only: an absolute
// path, "..", or a symlink leading out of the folder is refused (a model file must not make
// turnkey read arbitrary files).
class ExternalDataLoader {
 public:
  explicit ExternalDataLoader(const fs::path& model_dir) {
    std::error_code ec;
    base_ = fs::weakly_canonical(model_dir.empty() ? fs::path(".") : model_dir, ec);
    if (ec) base_ = model_dir;
  }

  // Resolves and bounds-checks the tensor's external data; with `read`, moves it inline.
  void load(onnx::TensorProto* t, const std::string& what, bool read) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& e : t->external_data()) {
      if (e.key() == "location") {
        location = e.value();
      } else if (e.key() == "offset") {
        if (!parse_int64(e.value(), &offset)) {
          throw invalid(
              fmt::format("{}: external data offset '{}' is not a number", what, e.value()));
        }
      } else if (e.key() == "length") {
        if (!parse_int64(e.value(), &length)) {
          throw invalid(
              fmt::format("{}: external data length '{}' is not a number", what, e.value()));
        }
      }
    }
    if (location.empty()) throw invalid(fmt::format("{}: external data without a location", what));
    const fs::path rel(location);
    bool escapes = rel.is_absolute() || rel.has_root_name();
    for (const auto& part : rel) escapes |= part == "..";
    std::error_code ec;
    fs::path file = fs::weakly_canonical(base_ / rel, ec);
    if (escapes || ec || !is_within(base_, file)) {
      throw invalid(fmt::format("{}: external data location '{}' is outside the model's folder",
                                what, location));
    }
    auto [it, inserted] = sizes_.try_emplace(file.string(), -1);
    if (inserted) {
      std::error_code size_ec;
      if (!fs::is_regular_file(file, size_ec)) {
        throw invalid(fmt::format("{}: external data file '{}' not found", what, location));
      }
      it->second = static_cast<int64_t>(fs::file_size(file, size_ec));
      if (size_ec) {
        throw Error(ErrorKind::Io, fmt::format("{}: cannot stat external data file '{}': {}", what,
                                               location, size_ec.message()));
      }
      total_bytes_ += it->second;
    }
    const int64_t file_size = it->second;
    if (length < 0) length = file_size - offset;
    if (offset > file_size || length < 0 || length > file_size - offset) {
      throw invalid(fmt::format("{}: external data [{}, +{}) is beyond the end of '{}' ({} bytes)",
                                what, offset, length, location, file_size));
    }
    if (!read) return;
    std::string bytes(static_cast<size_t>(length), '\0');
    std::ifstream in(file, std::ios::binary);
    in.seekg(offset);
    in.read(bytes.data(), length);
    if (!in) {
      throw Error(ErrorKind::Io,
                  fmt::format("{}: cannot read external data file '{}'", what, location));
    }
    t->set_raw_data(std::move(bytes));
    t->clear_external_data();
    t->clear_data_location();
  }

  int64_t total_bytes() const { return total_bytes_; }

 private:
  fs::path base_;
  std::map<std::string, int64_t> sizes_;  // resolved file -> size
  int64_t total_bytes_ = 0;
};

// A copy of `model` without the bytes of large inline tensors, for shape inference: types and
// shapes do not depend on them, and copying a 400 MB model to infer its types would double the
// memory. Small tensors (shape constants, Resize scales) stay: inference reads their values.
onnx::ModelProto light_copy(const onnx::ModelProto& model) {
  onnx::ModelProto copy;
  copy.CopyFrom(model);
  for (auto& t : *copy.mutable_graph()->mutable_initializer()) {
    if (t.raw_data().size() >= 4096 && t.data_type() != onnx::TensorProto::INT64 &&
        t.data_type() != onnx::TensorProto::INT32) {
      t.clear_raw_data();
    }
    if (t.float_data_size() >= 1024) t.clear_float_data();
  }
  return copy;
}

}  // namespace

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

int64_t default_opset(const onnx::ModelProto& model) {
  for (const auto& op : model.opset_import()) {
    if (is_default_domain(op.domain())) return op.version();
  }
  return model.ir_version() > 0 && model.ir_version() < 3 ? 1 : 0;
}

LoadedModel load_model(const fs::path& path, bool load_external_data) {
  LoadedModel loaded;
  Fd fd = open_regular_file(path, &loaded.size_bytes);
  bool ok = false;
  try {
    google::protobuf::io::FileInputStream stream(fd.get(), 1 << 20);
    google::protobuf::io::CodedInputStream coded(&stream);
    coded.SetTotalBytesLimit(INT_MAX);
    ok = loaded.model.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
    if (stream.GetErrno() != 0) {
      throw Error(ErrorKind::Io, fmt::format("read failed: {}", strerror(stream.GetErrno())));
    }
  } catch (const std::bad_alloc&) {
    throw invalid("not an ONNX model (protobuf parse ran out of memory)");
  }
  if (!ok) throw invalid("not an ONNX model (protobuf parse failed)");
  const onnx::ModelProto& m = loaded.model;
  if (!m.has_ir_version() && !m.has_graph() && m.opset_import_size() == 0) {
    throw invalid("not an ONNX model (no ir_version, graph or opset_import)");
  }
  ExternalDataLoader external(path.parent_path());
  for_each_tensor(loaded.model.mutable_graph(), [&](onnx::TensorProto* t, const std::string& what) {
    if (!is_external(*t)) return;
    loaded.had_external_data = true;
    external.load(t, what, load_external_data);
  });
  loaded.size_bytes += external.total_bytes();
  return loaded;
}

void copy_external_data(onnx::ModelProto& model, const fs::path& from_dir, const fs::path& to_dir) {
  std::error_code ec;
  if (fs::equivalent(from_dir, to_dir, ec)) return;
  std::set<std::string> locations;
  for_each_tensor(model.mutable_graph(), [&](onnx::TensorProto* t, const std::string&) {
    if (!is_external(*t)) return;
    for (const auto& e : t->external_data()) {
      if (e.key() == "location") locations.insert(e.value());
    }
  });
  for (const std::string& location : locations) {
    // load_model checked that the location stays inside `from_dir` (symbolic links resolved).
    const fs::path source = fs::weakly_canonical(from_dir / location, ec);
    const fs::path target = to_dir / location;
    fs::create_directories(target.parent_path(), ec);
    fs::remove(target, ec);
    fs::copy_file(source, target, fs::copy_options::overwrite_existing, ec);
    if (ec) {
      throw export_error(fmt::format("cannot copy external data '{}' into '{}': {}", location,
                                     to_dir.string(), ec.message()));
    }
  }
}

void check_output_location(const fs::path& input, const fs::path& output) {
  std::error_code ec;
  if (output.empty()) throw invalid("output path is empty");
  if (fs::equivalent(input, output, ec)) {
    throw invalid(fmt::format("output '{}' is the input: write to a new file", output.string()));
  }
  if (fs::is_directory(output, ec)) {
    throw export_error(fmt::format("output '{}' is a directory", output.string()));
  }
  const fs::path dir = output.parent_path().empty() ? fs::path(".") : output.parent_path();
  fs::file_status status = fs::status(dir, ec);
  if (status.type() == fs::file_type::not_found) {
    throw export_error(fmt::format("output directory '{}' does not exist", dir.string()));
  }
  if (status.type() != fs::file_type::directory) {
    throw export_error(fmt::format("output directory '{}' is not a directory", dir.string()));
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw export_error(
        fmt::format("output directory '{}' is not writable: {}", dir.string(), strerror(errno)));
  }
}

int64_t save_model(onnx::ModelProto& model, const fs::path& output, bool external_data,
                   std::string* external_data_name) {
  constexpr size_t kMinExternalBytes = 1024;
  constexpr size_t kAlign = 4096;  // ORT memory-maps external data at page-aligned offsets
  external_data_name->clear();
  int64_t written = 0;
  try {
    if (external_data) {
      const std::string name = output.filename().string() + ".data";
      std::string blob;
      for (auto& t : *model.mutable_graph()->mutable_initializer()) {
        if (t.raw_data().size() < kMinExternalBytes) continue;
        blob.resize((blob.size() + kAlign - 1) / kAlign * kAlign, '\0');
        const size_t offset = blob.size();
        const size_t length = t.raw_data().size();
        blob += t.raw_data();
        t.clear_raw_data();
        t.set_data_location(onnx::TensorProto::EXTERNAL);
        auto add = [&](const char* key, const std::string& value) {
          auto* e = t.add_external_data();
          e->set_key(key);
          e->set_value(value);
        };
        add("location", name);
        add("offset", std::to_string(offset));
        add("length", std::to_string(length));
      }
      if (!blob.empty()) {
        write_file_atomic(output.parent_path() / name, blob);
        written += static_cast<int64_t>(blob.size());
        *external_data_name = name;
      }
    }
    if (model.ByteSizeLong() > static_cast<size_t>(INT_MAX)) {
      throw export_error(
          fmt::format("output '{}': the model is above protobuf's 2 GB limit", output.string()));
    }
    std::string bytes;
    if (!model.SerializeToString(&bytes)) {
      throw export_error(fmt::format("output '{}': cannot serialize the model", output.string()));
    }
    write_file_atomic(output, bytes);
    written += static_cast<int64_t>(bytes.size());
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Export) throw;
    throw export_error(first_line(e.what()));
  } catch (const std::bad_alloc&) {
    throw export_error(fmt::format("output '{}': out of memory while writing", output.string()));
  }
  return written;
}

void check_model_strict(const onnx::ModelProto& model) {
  std::string stage = "ONNX checker";
  try {
    onnx::checker::check_model(model);
    stage = "ONNX checker: shape inference";
    onnx::ModelProto copy = light_copy(model);
    onnx::ShapeInferenceOptions options(/*check_type_val=*/true, /*strict_mode_val=*/1,
                                        /*data_prop_val=*/false);
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::bad_alloc&) {
    throw invalid(stage + ": out of memory");
  } catch (const std::exception& e) {
    throw invalid(fmt::format("{}: {}", stage, first_line(e.what())));
  }
}

void check_not_newer_than_libonnx(const onnx::ModelProto& model) {
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = ranges.find(onnx::ONNX_DOMAIN);
  const int64_t known_opset = it == ranges.end() ? 0 : it->second.second;
  const int64_t opset = default_opset(model);
  if (model.ir_version() > onnx::IR_VERSION || opset > known_opset) {
    throw invalid(fmt::format("model has IR {} opset {}, libonnx {} knows up to IR {} opset {}",
                              model.ir_version(), opset, TURNKEY_LIBONNX_VERSION,
                              static_cast<int64_t>(onnx::IR_VERSION), known_opset));
  }
}

int64_t inline_local_functions(onnx::ModelProto& model) {
  const int64_t defined = model.functions_size();
  if (defined == 0) return 0;
  try {
    // The inliner would recurse without end on a call cycle (ONNX forbids them; a hostile file
    // may have one), and optimize-ort inlines models that have not been through the checker.
    onnx::checker::check_function_call_cycles(model);
    onnx::inliner::InlineLocalFunctions(model, /*convert_version=*/false);
  } catch (const std::bad_alloc&) {
    throw invalid("inlining model-local functions: out of memory");
  } catch (const std::exception& e) {
    throw invalid(fmt::format("inlining model-local functions: {}", first_line(e.what())));
  }
  return defined;
}

std::unordered_map<std::string, onnx::TypeProto> infer_main_graph_types(
    const onnx::ModelProto& model) {
  onnx::ModelProto copy = light_copy(model);
  try {
    onnx::ShapeInferenceOptions options(/*check_type_val=*/false, /*strict_mode_val=*/0,
                                        /*data_prop_val=*/false);
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception&) {
    // Keep what the model declares; values inference could not type stay unknown.
  }
  std::unordered_map<std::string, onnx::TypeProto> types;
  const onnx::GraphProto& g = copy.graph();
  for (const auto& t : g.initializer()) {
    onnx::TypeProto type;
    auto* tensor = type.mutable_tensor_type();
    tensor->set_elem_type(t.data_type());
    for (int64_t d : t.dims()) tensor->mutable_shape()->add_dim()->set_dim_value(d);
    types[t.name()] = type;
  }
  for (const auto& v : g.value_info()) types[v.name()] = v.type();
  for (const auto& v : g.output()) types[v.name()] = v.type();
  for (const auto& v : g.input()) types[v.name()] = v.type();
  // A value_info without a type says nothing.
  for (auto it = types.begin(); it != types.end();) {
    it =
        it->second.value_case() == onnx::TypeProto::VALUE_NOT_SET ? types.erase(it) : std::next(it);
  }
  return types;
}

int64_t count_nodes(const onnx::GraphProto& graph) {
  int64_t n = graph.node_size();
  for (const auto& node : graph.node()) {
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) n += count_nodes(attr.g());
      for (const auto& g : attr.graphs()) n += count_nodes(g);
    }
  }
  return n;
}

}  // namespace turnkey::transforms::detail
