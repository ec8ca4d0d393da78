// Hugging Face JSON side files: reading any JSON file with errors that name it, and generation_config.json.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

namespace swift::io {

// Parses a JSON file; DataError naming the file (and line/column) when missing or malformed.
nlohmann::json read_json_file(const std::filesystem::path& path);

// Writes `j` pretty-printed (2 spaces, as transformers does) atomically.
void write_json_file(const std::filesystem::path& path, const nlohmann::json& j);

// generation_config.json: the defaults a checkpoint ships for decoding. Unset fields stay nullopt.
struct GenerationConfig {
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;  // eos_token_id may be an int or a list
  std::optional<int64_t> pad_token_id;
  std::optional<bool> do_sample;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int64_t> top_k;
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;
  std::optional<int64_t> max_new_tokens;
};

// From a parsed generation_config.json; `source` names the file in errors (a field of the wrong type).
GenerationConfig parse_generation_config(const nlohmann::json& j, const std::string& source);
// `dir`/generation_config.json when present, else an empty config.
GenerationConfig load_generation_config(const std::filesystem::path& dir);

// Reads an int-or-list-of-ints field (eos_token_id style); DataError naming `source` and `key` otherwise.
std::vector<int64_t> json_int_or_list(const nlohmann::json& j, const std::string& key, const std::string& source);

}  // namespace swift::io
