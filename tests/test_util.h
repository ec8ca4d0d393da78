// Helpers shared by the tests: temporary folders and tiny random models.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "swift/data/example.h"
#include "swift/model/decoder.h"

namespace swift::test {

// A fresh folder under the system temp dir, removed when the object dies.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "swift-test");
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Whole-file reads and writes (binary).
std::string read_bytes(const std::filesystem::path& path);
void write_bytes(const std::filesystem::path& path, const std::string& bytes);

// The Python that has the reference libraries: $SWIFT_TEST_PYTHON, else the project's .venv.
std::string reference_python();

// config.json content of a tiny model of `family` (llama, qwen2, qwen3, mistral): hidden 64, 2 layers,
// 4 heads / 2 kv heads, vocab 128.
nlohmann::json tiny_config(const std::string& family);

// A tiny model with random weights (norms and biases perturbed too, so every parameter matters).
model::CausalLM random_model(const nlohmann::json& config, uint64_t seed = 0,
                             c10::ScalarType dtype = c10::kFloat);

// Training examples of random tokens (vocabulary 128), one per length, whose first half carries no loss (a prompt)
// and whose second half does (the reply): the same examples for the same lengths and seed.
std::vector<data::Example> half_prompt_examples(const std::vector<int64_t>& lengths, uint64_t seed = 3);

}  // namespace swift::test
