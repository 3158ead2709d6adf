// convert-fp16's pieces below the graph converter (fp16_converter.h): precisions, float32 ->
// float16 tensor data, and the graph name helpers. Internal to src/transforms.
#pragma once

#include <onnx/defs/schema.h>

#include <cstdint>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "turnkey/transforms/transforms.h"
#include "turnkey/common/error.h"
#include "turnkey/onnx/onnx_proto.h"

namespace turnkey::transforms::fp16 {

enum Prec : int { F32 = 0, F16 = 1 };
constexpr int kNone = -1;

constexpr float kHalfMax = 65504.0f;
constexpr float kHalfMinSubnormal = 5.9604644775390625e-08f;  // 2^-24

inline const char* suffix(int prec) { return prec == F16 ? "_fp16" : "_fp32"; }
inline int onnx_type(int prec) {
  return prec == F16 ? onnx::TensorProto::FLOAT16 : onnx::TensorProto::FLOAT;
}

inline Error invalid(const std::string& reason) { return Error(ErrorKind::InvalidInput, reason); }

// Elements of a tensor from its dims; throws on negative dims or overflow.
int64_t element_count(const onnx::TensorProto& t, const std::string& what);

// float -> IEEE half, round to nearest even (F16C where the CPU has it).
void floats_to_halves(const float* in, uint16_t* out, size_t n);

// Converts FLOAT tensors to FLOAT16, counting the values clamped into float16's range in the
// result.
class TensorConverter {
 public:
  explicit TensorConverter(Fp16Result* result) : result_(result) {}

  // FLOAT tensor -> FLOAT16 in raw_data. The data must be inline (external data loaded).
  void convert(onnx::TensorProto* t, const std::string& what);

 private:
  // Finite values beyond float16's range would become infinities, and nonzero ones below its
  // smallest subnormal zeros (an epsilon of 1e-12 turning into a division by zero).
  void clamp(std::vector<float>* values);

  Fp16Result* result_;
};

bool is_float_tensor_type(const onnx::TypeProto& type);
// Sequences, optionals and maps holding float: no Cast converts them, so nodes touching them stay
// float32 and so do the values.
bool is_float_container(const onnx::TypeProto& type);
bool has_subgraph(const onnx::NodeProto& node);
// Names a subgraph reads from enclosing scopes.
void free_names(const onnx::GraphProto& g, std::set<std::string>* out);
// Renames a name the subgraph reads from an enclosing scope. ONNX forbids shadowing, so every
// occurrence is the outer value.
void rename_free(onnx::GraphProto* g, const std::string& from, const std::string& to);
void collect_names(const onnx::GraphProto& g, std::unordered_set<std::string>* names);
std::string op_key(const onnx::NodeProto& node);
const onnx::OpSchema::FormalParameter* formal(const std::vector<onnx::OpSchema::FormalParameter>& f,
                                              int index);

}  // namespace turnkey::transforms::fp16
