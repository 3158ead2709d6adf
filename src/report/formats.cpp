// CSV and JSON renderings of report rows, the machine fingerprint, and report file naming.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>

#include "turnkey/cache/fields.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/common/sha256.h"
#include "turnkey/common/version.h"
#include "turnkey/machine/system_info.h"
#include "turnkey/report/report.h"

namespace turnkey::report {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

std::string csv_field(std::string_view value) {
  bool quote = value.find_first_of(",\"\r\n") != std::string_view::npos ||
               (!value.empty() && (value.front() == ' ' || value.back() == ' ' ||
                                   value.front() == '\t' || value.back() == '\t'));
  if (!quote) return std::string(value);
  std::string out;
  out.reserve(value.size() + 2);
  out += '"';
  for (char c : value) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string cell_text(const json& cell) {
  switch (cell.type()) {
    case json::value_t::string:
      return cell.get<std::string>();
    case json::value_t::number_integer:
      return std::to_string(cell.get<int64_t>());
    case json::value_t::number_unsigned:
      return std::to_string(cell.get<uint64_t>());
    case json::value_t::number_float: {
      double d = cell.get<double>();
      return std::isfinite(d) ? fmt::format("{}", d) : "";  // shortest round-trip form
    }
    case json::value_t::boolean:
      return cell.get<bool>() ? "true" : "false";
    default:
      return "";
  }
}

std::string csv_cell_text(const json& cell) {
  std::string text = cell_text(cell);
  // A spreadsheet runs a cell that starts with one of these as a formula (=HYPERLINK(...),
  // =cmd|...), and names and errors come from the scripts of a corpus: such text gets a leading
  // apostrophe, which spreadsheets read as "text" and do not show. Numbers are never text.
  if (cell.is_string() && !text.empty() &&
      std::string_view("=+-@\t\r").find(text.front()) != std::string_view::npos) {
    text.insert(0, 1, '\'');
  }
  return text;
}

std::string to_csv(const std::vector<Row>& rows) {
  std::string out = csv_header() + "\r\n";
  for (const Row& r : rows) {
    bool first = true;
    for (const Column& c : columns()) {
      if (!first) out += ',';
      first = false;
      auto it = r.cells.find(c.name);
      if (it != r.cells.end()) out += csv_field(csv_cell_text(*it));
    }
    out += "\r\n";
  }
  return out;
}

json machine_fingerprint() {
  MachineFacts m = machine_facts();
  json facts = {{"cpu_model", m.cpu.model},
                {"physical_cores", m.cpu.physical_cores},
                {"logical_cpus", m.cpu.logical_cpus},
                {"isa_flags", m.cpu.isa_flags},
                {"memory_bytes", m.memory_bytes},
                {"os", m.os},
                {"kernel", m.kernel}};
  // Only facts that do not change between runs on one machine go into the fingerprint.
  std::string fp = sha256_hex(facts.dump()).substr(0, 16);
  facts["governor"] = m.governor;
  facts["load_average_1m"] = m.load_average_1m;
  facts["fingerprint"] = fp;
  return facts;
}

std::string to_json(const Report& report, const Provenance& provenance) {
  ordered_json out;
  out["schema_version"] = kSchemaVersion;
  out["kind"] = "turnkey-report";
  out["turnkey_version"] = kVersion;
  out["generated_utc"] = provenance.generated_utc;
  out["command_line"] = provenance.command_line;
  out["machine"] = ordered_json::parse(provenance.machine.dump());
  ordered_json caches = ordered_json::array();
  for (const CacheSummary& c : report.caches) {
    caches.push_back({{"label", c.label},
                      {"path", c.path.string()},
                      {"builds", c.builds},
                      {"unreadable", c.unreadable}});
  }
  out["caches"] = caches;
  ordered_json cols = ordered_json::array();
  for (const Column& c : columns()) cols.push_back(c.name);
  out["columns"] = cols;
  out["duplicate_rows"] = report.duplicate_rows;
  ordered_json rows = ordered_json::array();
  for (const Row& r : report.rows) {
    ordered_json o;
    for (const Column& c : columns()) {
      auto it = r.cells.find(c.name);
      o[c.name] = it == r.cells.end() ? ordered_json() : ordered_json::parse(it->dump());
    }
    auto hf = r.cells.find("hash_full");
    o["hash_full"] = hf == r.cells.end() ? ordered_json() : ordered_json(hf->get<std::string>());
    o["samples_ms"] = r.samples_ms.empty() ? ordered_json() : ordered_json(r.samples_ms);
    o["samples_note"] = r.samples_note.empty() ? ordered_json() : ordered_json(r.samples_note);
    for (const StatsField& f : field_table()) {
      if (!f.whole) continue;
      const json& whole = r.object(f.key);
      o[f.key] = whole.is_object() ? ordered_json::parse(whole.dump()) : ordered_json();
    }
    rows.push_back(std::move(o));
  }
  out["rows"] = rows;
  return out.dump(1) + "\n";
}

Report report_from_json(const std::string& text, const std::string& label) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(ErrorKind::InvalidInput, fmt::format("{}: not JSON: {}", label, e.what()));
  }
  if (!j.is_object() || j.value("kind", "") != "turnkey-report" || !j.contains("schema_version") ||
      !j["schema_version"].is_number_integer() || !j.contains("rows") || !j["rows"].is_array()) {
    throw Error(ErrorKind::InvalidInput, label + ": not a turnkey JSON report");
  }
  int version = j["schema_version"].get<int>();
  if (version > kSchemaVersion) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("{}: report schema_version {} is newer than this turnkey reads ({})",
                            label, version, kSchemaVersion));
  }
  Report report;
  if (j.contains("caches") && j["caches"].is_array()) {
    for (const json& c : j["caches"]) {
      if (!c.is_object()) continue;
      const auto text = [&](const char* key) {
        return c.contains(key) && c[key].is_string() ? c[key].get<std::string>() : std::string();
      };
      const auto count = [&](const char* key) {
        return c.contains(key) && c[key].is_number_integer() ? c[key].get<int>() : 0;
      };
      report.caches.push_back(
          {text("label"), fs::path(text("path")), count("builds"), count("unreadable")});
    }
  }
  for (const json& r : j["rows"]) {
    if (!r.is_object()) continue;
    Row row;
    for (const Column& c : columns()) {
      auto it = r.find(c.name);
      if (it == r.end() || it->is_null()) continue;
      bool ok = c.type == CellType::Text      ? it->is_string()
                : c.type == CellType::Integer ? it->is_number_integer()
                                              : it->is_number();
      if (ok) row.cells[c.name] = *it;
    }
    if (r.contains("hash_full") && r["hash_full"].is_string())
      row.cells["hash_full"] = r["hash_full"];
    if (r.contains("samples_ms") && r["samples_ms"].is_array()) {
      for (const json& s : r["samples_ms"]) {
        if (s.is_number()) row.samples_ms.push_back(s.get<double>());
      }
    }
    if (r.contains("samples_note") && r["samples_note"].is_string()) {
      row.samples_note = r["samples_note"].get<std::string>();
    }
    for (const StatsField& f : field_table()) {
      if (f.whole && r.contains(f.key) && r[f.key].is_object()) row.objects[f.key] = r[f.key];
    }
    report.rows.push_back(std::move(row));
  }
  report.duplicate_rows = mark_duplicates(report.rows);
  return report;
}

