// Helpers for the chat-template tests (no LibTorch): the real tokenizers, JSON files, loss spans.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "swift/template/template.h"
#include "swift/tokenizer/tokenizer.h"

namespace swift::templates::test {

namespace fs = std::filesystem;

// Real tokenizer folders (qwen3, llama3, mistral7b), vendored with their licences in tests/assets/tokenizers.
inline fs::path assets_dir() { return fs::path(SWIFT_SOURCE_DIR) / "tests" / "assets" / "tokenizers"; }

// The tokenizer of assets/<name>, loaded once per test binary.
inline const tokenizer::Tokenizer& real_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<tokenizer::Tokenizer>> cache;
  auto& slot = cache[name];
  if (!slot) slot = tokenizer::Tokenizer::load(assets_dir() / name);
  return *slot;
}

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline nlohmann::json read_json(const fs::path& p) {
  EXPECT_TRUE(fs::is_regular_file(p)) << p;
  return nlohmann::json::parse(read_file(p));
}

// The token runs that carry loss (labels != -100), each as its ids.
inline std::vector<std::vector<int64_t>> loss_spans(const Encoded& e) {
  std::vector<std::vector<int64_t>> spans;
  bool in_span = false;
  for (size_t i = 0; i < e.labels.size(); ++i) {
    if (e.labels[i] == kIgnoreIndex) {
      in_span = false;
      continue;
    }
    EXPECT_EQ(e.labels[i], e.input_ids[i]) << "a label differs from its input id at " << i;
    if (!in_span) spans.emplace_back();
    spans.back().push_back(e.labels[i]);
    in_span = true;
  }
  return spans;
}

// The loss runs decoded (special tokens kept): exact text for byte-level tokenizers (qwen3, llama3).
inline std::vector<std::string> loss_texts(const Encoded& e, const tokenizer::Tokenizer& tok) {
  std::vector<std::string> out;
  for (const auto& span : loss_spans(e)) out.push_back(tok.decode(span));
  return out;
}

// A fresh folder under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() / ("swift-template-test-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  fs::path write(const std::string& name, const std::string& content) const {
    fs::create_directories((path_ / name).parent_path());
    std::ofstream(path_ / name, std::ios::binary) << content;
    return path_ / name;
  }

 private:
  fs::path path_;
};

}  // namespace swift::templates::test
