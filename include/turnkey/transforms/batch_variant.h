// A copy of an ONNX model that takes another batch than the one its file fixes (--batch-sizes on
// a model with a fixed batch dim, docs/measurement.md). Pure file-to-file; thread-safe for
// distinct outputs.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace turnkey::transforms {

// The symbolic name the rewritten dims get.
inline constexpr const char* kBatchDimName = "turnkey_batch";

// Writes `output` (atomically): `input` with the first dim of the graph inputs named in `inputs`
// made symbolic (kBatchDimName), and so the first dim of every graph output that was fixed at the
// value those inputs had; the graph's value_info is dropped (shapes inferred from the fixed batch
// would contradict another one). Whether the graph itself works at another batch (a Reshape to
// constant dims does not) shows when a runtime runs it. External data is copied beside `output`.
// Throws Error(InvalidInput) for an unreadable model or a name that is not a graph input with a
// first dim, Error(Export) when `output` cannot be written.
void write_batch_variant(const std::filesystem::path& input, const std::filesystem::path& output,
                         const std::vector<std::string>& inputs);

}  // namespace turnkey::transforms
