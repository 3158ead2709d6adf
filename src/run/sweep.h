// Internal to the engine: sweeps (docs/measurement.md). A run that asks for several input shapes
// (load-onnx --input-shapes used more than once), batch sizes (--batch-sizes) or requests in
// flight (benchmark --concurrency 1,2,4) makes one result per point. Each point is one pass of
// the model's build with the point's values, exactly what the command would do given those
// values alone (its own result in the build's stats, its own status); the input loop runs the
// passes (input_loop.cpp, script_input.cpp) and SweepTable shows them together. Not thread-safe:
// one per model in one run.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "stages/build.h"
#include "turnkey/catalog/request.h"
#include "turnkey/console/report_printer.h"

namespace turnkey::engine_internal {

struct SweepPoint {
  std::string input_shapes;      // one --input-shapes value of load-onnx ("" = none given)
  std::optional<int64_t> batch;  // one --batch-sizes value; none = the model's own batch
  int concurrency = 1;           // one --concurrency value
};

struct SweepPlan {
  std::vector<std::string> input_shapes = {""};  // load-onnx's values (at least one)
  std::vector<int64_t> batches;                  // empty: no batch sweep
  std::vector<int> concurrency = {1};            // benchmark's values; {1} without benchmark

  // ONNX files: every shapes value x batch x concurrency, concurrency innermost.
  std::vector<SweepPoint> onnx_points() const;
  // More than one point for an ONNX file / for each model of a script.
  bool onnx_sweep() const { return onnx_points().size() > 1; }
  // The values that vary in this plan, for a point: "x:4x16, batch 4, concurrency 2"; "" when
  // nothing varies.
  std::string label(const SweepPoint& point) const;
};

// The plan of a request: load-onnx's --input-shapes and the first tool's --batch-sizes (both
// first tools get the same from the classic grammar), benchmark's --concurrency.
SweepPlan sweep_plan(const std::vector<ToolCall>& sequence, const std::string& first);

// The benchmark options a point's pass runs with: its one concurrency over the sweep's list.
void apply_point(Build& build, const SweepPoint& point);

// Why the throughput at `higher` (a result's stats) is not above that at `lower`, a result of the
// same model and inputs at a lower concurrency: thread budget, busy machine, more requests than
// CPUs, noise; "" when it is above. One line.
std::string no_gain_note(const nlohmann::json& lower, const nlohmann::json& higher);

// The points of one model: their outcomes, read from each pass's build before it is finished,
// and the block that shows them together.
class SweepTable {
 public:
  // Records the pass of `point` (labelled `label`). For a successful concurrency point whose
  // throughput does not rise above the nearest lower concurrency's with the same shapes and
  // batch, adds no_gain_note to the result's measurement_flags (so it is kept) and to the table.
  // Returns that note ("" when none).
  std::string add(Build& build, const SweepPoint& point, const std::string& label);
  size_t size() const { return points_.size(); }

  // `first` (the first point's block: the model's fields) with one status over all points and a
  // table of them: point, median and p99 latency, throughput, load time, threads and sessions;
  // then each point's warnings and failures, named by point.
  ModelBlock block(ModelBlock first) const;

 private:
  struct Point {
    SweepPoint point;
    std::string label, status;  // status: the pass's block status line
    std::string build_name;
    bool ok = false;
    nlohmann::json stats;  // the result's fields
    std::vector<std::string> notes;
    std::string correctness;  // the pass's Correctness line value ("" when none)
  };
  std::vector<Point> points_;
};

}  // namespace turnkey::engine_internal
