// File helpers. write_file_atomic writes a temp file beside the target and renames it over the
// target, so readers see the old or the new content, never a partial one.
#pragma once

#include <filesystem>
#include <string>

namespace turnkey {

// Throws Error(Io) naming the path and the OS reason.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);
std::string read_file(const std::filesystem::path& path);

// "~/x" -> "$HOME/x"; other paths unchanged.
std::filesystem::path expand_user(const std::string& path);

// Human size as the reference documents print it: "240.0 B", "1.99 KB", "44.59 MB".
std::string format_bytes(double bytes);

}  // namespace turnkey
