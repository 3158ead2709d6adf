// Internal to the engine: sweeps (docs/measurement.md). A run that asks for several input shapes
// (load-onnx --input-shapes used more than once), batch sizes (--batch-sizes) or requests in
// flight (benchmark --concurrency 1,2,4) makes one result per point. Each point is one pass of
// the model's build with the point's values, exactly what the command would do given those
// values alone (its own result in the build's stats, its own status). One driver runs the passes
// of every kind of input (run_sweep: an ONNX file's points, a cached build's, each model's in
// each run of a script), configured by SweepSettings, and SweepTable shows them together. Not
// thread-safe: one per model in one run.
#pragma once

#include <cstdint>
#include <functional>
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

  // Every shapes value x batch x concurrency, concurrency innermost (a cached build's plan has
  // neither shapes nor batches: its concurrencies).
  std::vector<SweepPoint> points() const;
  // More than one point: the passes are shown together, as a sweep.
  bool is_sweep() const { return points().size() > 1; }
  // The plan of one run of a script at `batch` (its --batch_size; none: the script's own): that
  // batch x concurrency.
  SweepPlan at_batch(std::optional<int64_t> batch) const;
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

// What one sweep runs, as LoadGen's TestSettings configure its one driver: the plan (its points
// and their labels), what a failed point's notice names ("model.onnx", "s.py: resnet"), and a
// second table every point also goes into (a script's batch sweep: its runs' points of a model).
struct SweepSettings {
  SweepPlan plan;
  std::string subject;
  SweepTable* also = nullptr;
};

// Hands a pass's build to the driver once its tools ran, before it is finished; `cause` goes
// before the build's error in a failed point's notice ("" when none).
using SweepRecord = std::function<void(Build& build, const std::string& cause)>;
// One pass of the build at a point: builds, calls `record` once, finishes; returns its block.
using SweepPass = std::function<ModelBlock(const SweepPoint& point, const SweepRecord& record)>;
// A one-line notice to the user (RunContext::notice).
using SweepNotice = std::function<void(const std::string& text)>;

// The one sweep driver: runs `pass` once per point of the settings' plan. With more than one
// point each pass is added to a table (with its no-gain note) and a failed point is said in one
// line ("<subject>: <label>: <cause><error>"); every pass goes into `also`. Returns the block to
// print: the first point's block with the table of all points, or the one point's block.
ModelBlock run_sweep(const SweepSettings& settings, const SweepPass& pass,
                     const SweepNotice& notice);

}  // namespace turnkey::engine_internal
