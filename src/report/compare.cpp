#include "turnkey/report/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include "turnkey/machine/speed_probe.h"

namespace turnkey::report {

UTest mann_whitney_greater(const std::vector<double>& candidate, const std::vector<double>& base) {
  UTest t;
  const size_t n1 = candidate.size(), n2 = base.size();
  if (n1 == 0 || n2 == 0) return t;
  std::vector<std::pair<double, bool>> all;  // value, from candidate
  all.reserve(n1 + n2);
  for (double v : candidate) all.emplace_back(v, true);
  for (double v : base) all.emplace_back(v, false);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // Average ranks over ties; the tie term corrects the variance.
  double rank_sum = 0, tie_term = 0;
  const size_t n = all.size();
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && all[j].first == all[i].first) ++j;
    const double avg_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    const double ties = static_cast<double>(j - i);
    tie_term += ties * ties * ties - ties;
    for (size_t k = i; k < j; ++k) {
      if (all[k].second) rank_sum += avg_rank;
    }
    i = j;
  }
  const double d1 = static_cast<double>(n1), d2 = static_cast<double>(n2),
               dn = static_cast<double>(n);
  t.u = rank_sum - d1 * (d1 + 1) / 2;
  const double mean = d1 * d2 / 2;
  const double var = d1 * d2 / 12 * ((dn + 1) - (dn > 1 ? tie_term / (dn * (dn - 1)) : 0));
  if (var <= 0) return t;  // every value tied: no evidence either way
  t.z = (t.u - mean - 0.5) / std::sqrt(var);
  t.p_value = 0.5 * std::erfc(t.z / std::sqrt(2.0));
  return t;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Slower:
      return "SLOWER";
    case Verdict::Faster:
      return "faster";
    case Verdict::NoChange:
      return "no significant change";
    case Verdict::Untested:
      return "untested";
    case Verdict::MachineDiffers:
      return "machine speed differs";
  }
  return "?";
}

namespace {

bool measured(const Row& r) {
  return r.successful() && std::isfinite(r.number("median_latency_ms"));
}

// The slowest speed probe of the row's run (0: none recorded, e.g. caches before schema 5).
double probe_of(const Row& r) {
  const double v = r.number("speed_probe_ms");
  return std::isfinite(v) && v > 0 ? v : 0;
}

std::string display_name(const Row& r) {
  return r.text("model_name").empty() ? r.text("build_name") : r.text("model_name");
}

// Measurement key -> first measured row; model key -> first row of any status.
struct Index {
  std::map<std::string, const Row*> measured;
  std::map<std::string, int> measured_count;
  std::map<std::string, const Row*> any_by_model;
  std::vector<std::string> order;  // measurement keys in row order
};

Index index_rows(const Report& report) {
  Index ix;
  for (const Row& r : report.rows) {
    ix.any_by_model.emplace(r.model_key(), &r);
    if (!measured(r)) continue;
    const std::string key = r.measurement_key();
    if (++ix.measured_count[key] == 1) {
      ix.measured.emplace(key, &r);
      ix.order.push_back(key);
    }
  }
  return ix;
}

// What `other` says about the model of `r` when it has no matching measurement.
std::string other_side_note(const Row& r, const Index& other) {
  for (const auto& [key, row] : other.measured) {
    if (row->model_key() == r.model_key()) {
      return fmt::format("measured there on {} {}", row->text("runtime"), row->text("device"));
    }
  }
  auto it = other.any_by_model.find(r.model_key());
  if (it == other.any_by_model.end()) return "";
  const Row& o = *it->second;
  std::string s = o.text("status");
  if (o.has("last_stage")) s += " at " + o.text("last_stage");
  if (o.has("error")) s += ": " + o.text("error");
  return s;
}

Unmatched unmatched(const Row& r, const Index& other) {
  return {display_name(r),  r.text("build_name"), r.text("runtime"),
          r.text("device"), r.settings(),         other_side_note(r, other)};
}

// The machines' own speed: a latency move the probe made too is the machine's, not the model's
// (same direction, beyond the probe's threshold).
void weigh_machine_speed(Matched& m, const Row& ra, const Row& rb,
                         std::vector<std::string>& notes) {
  m.probe_a_ms = probe_of(ra);
  m.probe_b_ms = probe_of(rb);
  if (m.probe_a_ms > 0 && m.probe_b_ms > 0) {
    const double machine = m.probe_b_ms / m.probe_a_ms;
    const bool slower_machine = machine > 1 + kProbeSlowdownThreshold;
    const bool faster_machine = machine < 1 / (1 + kProbeSlowdownThreshold);
    if ((m.verdict == Verdict::Slower && slower_machine) ||
        (m.verdict == Verdict::Faster && faster_machine)) {
      notes.push_back(fmt::format(
          "the speed probe ran {:.2f} ms in A, {:.2f} ms in B ({:.2f}x): B {} as a "
          "machine, so the change may be the machine's",
          m.probe_a_ms, m.probe_b_ms, machine, slower_machine ? "was slower" : "was faster"));
      m.verdict = Verdict::MachineDiffers;
    } else if (slower_machine || faster_machine) {
      notes.push_back(
          fmt::format("speed probe A {:.2f} ms, B {:.2f} ms", m.probe_a_ms, m.probe_b_ms));
    }
  }
}

}  // namespace

