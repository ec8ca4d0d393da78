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

}  // namespace swift::train
