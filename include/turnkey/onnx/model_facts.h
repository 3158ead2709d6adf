// Facts about an ONNX file read with the ONNX library (scripts/setup-onnx): checker verdict,
// parameter count, op histogram, opset, inputs and outputs; and the deterministic inputs turnkey
// feeds a model. Pure functions; safe to call from several threads on different files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "turnkey/common/tensor.h"

namespace turnkey::onnx_model {

struct Dim {
  int64_t value = -1;  // >= 0 when known; negative dim_values in a file are read as unknown
  std::string param;   // symbolic name ("batch"), or "" when unnamed/unknown
  bool known() const { return value >= 0; }
};

struct ValueInfo {
  std::string name;
  // The element type of the tensor, or of the tensors inside a sequence or optional; Unknown for
  // types turnkey has no DType for (complex, int4) and for maps.
  DType dtype = DType::Unknown;
  std::string onnx_type;  // ONNX element type name ("FLOAT", "STRING"), or "SEQUENCE", "MAP",
                          // "OPTIONAL", "SPARSE_TENSOR" for non-tensor values
  std::vector<Dim> dims;
  bool has_shape = false;  // false when the model gives no shape at all (rank unknown)
  // What wraps the tensor, outermost first: {} a tensor, {Sequence}, {Optional},
  // {Optional, Sequence}. dtype, dims and has_shape are the innermost tensor's. (Last, so that
  // aggregate initialisers of a tensor's fields stay as they were.)
  std::vector<ValueKind> layers;
  // An integer input that a Gather of the main graph uses as its indices into a weight table
  // (an initializer; through Cast, Reshape, Squeeze, Unsqueeze, Flatten or Identity): the
  // smallest such table's length along the Gather's axis, the bound a generated value must stay
  // under (token_type_ids into a 2-row table). 0: no such Gather.
  int64_t index_bound = 0;
  bool is_tensor() const { return layers.empty(); }
  // "float32 [1, 3, ?]", "sequence of float32 [N]", "optional sequence of int64 (any shape)".
  std::string declared() const;
};

struct ModelFacts {
  std::filesystem::path path;
  int64_t file_size_bytes = 0;
  int64_t ir_version = 0;
  int64_t opset = 0;     // default ("" or "ai.onnx") domain
  std::string producer;  // producer_name + " " + producer_version
  // Elements of all initializers, including those also listed as graph inputs (exporters list
  // every weight as an input for IR <= 3 and with keep_initializers_as_inputs). Sparse
  // initializers count as their dense shape. External-data initializers count too.
  int64_t parameters = 0;
  int64_t parameter_bytes = 0;  // parameters x element size (dense, as a runtime holds them)
  // op_type -> count over all nodes, including subgraphs (If/Loop/Scan bodies); ops of a
  // non-default domain are qualified "domain::Op" ("com.microsoft::FusedConv"). A call of a
  // model-local function counts as the nodes of its body, once per call (what a runtime that
  // inlines it computes), not as an op of its own.
  std::map<std::string, int64_t> op_histogram;
  int64_t node_count = 0;         // same nodes as op_histogram
  int64_t local_functions = 0;    // model-local functions (ModelProto.functions) it defines
  std::vector<ValueInfo> inputs;  // graph inputs that are not initializers
  std::vector<ValueInfo> outputs;
  std::string sha256;  // of the file bytes, 64 hex digits
  // Empty when the ONNX checker and strict shape inference passed. Otherwise why the check was
  // skipped: models newer than libonnx (IR or default opset above what it knows) fail its checker
  // spuriously, so for them a checker failure is a note here, not an error.
  std::string checker_note;
  // The `location` of every tensor kept as external data (as the file says: relative to the
  // model's folder, unchecked).
  std::set<std::string> external_files;
};

// Loads, parses (files up to protobuf's 2 GB limit) and checks the model: ONNX checker (external
// data resolved beside the file) plus strict shape inference, as onnx.checker's full_check does.
// Throws Error(InvalidInput) with a one-line reason and no path (the caller names the input):
// "not found", "is a directory", "not a regular file", "empty file", "not an ONNX model (protobuf
// parse failed)", "ONNX checker: ...", "initializer 'w': ..."; Error(Io) when reading fails.
ModelFacts load_facts(const std::filesystem::path& path);

// The external data locations of the model at `path` (ModelFacts::external_files) without the
// checker: parse and walk only. Throws as load_facts.
std::set<std::string> external_data_files(const std::filesystem::path& path);

// The version of the ONNX library turnkey was built with ("1.23.2").
const char* libonnx_version();

// "--input-shapes name:1x3x224x224,other:1x128". An entry splits at its last ':' so TensorFlow
// style names ("input:0:1x16") work. Dims are integers >= 1. Throws Error(InvalidInput) on bad
// syntax or a name given twice.
using InputShapes = std::map<std::string, std::vector<int64_t>>;
InputShapes parse_input_shapes(const std::string& spec);

// The symbolic->1 step, in one place (resolve_input_shapes and batch_input_shapes take it): the
// input's dims with every symbolic dim at 1, and the names of its symbolic dims from `from_dim`
// on ("?" for an unnamed one; batch_input_shapes skips dim 0, which becomes the batch).
struct OnesShape {
  std::vector<int64_t> shape;
  std::vector<std::string> symbolic;
};
OnesShape symbolic_dims_at_one(const ValueInfo& input, size_t from_dim = 0);

// What a run says when it set symbolic dims to 1, on one line: "symbolic dims set to 1: input
// 'x' [batch] (choose with --input-shapes x:1x16)". Collects one input at a time.
class OnesNote {
 public:
  // Names `input` with `ones.symbolic`; nothing when that is empty.
  void add(const std::string& input, const OnesShape& ones);
  std::string text() const;  // "" when nothing was added
 private:
  std::vector<std::string> defaulted_, examples_;  // "input 'x' [batch]", "x:1x16"
};

// Concrete shape of every input (same order as facts.inputs): fixed dims kept, symbolic ones from
// `overrides` (whole-shape override by input name). Throws Error(InvalidInput) naming the input
// and its symbolic dims when any remain ("input 'x' has symbolic dims [batch, ?]: give
// --input-shapes x:1x16"), for an override that names no input or contradicts a fixed dim or the
// rank, for shapes above kMaxInputBytes, and for dtypes turnkey cannot generate. With `ones_note`,
// symbolic dims left without an override become 1 instead, and *ones_note says which, on one line
// ("symbolic dims set to 1: input 'x' [batch] (choose with --input-shapes x:1x16)"; "" when none).
std::vector<std::vector<int64_t>> resolve_input_shapes(const ModelFacts& facts,
                                                       const InputShapes& overrides,
                                                       std::string* ones_note = nullptr);

// --batch-sizes (docs/measurement.md): an input carries the batch in its first dim when it has
// rank >= 2, or rank 1 with a symbolic dim (a fixed vector (10,) is one sample of 10 features).
bool has_batch_dim(const ValueInfo& input);

struct BatchShapes {
  // `given` (the user's --input-shapes) with every batched input's whole shape at the batch: its
  // other dims from `given`, else the model's fixed ones, else 1 (named in ones_note).
  InputShapes shapes;
  std::vector<std::string> batched;  // inputs whose first dim is the batch
  // Of those, the ones the file fixes at another batch: the model must be rewritten to take this
  // one (build/batch_variant.h).
  std::vector<std::string> fixed;
  std::string ones_note;  // "symbolic dims set to 1: input 'x' [seq] (...)"; "" when none
};
// Throws Error(InvalidInput) for a batch below 1 and a model none of whose inputs has a batch dim.
BatchShapes batch_input_shapes(const ModelFacts& facts, const InputShapes& given, int64_t batch);

// "x:4x16,y:4": shapes as --input-shapes takes them (inputs in name order).
std::string input_shapes_text(const InputShapes& shapes);

// Largest single generated input; beyond it a shape is almost surely a typo (or hostile).
inline constexpr int64_t kMaxInputBytes = int64_t{4} << 30;

// Deterministic inputs from `seed`: floats ~ U(-1, 1) (float16, bfloat16 and float8 too),
// integers (signed and unsigned) in [0, 100) (valid token ids / indices for small vocabularies),
// strings the decimal text of such integers, bools from the RNG, never all zeros. A sequence input
// holds 2 tensors of its shape, an optional one holds its value. Each input's stream depends only
// on the seed and the input's name. Same seed and shapes -> same bytes on every machine (own
// splitmix64, no <random> distributions). Throws Error(InvalidInput) for types turnkey cannot
// generate (maps, complex) or shapes that do not match the inputs.
std::vector<HostTensor> generate_inputs(const ModelFacts& facts,
                                        const std::vector<std::vector<int64_t>>& shapes,
                                        uint64_t seed = 0x7475726e6b6579ULL);

// IEEE 754 binary16 <-> binary32, round to nearest even (as numpy's astype(float16)); NaN stays
// NaN, overflow goes to infinity.
uint16_t float_to_half(float value);
float half_to_float(uint16_t bits);

// Reads a serialized onnx TensorProto (.pb, as in ONNX backend test data and as the Python side
// saves inputs/outputs), from raw_data or the typed fields. Throws Error(InvalidInput), reasons as
// load_facts (no path), for a parse failure, an element type turnkey has no DType for, or data
// that does not match the dims.
HostTensor read_tensor_pb(const std::filesystem::path& path);

}  // namespace turnkey::onnx_model