Comparison compare_reports(const Report& a, const Report& b, const CompareOptions& options) {
  Comparison c;
  const Index ia = index_rows(a), ib = index_rows(b);
  for (const std::string& key : ia.order) {
    const Row& ra = *ia.measured.at(key);
    auto found = ib.measured.find(key);
    if (found == ib.measured.end()) {
      c.only_a.push_back(unmatched(ra, ib));
      continue;
    }
    const Row& rb = *found->second;
    Matched m;
    m.model_name = display_name(ra);
    m.build_name_a = ra.text("build_name");
    m.build_name_b = rb.text("build_name");
    m.runtime = ra.text("runtime");
    m.device = ra.text("device");
    m.settings = ra.settings();
    m.samples_a = ra.samples_ms.size();
    m.samples_b = rb.samples_ms.size();
    const bool tested = m.samples_a >= options.min_samples && m.samples_b >= options.min_samples;
    // The ratio uses the same numbers the test sees: the raw samples when there are any.
    m.median_a_ms = m.samples_a ? median_of(ra.samples_ms) : ra.number("median_latency_ms");
    m.median_b_ms = m.samples_b ? median_of(rb.samples_ms) : rb.number("median_latency_ms");
    m.ratio = m.median_a_ms > 0 ? m.median_b_ms / m.median_a_ms
                                : std::numeric_limits<double>::quiet_NaN();
    std::vector<std::string> notes;
    if (tested) {
      const double k = 1 + options.threshold;
      std::vector<double> a_scaled = ra.samples_ms, b_scaled = rb.samples_ms;
      for (double& v : a_scaled) v *= k;
      for (double& v : b_scaled) v *= k;
      m.p_slower = mann_whitney_greater(rb.samples_ms, a_scaled).p_value;
      m.p_faster = mann_whitney_greater(ra.samples_ms, b_scaled).p_value;
      m.verdict = m.p_slower < options.alpha   ? Verdict::Slower
                  : m.p_faster < options.alpha ? Verdict::Faster
                                               : Verdict::NoChange;
    } else {
      for (const auto& [side, row, n] :
           {std::tuple{"A", &ra, m.samples_a}, std::tuple{"B", &rb, m.samples_b}}) {
        if (n >= options.min_samples) continue;
        notes.push_back(
            n == 0 ? fmt::format("{}: no raw samples{}", side,
                                 row->samples_note.empty() ? "" : " (" + row->samples_note + ")")
                   : fmt::format("{}: only {} samples", side, n));
      }
    }
    weigh_machine_speed(m, ra, rb, notes);
    for (const auto& [side, n] :
         {std::pair{"A", ia.measured_count.at(key)}, std::pair{"B", ib.measured_count.at(key)}}) {
      if (n > 1) notes.push_back(fmt::format("{}: {} rows, first used", side, n));
    }
    for (const std::string& n : notes) m.note += (m.note.empty() ? "" : "; ") + n;
    if (m.verdict == Verdict::Slower) ++c.slowdowns;
    if (m.verdict == Verdict::MachineDiffers) ++c.machine_differs;
    c.matched.push_back(std::move(m));
  }
  for (const std::string& key : ib.order) {
    if (!ia.measured.count(key)) c.only_b.push_back(unmatched(*ib.measured.at(key), ia));
  }
  return c;
}