std::string report_stem(std::chrono::system_clock::time_point when) {
  std::time_t t = std::chrono::system_clock::to_time_t(when);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "turnkey_report_%Y-%m-%d_%H-%M-%SZ", &tm);
  return buf;
}

namespace {

// Creates `path` only if it does not exist and writes `content`; 0 or -1 with errno, like link().
int write_exclusive(const fs::path& path, const std::string& content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      ::unlink(path.c_str());
      errno = err == 0 ? EIO : err;
      return -1;
    }
    done += static_cast<size_t>(n);
  }
  return ::close(fd);
}

}  // namespace

std::vector<fs::path> write_new_files(
    const fs::path& dir, const std::string& stem,
    const std::vector<std::pair<std::string, std::string>>& files) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw Error(ErrorKind::Io,
                fmt::format("cannot create report dir {}: {}", dir.string(), ec.message()));
  }
  // Write every file's content once to a temp file; then claim final names by hard link, which
  // fails instead of replacing an existing file.
  std::vector<fs::path> temps;
  auto cleanup = [&] {
    for (const fs::path& t : temps) fs::remove(t, ec);
  };
  for (const auto& [ext, content] : files) {
    std::string tmpl = (dir / (".turnkey_report_XXXXXX")).string();
    int fd = mkstemp(tmpl.data());
    if (fd < 0) {
      int err = errno;
      cleanup();
      throw Error(ErrorKind::Io, fmt::format("cannot write in report dir {}: {}", dir.string(),
                                             std::strerror(err)));
    }
    temps.emplace_back(tmpl);
    size_t done = 0;
    while (done < content.size()) {
      ssize_t n = ::write(fd, content.data() + done, content.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int err = errno;
        ::close(fd);
        cleanup();
        throw Error(ErrorKind::Io, fmt::format("writing {}: {}", tmpl, std::strerror(err)));
      }
      done += static_cast<size_t>(n);
    }
    fchmod(fd, 0644);
    ::close(fd);
  }
  for (int attempt = 1; attempt < 10000; ++attempt) {
    const std::string s = attempt == 1 ? stem : fmt::format("{}_{}", stem, attempt);
    std::vector<fs::path> made;
    bool clash = false;
    for (size_t i = 0; i < files.size() && !clash; ++i) {
      fs::path target = dir / (s + "." + files[i].first);
      int rc = ::link(temps[i].c_str(), target.c_str());
      if (rc != 0 && (errno == EPERM || errno == EOPNOTSUPP || errno == EXDEV)) {
        // No hard links here (FAT, some network file systems): exclusive create, not atomic.
        rc = write_exclusive(target, files[i].second);
      }
      if (rc == 0) {
        made.push_back(target);
      } else if (errno == EEXIST) {
        clash = true;
      } else {
        int err = errno;
        for (const fs::path& m : made) fs::remove(m, ec);
        cleanup();
        throw Error(ErrorKind::Io,
                    fmt::format("writing {}: {}", target.string(), std::strerror(err)));
      }
    }
    if (!clash) {
      cleanup();
      return made;
    }
    for (const fs::path& m : made) fs::remove(m, ec);  // ours, just linked: take back
  }
  cleanup();
  throw Error(ErrorKind::Io, fmt::format("no free report name for {} in {}", stem, dir.string()));
}

}  // namespace turnkey::report
