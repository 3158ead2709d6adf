// Reading ONNX files with libonnx. Everything libonnx or protobuf throws is caught here and turned
// into Error(InvalidInput): a hostile file must give a one-line reason, never an abort.
#include "turnkey/onnx/model_facts.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstring>
#include <map>
#include <new>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "proto_read.h"
#include "turnkey/common/error.h"
#include "turnkey/common/sha256.h"
#include "turnkey/onnx/onnx_proto.h"

#ifndef TURNKEY_LIBONNX_VERSION
#define TURNKEY_LIBONNX_VERSION "(unknown version)"
#endif

namespace turnkey::onnx_model {

namespace fs = std::filesystem;

static_assert(
    std::endian::native == std::endian::little,
    "raw_data in ONNX tensors is little-endian; copying it as-is needs a little-endian host");

using namespace detail;

namespace {

// The innermost tensor type of `type` into `info`, through the sequences and optionals around it
// (each one a layer); other types leave dtype Unknown and name themselves in onnx_type.
void read_type(const onnx::TypeProto& type, ValueInfo& info) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType: {
      const auto& tensor = type.tensor_type();
      info.dtype = dtype_of(tensor.elem_type());
      if (info.layers.empty()) info.onnx_type = onnx_type_name(tensor.elem_type());
      info.has_shape = tensor.has_shape();
      for (const auto& d : tensor.shape().dim()) {
        Dim dim;
        if (d.value_case() == onnx::TensorShapeProto_Dimension::kDimValue && d.dim_value() >= 0) {
          dim.value = d.dim_value();
        } else if (d.value_case() == onnx::TensorShapeProto_Dimension::kDimParam) {
          dim.param = d.dim_param();
        }
        info.dims.push_back(std::move(dim));
      }
      break;
    }
    case onnx::TypeProto::kSequenceType:
      if (info.layers.empty()) info.onnx_type = "SEQUENCE";
      info.layers.push_back(ValueKind::Sequence);
      read_type(type.sequence_type().elem_type(), info);
      break;
    case onnx::TypeProto::kOptionalType:
      if (info.layers.empty()) info.onnx_type = "OPTIONAL";
      info.layers.push_back(ValueKind::Optional);
      read_type(type.optional_type().elem_type(), info);
      break;
    case onnx::TypeProto::kSparseTensorType:
      info.onnx_type = "SPARSE_TENSOR";
      info.dtype = DType::Unknown;
      break;
    case onnx::TypeProto::kMapType:
      info.onnx_type = "MAP";
      info.dtype = DType::Unknown;
      break;
    case onnx::TypeProto::kOpaqueType:
      info.onnx_type = "OPAQUE";
      info.dtype = DType::Unknown;
      break;
    default:
      info.onnx_type = "UNDEFINED";
      info.dtype = DType::Unknown;
      break;
  }
}

ValueInfo value_info_of(const onnx::ValueInfoProto& v) {
  ValueInfo info;
  info.name = v.name();
  read_type(v.type(), info);
  return info;
}

// Whether `t` keeps its data in an external file; its location goes to facts->external_files.
bool note_external(const onnx::TensorProto& t, ModelFacts* facts) {
  if (!is_external(t)) return false;
  for (const auto& e : t.external_data()) {
    if (e.key() == "location") facts->external_files.insert(e.value());
  }
  return true;
}

using Histogram = std::map<std::string, int64_t>;

void add_count(Histogram* h, const std::string& op, int64_t n) {
  if (__builtin_add_overflow((*h)[op], n, &(*h)[op])) {
    throw invalid("model-local function calls expand to more than 2^63 nodes");
  }
}

// The op histogram of a model: nodes of the main graph and its subgraphs, where a call of a
// model-local function (FunctionProto, as torch's dynamo exporter writes) counts as the nodes of
// its body, once per call, as a runtime inlining the function computes them. Each body is
// counted once (memoized), so nested calls cost no more than the model's size.
class OpCounter {
 public:
  OpCounter(const onnx::ModelProto& model, ModelFacts* facts, bool* has_external_data)
      : facts_(facts), has_external_data_(has_external_data) {
    for (const auto& f : model.functions()) functions_.try_emplace(key(f), &f);
  }

  void count(const onnx::GraphProto& graph) { walk_graph(graph, &facts_->op_histogram); }

 private:
  using Key = std::tuple<std::string, std::string, std::string>;  // domain, name, overload
  static Key key(const onnx::FunctionProto& f) { return {f.domain(), f.name(), f.overload()}; }
  static Key key(const onnx::NodeProto& n) { return {n.domain(), n.op_type(), n.overload()}; }