namespace {

std::string fmt_p(double p, bool tested) {
  if (!tested) return "-";
  if (p < 1e-4) return fmt::format("{:.0e}", std::max(p, 1e-300));
  return fmt::format("{:.4f}", p);
}

// Left-aligned text columns, right-aligned numeric columns, two spaces apart.
std::string table(const std::vector<std::string>& head, const std::vector<bool>& right,
                  const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w(head.size());
  auto width = [](const std::string& s) {
    size_t n = 0;
    for (unsigned char ch : s) n += (ch & 0xC0) != 0x80;
    return n;
  };
  for (size_t i = 0; i < head.size(); ++i) w[i] = width(head[i]);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], width(r[i]));
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t i = 0; i < cells.size(); ++i) {
      std::string pad(w[i] - width(cells[i]), ' ');
      if (i) l += "  ";
      l += right[i] ? pad + cells[i] : (i + 1 == cells.size() ? cells[i] : cells[i] + pad);
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(head);
  for (const auto& r : rows) line(r);
  return out;
}

}  // namespace

std::string format_comparison(const Comparison& c, const CompareOptions& options,
                              const std::string& label_a, const std::string& label_b) {
  std::string out;
  out += fmt::format("A: {}\nB: {}\n", label_a, label_b);
  out += fmt::format(
      "Test: one-sided Mann-Whitney U on raw samples (normal approximation), B against A x {:g}; "
      "slower when p < {:g}.\n\n",
      1 + options.threshold, options.alpha);
  if (c.matched.empty()) {
    out += "No measurement is in both A and B.\n";
  } else {
    std::vector<std::vector<std::string>> rows;
    for (const Matched& m : c.matched) {
      bool tested = m.verdict != Verdict::Untested;
      std::string build = m.build_name_a == m.build_name_b
                              ? m.build_name_a
                              : m.build_name_a + " / " + m.build_name_b;
      double p = m.ratio >= 1 ? m.p_slower : m.p_faster;
      rows.push_back(
          {m.model_name, build, m.runtime, m.device, m.settings,
           fmt::format("{:.4g}", m.median_a_ms), fmt::format("{:.4g}", m.median_b_ms),
           std::isfinite(m.ratio) ? fmt::format("{:.3f}", m.ratio) : "-", fmt_p(p, tested),
           std::string(verdict_name(m.verdict)) + (m.note.empty() ? "" : " (" + m.note + ")")});
    }
    out += table({"model", "build", "runtime", "device", "settings", "A median ms", "B median ms",
                  "B/A", "p", "verdict"},
                 {false, false, false, false, false, true, true, true, true, false}, rows);
  }
  auto list = [&](const char* title, const std::vector<Unmatched>& items, const char* other) {
    out += fmt::format("\n{} ({}):{}\n", title, items.size(), items.empty() ? " none" : "");
    for (const Unmatched& u : items) {
      out += fmt::format("  {} ({}) on {} {}{}{}\n", u.model_name, u.build_name, u.runtime,
                         u.device, u.settings.empty() ? "" : " (" + u.settings + ")",
                         u.other_side.empty() ? fmt::format(" - not in {}", other)
                                              : fmt::format(" - {}: {}", other, u.other_side));
    }
  };
  list("Only in A", c.only_a, "B");
  list("Only in B", c.only_b, "A");
  out += "\n";
  if (c.machine_differs > 0) {
    out += fmt::format(
        "{} change(s) not counted: the machine-speed probe moved with the latency by more than "
        "{:g}% (docs/measurement.md).\n",
        c.machine_differs, kProbeSlowdownThreshold * 100);
  }
  if (c.slowdowns > 0) {
    out += fmt::format("{} significant slowdown(s) beyond {:g}%.\n", c.slowdowns,
                       options.threshold * 100);
  } else {
    out += fmt::format("No significant slowdown beyond {:g}%.\n", options.threshold * 100);
  }
  return out;
}

}  // namespace turnkey::report
