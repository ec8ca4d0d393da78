// Helpers for the tokenizer tests (no LibTorch): temporary folders, where the real vocabularies and the
// Python references are, reading JSON files.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace swift::tokenizer::test {

namespace fs = std::filesystem;

// A fresh folder under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() / ("swift-tokenizer-test-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  fs::path write(const std::string& name, const std::string& content) const {
    std::ofstream(path_ / name, std::ios::binary) << content;
    return path_ / name;
  }

 private:
  fs::path path_;
};

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Real tokenizer folders (qwen3, llama3, mistral7b), vendored with their licences in tests/assets/tokenizers.
inline fs::path assets_dir() { return fs::path(SWIFT_SOURCE_DIR) / "tests" / "assets" / "tokenizers"; }

// Where make_reference.sh wrote the Python references ($SWIFT_TOKENIZER_REF_DIR).
inline fs::path reference_dir() {
  const char* env = std::getenv("SWIFT_TOKENIZER_REF_DIR");
  return env ? fs::path(env) : fs::path();
}

// The hard strings, in file order.
inline std::vector<std::string> hard_strings() {
  std::ifstream in(fs::path(SWIFT_SOURCE_DIR) / "tests" / "tokenizer" / "hard_strings.jsonl");
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line).get<std::string>());
  }
  return out;
}

}  // namespace swift::tokenizer::test