  // Nesting depth of subgraphs is bounded by protobuf's recursion limit (100) at parse time, and
  // function calls cannot cycle (checked), so recursion here cannot overflow the stack.
  void walk(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes, Histogram* h) {
    for (const auto& node : nodes) {
      if (auto f = functions_.find(key(node)); f != functions_.end()) {
        for (const auto& [op, n] : body(f->first, *f->second)) add_count(h, op, n);
      } else {
        add_count(h,
                  is_default_domain(node.domain())
                      ? node.op_type()
                      : fmt::format("{}::{}", node.domain(), node.op_type()),
                  1);
      }
      for (const auto& attr : node.attribute()) {
        if (attr.has_t()) *has_external_data_ |= note_external(attr.t(), facts_);
        for (const auto& t : attr.tensors()) *has_external_data_ |= note_external(t, facts_);
        if (attr.has_g()) walk_graph(attr.g(), h);
        for (const auto& g : attr.graphs()) walk_graph(g, h);
      }
    }
  }

  void walk_graph(const onnx::GraphProto& graph, Histogram* h) {
    for (const auto& t : graph.initializer()) *has_external_data_ |= note_external(t, facts_);
    walk(graph.node(), h);
  }

  const Histogram& body(const Key& k, const onnx::FunctionProto& f) {
    auto [it, first] = bodies_.try_emplace(k);
    if (!first) {
      if (!it->second.done) {
        throw invalid(
            fmt::format("model-local function '{}::{}' calls itself", f.domain(), f.name()));
      }
      return it->second.histogram;
    }
    Histogram h;
    walk(f.node(), &h);
    it->second = {std::move(h), true};  // map iterators survive the insertions walk() made
    return it->second.histogram;
  }

  struct Body {
    Histogram histogram;
    bool done = false;  // false while its nodes are being walked: a call now is a cycle
  };
  ModelFacts* facts_;
  bool* has_external_data_;
  std::map<Key, const onnx::FunctionProto*> functions_;
  std::map<Key, Body> bodies_;
};

// ValueInfo::index_bound of each integer input: follows each input through value-preserving
// ops to the Gathers that index a weight table with it (embedding lookups: token ids, token type
// ids, positions), and keeps the smallest table's length along the Gather's axis.
void set_index_bounds(const onnx::GraphProto& graph, std::vector<ValueInfo>* inputs) {
  static const std::set<std::string_view> kValuePreserving = {"Cast",      "Reshape", "Squeeze",
                                                              "Unsqueeze", "Flatten", "Identity"};
  std::map<std::string_view, const onnx::TensorProto*> tables;
  for (const auto& t : graph.initializer()) tables.emplace(t.name(), &t);
  for (ValueInfo& input : *inputs) {
    const bool integer = !dtype_is_float(input.dtype) && input.dtype != DType::Bool &&
                         input.dtype != DType::String && input.dtype != DType::Unknown;
    if (!input.is_tensor() || !integer) continue;
    std::set<std::string_view> names = {input.name};  // the input and what carries its values
    for (const auto& node : graph.node()) {  // nodes are in topological order in a valid graph
      if (!is_default_domain(node.domain()) || node.input_size() < 1) continue;
      if (kValuePreserving.count(node.op_type()) && names.count(node.input(0))) {
        for (const auto& out : node.output()) names.insert(out);
      } else if (node.op_type() == "Gather" && node.input_size() >= 2 &&
                 names.count(node.input(1))) {
        const auto table = tables.find(node.input(0));
        if (table == tables.end() || table->second->dims_size() == 0) continue;
        int64_t axis = 0;
        for (const auto& a : node.attribute()) {
          if (a.name() == "axis") axis = a.i();
        }
        const int64_t rank = table->second->dims_size();
        if (axis < -rank || axis >= rank) continue;  // the checker refuses it
        const int64_t rows = table->second->dims(static_cast<int>(axis < 0 ? axis + rank : axis));
        if (rows > 0 && (input.index_bound == 0 || rows < input.index_bound)) {
          input.index_bound = rows;
        }
      }
    }
  }
}

void collect_facts(const onnx::ModelProto& model, ModelFacts* facts, bool* has_external_data) {
  facts->ir_version = model.ir_version();
  bool has_default_opset = false;
  for (const auto& op : model.opset_import()) {
    if (is_default_domain(op.domain()) && !has_default_opset) {
      facts->opset = op.version();
      has_default_opset = true;
    }
  }
  // IR < 3 predates opset_import: such models implicitly use opset 1.
  if (!has_default_opset && model.ir_version() > 0 && model.ir_version() < 3) facts->opset = 1;
  facts->producer = model.producer_name();
  if (!model.producer_version().empty()) {
    facts->producer += (facts->producer.empty() ? "" : " ") + model.producer_version();
  }

  const onnx::GraphProto& graph = model.graph();
  std::set<std::string> initializer_names;
  for (const auto& t : graph.initializer()) {
    int64_t n = validated_initializer_elements(t);
    add_checked(&facts->parameters, n);
    add_checked(&facts->parameter_bytes, bytes_of(n, t));
    initializer_names.insert(t.name());
  }
  for (const auto& sparse : graph.sparse_initializer()) {
    const std::string& name = sparse.values().name();
    int64_t n = element_count_or_throw(fmt::format("sparse initializer '{}'", name), sparse.dims());
    int64_t bytes;
    if (__builtin_mul_overflow(n, onnx_element_bytes(sparse.values().data_type()), &bytes)) {
      throw invalid(fmt::format("sparse initializer '{}': byte size overflows int64", name));
    }
    add_checked(&facts->parameters, n);
    add_checked(&facts->parameter_bytes, bytes);
    initializer_names.insert(name);
    *has_external_data |= note_external(sparse.values(), facts);
    *has_external_data |= note_external(sparse.indices(), facts);
  }
  for (const auto& input : graph.input()) {
    if (!initializer_names.count(input.name())) facts->inputs.push_back(value_info_of(input));
  }
  set_index_bounds(graph, &facts->inputs);
  for (const auto& output : graph.output()) facts->outputs.push_back(value_info_of(output));
  facts->local_functions = model.functions_size();
  OpCounter(model, facts, has_external_data).count(graph);
  for (const auto& [op, n] : facts->op_histogram) {
    if (__builtin_add_overflow(facts->node_count, n, &facts->node_count)) {
      throw invalid("model-local function calls expand to more than 2^63 nodes");
    }
  }
}

