#include "run/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "pipeline/first_tool.h"
#include "turnkey/catalog/tools.h"
#include "turnkey/common/text.h"

namespace turnkey::engine_internal {

using nlohmann::json;

namespace {

double number(const json& stats, const char* key, double fallback = 0) {
  auto it = stats.find(key);
  return it != stats.end() && it->is_number() ? it->get<double>() : fallback;
}

int64_t integer(const json& stats, const char* key, int64_t fallback) {
  auto it = stats.find(key);
  return it != stats.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

// The cores a result's requests could use: the default thread budget (cpu_budget.h: the physical
// cores of the usable CPUs within any quota), else the pinned CPUs, else the physical cores.
int usable_cpus(const json& stats) {
  const json env = stats.value("environment", json::object());
  if (const int64_t budget = integer(env, "default_threads", 0); budget > 0) {
    return static_cast<int>(budget);
  }
  const json pinned = env.value("pinned_cpus", json::array());
  if (pinned.is_array() && !pinned.empty()) return static_cast<int>(pinned.size());
  return std::max<int>(1, static_cast<int>(integer(env, "physical_cores", 1)));
}

// Rows of text columns, left-aligned, two spaces apart.
std::vector<std::string> aligned(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::vector<std::string> out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out.push_back(line);
  }
  return out;
}

}  // namespace

std::vector<SweepPoint> SweepPlan::points() const {
  std::vector<SweepPoint> points;
  const std::vector<std::optional<int64_t>> bs =
      batches.empty() ? std::vector<std::optional<int64_t>>{std::nullopt}
                      : std::vector<std::optional<int64_t>>(batches.begin(), batches.end());
  for (const std::string& shapes : input_shapes) {
    for (const auto& b : bs) {
      for (int c : concurrency) points.push_back({shapes, b, c});
    }
  }
  return points;
}

SweepPlan SweepPlan::at_batch(std::optional<int64_t> batch) const {
  SweepPlan run = *this;
  run.batches.clear();
  if (batch) run.batches = {*batch};
  return run;
}

std::string SweepPlan::label(const SweepPoint& p) const {
  std::vector<std::string> parts;
  if (input_shapes.size() > 1)
    parts.push_back(p.input_shapes.empty() ? "(no shapes)" : p.input_shapes);
  if (p.batch) parts.push_back(fmt::format("batch {}", *p.batch));
  if (concurrency.size() > 1 || p.concurrency > 1) {
    parts.push_back(fmt::format("concurrency {}", p.concurrency));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

SweepPlan sweep_plan(const std::vector<ToolCall>& sequence, const std::string& first) {
  SweepPlan plan;
  const auto has = [&](const char* tool) {
    return std::any_of(sequence.begin(), sequence.end(),
                       [&](const ToolCall& c) { return c.name == tool; });
  };
  if (first == "load-onnx" && has("load-onnx")) {
    const json opts = tool_options(sequence, "load-onnx");
    const std::vector<std::string> shapes = strings_values(opts.value("input_shapes", json()));
    if (!shapes.empty()) plan.input_shapes = shapes;
  }
  if ((first == "load-onnx" || first == "discover") && has(first.c_str())) {
    for (long long b :
         int_list_values(tool_options(sequence, first).value("batch_sizes", json()))) {
      plan.batches.push_back(b);
    }
  }
  if (has("benchmark")) {
    plan.concurrency.clear();
    for (long long c :
         int_list_values(tool_options(sequence, "benchmark").value("concurrency", json(1)))) {
      plan.concurrency.push_back(static_cast<int>(c));
    }
    if (plan.concurrency.empty()) plan.concurrency = {1};
  }
  return plan;
}

void apply_point(Build& build, const SweepPoint& point) {
  build.point_options = {{"benchmark", {{"concurrency", point.concurrency}}}};
}

std::string no_gain_note(const json& lower, const json& higher) {
  const double low_ips = number(lower, "throughput_ips"),
               high_ips = number(higher, "throughput_ips");
  if (!(low_ips > 0) || high_ips > low_ips) return "";
  const int64_t low_n = integer(lower, "concurrency", 1),
                high_n = integer(higher, "concurrency", 1);
  const int64_t low_threads = integer(lower, "threads", 1);
  const int64_t high_threads = integer(higher, "threads", 1);
  const int cpus = usable_cpus(higher);
  std::vector<std::string> why;
  if (low_threads * low_n >= cpus && high_threads * high_n <= low_threads * low_n) {
    why.push_back(fmt::format(
        "at concurrency {} the runtime already used {} thread{} on {} CPUs, and concurrency {} "
        "splits the same CPUs ({} thread{} per request): requests in flight can only win what "
        "one request's threads left idle",
        low_n, low_threads * low_n, low_threads * low_n == 1 ? "" : "s", cpus, high_n, high_threads,
        high_threads == 1 ? "" : "s"));
  }
  if (high_n > cpus) {
    why.push_back(fmt::format("{} requests on {} CPUs take turns", high_n, cpus));
  }
  double busy = 0;
  for (const json* s : {&lower, &higher}) {
    const json env = s->value("environment", json::object());
    busy = std::max({busy, number(env, "runnable_other_threads_before"),
                     number(env, "runnable_other_threads_after")});
  }
  if (busy >= 0.5) {
    why.push_back(fmt::format("the machine was busy ({:.1f} other runnable threads)", busy));
  }
  for (const json* s : {&lower, &higher}) {
    const json codes = s->value("flag_codes", json::array());
    const bool noisy =
        std::find(codes.begin(), codes.end(), json(flag_name(FlagCode::Noisy))) != codes.end();
    if (noisy) {
      why.push_back("the measurements are noisy (see their warnings)");
      break;
    }
  }
  if (why.empty()) {
    why.push_back(
        "no cause turnkey can see (the runtime or memory bandwidth may serialize the "
        "requests)");
  }
  // The flags' short label is what comes before the first ':', and flags are joined with "; "
  // in the report: reasons are joined otherwise.
  return fmt::format(
      "no throughput gain: concurrency {} gave {:.1f} IPS, not above concurrency {}'s {:.1f} "
      "IPS, because {}",
      high_n, high_ips, low_n, low_ips, fmt::join(why, ", and "));
}

ModelBlock run_sweep(const SweepSettings& settings, const SweepPass& pass,
                     const SweepNotice& notice) {
  const std::vector<SweepPoint> points = settings.plan.points();
  const bool sweep = points.size() > 1;
  SweepTable table;
  std::optional<ModelBlock> first;
  for (const SweepPoint& point : points) {
    const std::string label = settings.plan.label(point);
    ModelBlock block = pass(point, [&](Build& build, const std::string& cause) {
      if (sweep) {
        table.add(build, point, label);
        if (build.failed) {
          notice(fmt::format("{}: {}: {}{}", settings.subject, label, cause,
                             one_line(build.state.error)));
        }
      }
      if (settings.also) settings.also->add(build, point, label);
    });
    if (!first) first = std::move(block);
  }
  return sweep ? table.block(std::move(*first)) : std::move(*first);
}

std::string SweepTable::add(Build& build, const SweepPoint& point, const std::string& label) {
  Point p;
  p.point = point;
  p.label = label.empty() ? "-" : label;
  p.ok = !build.failed && build.stats.has("median_latency_ms");
  p.status = build.block.status;
  p.build_name = build.build_name;
  p.stats = build.stats.fields();
  p.correctness = build.findings.correctness;
  p.notes = flag_texts(build.findings.flags);
  std::string note;
  if (p.ok && point.concurrency > 1) {
    const Point* lower = nullptr;
    for (const Point& q : points_) {
      if (!q.ok || q.point.input_shapes != point.input_shapes || q.point.batch != point.batch ||
          q.point.concurrency >= point.concurrency) {
        continue;
      }
      if (!lower || q.point.concurrency > lower->point.concurrency) lower = &q;
    }
    if (lower) note = no_gain_note(lower->stats, p.stats);
    if (!note.empty()) {
      std::vector<Flag>& flags = build.findings.flags;
      // Another table of the same pass (a script's batch sweep) may have added it already.
      if (std::none_of(flags.begin(), flags.end(), [&](const Flag& f) { return f.text == note; })) {
        flags.push_back({FlagCode::NoThroughputGain, note});
      }
      build.stats.set("measurement_flags", flag_texts(flags));
      build.stats.set("flag_codes", flag_names(flags));
      build.stats.set("noisy", true);
      p.stats = build.stats.fields();
      p.notes.push_back(note);
    }
  }
  points_.push_back(std::move(p));
  return note;
}

ModelBlock SweepTable::block(ModelBlock first) const {
  if (points_.empty()) return first;
  size_t ok = 0;
  for (const Point& p : points_) ok += p.ok ? 1 : 0;
  const Point* first_ok = nullptr;
  for (const Point& p : points_) {
    if (p.ok) {
      first_ok = &p;
      break;
    }
  }
  if (!first_ok) {
    first.status = points_.front().status;
  } else {
    // "Successfully benchmarked on CPU (ort v1.29)" -> "... at 3 points" / "... at 2 of 3 points".
    first.status = first_ok->status +
                   (ok == points_.size() ? fmt::format(" at {} points", ok)
                                         : fmt::format(" at {} of {} points", ok, points_.size()));
  }
  // Points of several builds (a script's batch sweep: each size is another model): the build
  // of each point is a column, and the first point's hash and build dir say nothing of the rest.
  const bool builds_differ = std::any_of(points_.begin(), points_.end(), [&](const Point& p) {
    return p.build_name != points_.front().build_name;
  });
  if (builds_differ) first.sig_fields.clear();
  std::vector<std::vector<std::string>> rows = {
      {"Point", "Median ms", "p99 ms", "Throughput IPS", "Load s", "Threads x sessions"}};
  if (builds_differ) rows.front().push_back("Build");
  for (const Point& p : points_) {
    if (!p.ok) {
      rows.push_back({p.label, "failed (below)"});
      continue;
    }
    rows.push_back(
        {p.label, format_latency(number(p.stats, "median_latency_ms")),
         format_latency(number(p.stats, "p99_latency_ms")),
         fmt::format("{:.1f}", number(p.stats, "throughput_ips")),
         fmt::format("{:.4g}", number(p.stats, "load_s")),
         fmt::format("{} x {}", integer(p.stats, "threads", 0), integer(p.stats, "sessions", 1))});
    if (builds_differ) rows.back().push_back(p.build_name);
  }
  first.status_detail = aligned(rows);
  // One Correctness line when every point says the same, else one per point.
  std::vector<std::string> verdicts;
  for (const Point& p : points_) {
    if (p.ok && !p.correctness.empty() &&
        std::find(verdicts.begin(), verdicts.end(), p.correctness) == verdicts.end()) {
      verdicts.push_back(p.correctness);
    }
  }
  auto labelled = [](const char* label, const std::string& text) {
    std::string l = std::string(label) + ":";
    l.resize(std::max<size_t>(l.size(), 16), ' ');
    return l + text;
  };
  if (verdicts.size() == 1) {
    first.status_detail.push_back(labelled("Correctness", verdicts.front()));
  } else {
    for (const Point& p : points_) {
      if (p.ok && !p.correctness.empty()) {
        first.status_detail.push_back(labelled("Correctness", p.label + ": " + p.correctness));
      }
    }
  }
  for (const Point& p : points_) {
    if (!p.ok) first.status_detail.push_back(labelled("Failed", p.label + ": " + p.status));
    for (const std::string& n : p.notes) {
      first.status_detail.push_back(labelled("Warning", p.label + ": " + n));
    }
  }
  return first;
}

}  // namespace turnkey::engine_internal
