// ms-swift's run folder: <output_dir>/v<N>-<YYYYMMDD-HHMMSS>/ with args.json, logging.jsonl, runs/ (TensorBoard),
// images/ and checkpoint-<step>/ folders.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

namespace swift::train {

// Creates the run folder: `output_dir`/v<N>-<timestamp> where N counts the v* folders already there
// (add_version), else `output_dir` itself.
std::filesystem::path create_run_dir(const std::filesystem::path& output_dir, bool add_version);

// Appends one JSON object a line and flushes, so a killed run keeps every line it logged.
class JsonlLog {
 public:
  explicit JsonlLog(const std::filesystem::path& path);
  void write(const nlohmann::ordered_json& row);

 private:
  std::filesystem::path path_;
  std::ofstream out_;
};

// "1h 2m 3s" style for the console.
std::string format_duration(double seconds);

// A log row for the console: numbers rounded (the JSONL keeps full precision).
std::string format_log_row(const nlohmann::ordered_json& row);

// Peak memory in GiB for the logs: training on a CUDA device (cuda_device >= 0), the caching allocator's peak
// reserved bytes on it (what ms-swift logs as memory(GiB)); on the CPU, this process's peak resident set (VmHWM).
double peak_memory_gib(int cuda_device = -1);
// Memory one rank may count on, in bytes: the CUDA device's total memory, or on the CPU the machine's
// available memory (MemAvailable) shared by the ranks on it. 0 when unknown.
double available_memory_bytes(int cuda_device, int local_ranks);

}  // namespace swift::train