// Runs libonnx's checker and strict shape inference. Models newer than libonnx knows get a note
// instead of an error, because its checker rejects them for being new, not for being wrong.
void check(const fs::path& path, onnx::ModelProto* model, bool has_external_data,
           ModelFacts* facts) {
  const int64_t known_ir = onnx::IR_VERSION;
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = ranges.find(onnx::ONNX_DOMAIN);
  const int64_t known_opset = it == ranges.end() ? 0 : it->second.second;
  // ONNX has added about one IR version and two opsets a year; far beyond that is not "newer"
  // but garbage (random bytes parse as IR 44 now and then) and gets no leniency.
  const bool plausible = model->ir_version() <= known_ir + 8 && facts->opset <= known_opset + 16;
  const bool newer = plausible && (model->ir_version() > known_ir || facts->opset > known_opset) &&
                     model->has_graph() && model->opset_import_size() > 0;
  std::string newer_note;
  if (newer) {
    newer_note = fmt::format("model has IR {} opset {}, libonnx {} knows up to IR {} opset {}",
                             model->ir_version(), facts->opset, TURNKEY_LIBONNX_VERSION, known_ir,
                             known_opset);
    // Lets the structural checks run; the IR number alone would fail them.
    if (model->ir_version() > known_ir) model->set_ir_version(known_ir);
  }

  std::string stage = "ONNX checker";
  try {
    if (has_external_data) {
      // The path form resolves external data files relative to the model's folder.
      onnx::checker::check_model(path.string());
    } else {
      onnx::checker::check_model(*model);
    }
    if (newer) {
      facts->checker_note = "checker passed, strict shape inference skipped: " + newer_note;
      return;
    }
    stage = "ONNX checker: shape inference";
    onnx::ShapeInferenceOptions options(/*check_type_val=*/true, /*strict_mode_val=*/1,
                                        /*data_prop_val=*/false);
    onnx::shape_inference::InferShapes(*model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::bad_alloc&) {
    throw invalid(stage + ": out of memory");
  } catch (const std::exception& e) {
    if (newer) {
      facts->checker_note =
          fmt::format("checker skipped ({}): {}", newer_note, first_line(e.what()));
      return;
    }
    throw invalid(fmt::format("{}: {}", stage, first_line(e.what())));
  } catch (...) {
    throw invalid(stage + ": failed with an exception of unknown type");
  }
}

}  // namespace

namespace {

// The model at `path`, parsed, with the facts the parse gives (path, size, SHA-256).
onnx::ModelProto parse_model(const fs::path& path, ModelFacts& facts) {
  facts.path = path;
  Fd fd = open_regular_file(path, &facts.file_size_bytes);
  onnx::ModelProto model;
  Sha256 hash;
  try {
    if (!parse_file(fd.get(), &model, &hash, facts.file_size_bytes)) {
      throw invalid("not an ONNX model (protobuf parse failed)");
    }
  } catch (const std::bad_alloc&) {
    throw invalid("not an ONNX model (protobuf parse ran out of memory)");
  }
  facts.sha256 = hash.hex_digest();
  // Arbitrary bytes sometimes parse as a message made only of unknown fields.
  if (!model.has_ir_version() && !model.has_graph() && model.opset_import_size() == 0) {
    throw invalid("not an ONNX model (no ir_version, graph or opset_import)");
  }
  return model;
}

}  // namespace

ModelFacts load_facts(const fs::path& path) {
  ModelFacts facts;
  onnx::ModelProto model = parse_model(path, facts);
  bool has_external_data = false;
  collect_facts(model, &facts, &has_external_data);
  check(path, &model, has_external_data, &facts);
  return facts;
}

std::set<std::string> external_data_files(const fs::path& path) {
  ModelFacts facts;
  onnx::ModelProto model = parse_model(path, facts);
  bool has_external_data = false;
  collect_facts(model, &facts, &has_external_data);
  return facts.external_files;
}

const char* libonnx_version() { return TURNKEY_LIBONNX_VERSION; }

}  // namespace turnkey::onnx_model
