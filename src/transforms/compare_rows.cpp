// Outputs whose rows are ordered by a score (top-k, NMS): when the elementwise comparison fails
// only because near-equal scores swapped rows, the rows are matched up to those ties
// (build_stages.h, Comparison).
#include <algorithm>
#include <cmath>
#include <map>

#include "compare_internal.h"

namespace turnkey::transforms::detail {

namespace {

// ---- rows ordered by a score (build_stages.h, Comparison) -------------------------------------

size_t element_count(const Output& o) {
  return is_float_type(o.type) ? o.values.size()
                               : (o.elem_bytes ? o.bytes.size() / o.elem_bytes : 0);
}

size_t row_width(const Output& o) {
  return o.shape.empty() || o.shape[0] <= 0 ? 0
                                            : element_count(o) / static_cast<size_t>(o.shape[0]);
}

// The largest difference an element may have: what diff() allows relative to max|reference|.
double abs_tolerance(const Output& ref, const Tolerance& tol) {
  double largest = 0;
  for (double v : ref.values) {
    if (std::isfinite(v)) largest = std::max(largest, std::abs(v));
  }
  return largest > 0 ? largest * tol.max_rel_error : tol.max_rel_error;
}

bool rows_equal(const Output& ref, size_t i, const Output& cand, size_t j, double abs_tol) {
  const size_t w = row_width(ref);
  if (is_float_type(ref.type)) {
    for (size_t e = 0; e < w; ++e) {
      const double r = ref.values[i * w + e], c = cand.values[j * w + e];
      if (r == c || (std::isnan(r) && std::isnan(c))) continue;
      if (!(std::abs(c - r) <= abs_tol)) return false;
    }
    return true;
  }
  const size_t b = w * ref.elem_bytes;
  return std::memcmp(ref.bytes.data() + i * b, cand.bytes.data() + j * b, b) == 0;
}

bool finite(const std::vector<double>& values) {
  return std::all_of(values.begin(), values.end(), [](double x) { return std::isfinite(x); });
}

// Outputs of one result (the same name up to its last `[`: `output[0]` for
// `output[0]['boxes']`) with the same leading dimension, and which of them order the rows.
struct RowGroup {
  int64_t rows = 0;
  std::vector<size_t> members;  // indices into the outputs
  std::vector<size_t> keys;     // members that are scores: rank 1, float, finite, sorted
};

std::vector<RowGroup> row_groups(const std::vector<Output>& ref, const std::vector<Output>& cand) {
  std::map<std::pair<std::string, int64_t>, RowGroup> groups;
  for (size_t k = 0; k < ref.size(); ++k) {
    const Output& r = ref[k];
    const Output& c = cand[k];
    if (r.shape.empty() || r.shape[0] < 2 || r.shape != c.shape || r.type == DType::String ||
        c.type == DType::String || is_float_type(r.type) != is_float_type(c.type) ||
        r.elem_bytes != c.elem_bytes) {
      continue;
    }
    const size_t bracket = r.name.rfind('[');
    RowGroup& g = groups[{bracket == std::string::npos ? std::string() : r.name.substr(0, bracket),
                          r.shape[0]}];
    g.rows = r.shape[0];
    g.members.push_back(k);
    if (r.shape.size() == 1 && is_float_type(r.type) && finite(r.values) && finite(c.values) &&
        (std::is_sorted(r.values.begin(), r.values.end()) ||
         std::is_sorted(r.values.rbegin(), r.values.rend()))) {
      g.keys.push_back(k);
    }
  }
  std::vector<RowGroup> out;
  for (auto& [name, g] : groups) {
    if (!g.keys.empty()) out.push_back(std::move(g));
  }
  return out;
}

struct RowMatch {
  bool explained = false;         // every row matched, or substituted among tied scores
  std::vector<int64_t> cand_row;  // per reference row: its candidate row, -1 if substituted
  int64_t reordered = 0, substituted = 0;
};

RowMatch match_rows(const RowGroup& g, const std::vector<Output>& ref,
                    const std::vector<Output>& cand, const std::vector<double>& abs_tol) {
  const auto n = static_cast<size_t>(g.rows);
  const auto same_row = [&](size_t i, size_t j) {
    return std::all_of(g.members.begin(), g.members.end(),
                       [&](size_t k) { return rows_equal(ref[k], i, cand[k], j, abs_tol[k]); });
  };
  // Scores tie: reference row i against reference row j (positions), or against candidate row j.
  const auto tie = [&](const std::vector<Output>& other, size_t i, size_t j) {
    return std::all_of(g.keys.begin(), g.keys.end(), [&](size_t k) {
      return std::abs(ref[k].values[i] - other[k].values[j]) <= abs_tol[k];
    });
  };
  RowMatch m;
  m.cand_row.assign(n, -1);
  std::vector<char> used(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (same_row(i, i)) m.cand_row[i] = static_cast<int64_t>(i), used[i] = 1;
  }
  // A moved row stays among the positions whose scores tie with its own: with sorted scores,
  // a contiguous run around it.
  for (size_t i = 0; i < n; ++i) {
    if (m.cand_row[i] >= 0) continue;
    for (int step : {-1, 1}) {
      for (auto j = static_cast<int64_t>(i) + step;
           j >= 0 && j < g.rows && tie(ref, i, static_cast<size_t>(j)) && m.cand_row[i] < 0;
           j += step) {
        if (!used[j] && same_row(i, static_cast<size_t>(j))) m.cand_row[i] = j, used[j] = 1;
      }
    }
    if (m.cand_row[i] >= 0) ++m.reordered;
  }
  std::vector<size_t> left_ref, left_cand;
  for (size_t i = 0; i < n; ++i) {
    if (m.cand_row[i] < 0) left_ref.push_back(i);
    if (!used[i]) left_cand.push_back(i);
  }
  // A substitution needs a tie among the reference's own rows too: with scores the right
  // values and rows that differ, a score no other row shares is a wrong row, not a tie broken
  // another way.
  const auto tied_with_neighbour = [&](size_t i) {
    return (i > 0 && tie(ref, i, i - 1)) || (i + 1 < n && tie(ref, i, i + 1));
  };
  for (size_t t = 0; t < left_ref.size(); ++t) {
    if (!tie(cand, left_ref[t], left_cand[t]) || !tied_with_neighbour(left_ref[t])) return m;
  }
  m.substituted = static_cast<int64_t>(left_ref.size());
  m.explained = true;
  return m;
}

Output take_rows(const Output& o, const std::vector<size_t>& rows) {
  Output out = o;
  const size_t w = row_width(o);
  out.shape[0] = static_cast<int64_t>(rows.size());
  if (is_float_type(o.type)) {
    out.values.clear();
    for (size_t r : rows)
      out.values.insert(out.values.end(), o.values.begin() + r * w, o.values.begin() + (r + 1) * w);
  } else {
    out.bytes.clear();
    for (size_t r : rows) out.bytes.append(o.bytes, r * w * o.elem_bytes, w * o.elem_bytes);
  }
  return out;
}

}  // namespace

Comparison compare_aligned(const std::vector<Output>& ref, const std::vector<Output>& cand,
                           const Tolerance& tol) {
  std::vector<OutputDiff> diffs;
  for (size_t k = 0; k < ref.size(); ++k) diffs.push_back(diff(ref[k], cand[k], tol));
  Comparison result;
  for (const RowGroup& g : row_groups(ref, cand)) {
    if (std::all_of(g.members.begin(), g.members.end(),
                    [&](size_t k) { return diffs[k].within; })) {
      continue;
    }
    std::vector<double> abs_tol(ref.size(), 0);
    for (size_t k : g.members) abs_tol[k] = abs_tolerance(ref[k], tol);
    const RowMatch m = match_rows(g, ref, cand, abs_tol);
    if (!m.explained) continue;
    std::vector<size_t> ref_rows, cand_rows;
    for (size_t i = 0; i < m.cand_row.size(); ++i) {
      if (m.cand_row[i] < 0) continue;
      ref_rows.push_back(i);
      cand_rows.push_back(static_cast<size_t>(m.cand_row[i]));
    }
    for (size_t k : g.members) {
      diffs[k] = diff(take_rows(ref[k], ref_rows), take_rows(cand[k], cand_rows), tol);
      diffs[k].reordered_rows = m.reordered;
      diffs[k].substituted_rows = m.substituted;
    }
    result.ordered_rows += g.rows;
    result.reordered_rows += m.reordered;
    result.substituted_rows += m.substituted;
  }
  for (OutputDiff& d : diffs) {
    result.within &= d.within;
    result.worst_rel_error = std::max(result.worst_rel_error, d.rel_error);
    result.worst_cosine = std::min(result.worst_cosine, d.cosine);
    result.outputs.push_back(std::move(d));
  }
  result.inconclusive = result.within && result.substituted_rows > 0;
  return result;
}

}  // namespace turnkey::transforms::detail
