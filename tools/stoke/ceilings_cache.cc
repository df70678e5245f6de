#include "ceilings_cache.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace stoke::cli {

std::string CeilingsCachePath() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string base = xdg && *xdg ? xdg : std::string(home ? home : "/tmp") + "/.cache";
  return base + "/stoke/ceilings.tsv";
}

std::string CeilingsKey(const std::string& dataset, const std::string& storage_model) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  // v2: under a storage model the random reads are the model's alone (v1
  // evicted the page cache first, adding the real disk's cold reads).
  // v6: the codec share (codec_samples_per_second_per_core) at the end.
  std::string key = "v6|" + std::string(host) + "|" + dataset + "|" + storage_model;
  for (char& c : key) {
    if (c == '\t' || c == '\n') c = ' ';
  }
  return key;
}

std::optional<internal::Ceilings> ParseCeilingsLine(std::string_view line, std::string_view key) {
  const size_t tab = line.find('\t');
  if (tab == std::string_view::npos || line.substr(0, tab) != key) return std::nullopt;
  std::istringstream fields{std::string(line.substr(tab + 1))};
  internal::Ceilings c;
  if (fields >> c.storage_sequential_bytes_per_second >> c.storage_random_reads_per_second >>
      c.storage_random_reads_per_second_parallel >> c.decode_samples_per_second_per_core >>
      c.memory_copy_bytes_per_second >> c.h2d_bytes_per_second >>
      c.decode_samples_per_second_per_core_packed >> c.decode_samples_per_second_per_core_resized >>
      c.resize_short_side >> c.entropy_floor_samples_per_second_per_core >>
      c.entropy_floor_samples_per_second_per_core_packed >>
      c.entropy_floor_samples_per_second_per_core_resized >> c.remote_first_byte_p50_seconds >>
      c.remote_first_byte_p99_seconds >> c.remote_requests_per_second_parallel >>
      c.remote_connection_bytes_per_second >> c.codec_samples_per_second_per_core) {
    return c;
  }
  return std::nullopt;
}

std::optional<internal::Ceilings> LoadCeilings(const std::string& key) {
  std::ifstream in(CeilingsCachePath());
  std::string line;
  while (std::getline(in, line)) {
    if (auto c = ParseCeilingsLine(line, key)) return c;
  }
  return std::nullopt;
}

void StoreCeilings(const std::string& key, const internal::Ceilings& c) {
  const std::string path = CeilingsCachePath();
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::vector<std::string> kept;
  {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      if (line.compare(0, key.size() + 1, key + "\t") != 0) kept.push_back(line);
    }
  }
  char fields[512];
  std::snprintf(
      fields, sizeof fields,
      "%.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g %d %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g",
      c.storage_sequential_bytes_per_second, c.storage_random_reads_per_second,
      c.storage_random_reads_per_second_parallel, c.decode_samples_per_second_per_core,
      c.memory_copy_bytes_per_second, c.h2d_bytes_per_second,
      c.decode_samples_per_second_per_core_packed, c.decode_samples_per_second_per_core_resized,
      c.resize_short_side, c.entropy_floor_samples_per_second_per_core,
      c.entropy_floor_samples_per_second_per_core_packed,
      c.entropy_floor_samples_per_second_per_core_resized, c.remote_first_byte_p50_seconds,
      c.remote_first_byte_p99_seconds, c.remote_requests_per_second_parallel,
      c.remote_connection_bytes_per_second, c.codec_samples_per_second_per_core);
  kept.push_back(key + "\t" + fields);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    for (const std::string& l : kept) out << l << "\n";
    if (!out) {
      std::fprintf(stderr, "stoke profile: cannot write the ceilings cache %s\n", tmp.c_str());
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::fprintf(stderr, "stoke profile: cannot update %s\n", path.c_str());
}

}  // namespace stoke::cli
