// JSON files of a Hugging Face model folder.
#include "swift/io/hf_config.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "swift/core/atomic_write.h"
#include "swift/core/error.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace swift::io {

json read_json_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  SWIFT_CHECK(in.good(), DataError, "cannot open " + path.string(),
              "check the path; a Hugging Face model folder has config.json next to its weights");
  std::stringstream buffer;
  buffer << in.rdbuf();
  try {
    return json::parse(buffer.str());
  } catch (const json::exception& e) {
    throw DataError(path.string() + " is not valid JSON: " + e.what(), "fix or re-download the file");
  }
}

void write_json_file(const fs::path& path, const json& j) { atomic_write_file(path, j.dump(2) + "\n"); }

std::vector<int64_t> json_int_or_list(const json& j, const std::string& key, const std::string& source) {
  std::vector<int64_t> out;
  if (!j.contains(key) || j.at(key).is_null()) return out;
  const json& v = j.at(key);
  auto bad = [&] {
    return DataError(source + ": \"" + key + "\" must be an integer or a list of integers, got " + v.dump(),
                     "fix the field in " + source);
  };
  if (v.is_number_integer()) {
    out.push_back(v.get<int64_t>());
  } else if (v.is_array()) {
    for (const auto& x : v) {
      if (!x.is_number_integer()) throw bad();
      out.push_back(x.get<int64_t>());
    }
  } else {
    throw bad();
  }
  return out;
}

namespace {
template <typename T>
std::optional<T> optional_field(const json& j, const std::string& key, const std::string& source) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  const json& v = j.at(key);
  bool ok = false;
  if constexpr (std::is_same_v<T, bool>) ok = v.is_boolean();
  else if constexpr (std::is_integral_v<T>) ok = v.is_number_integer();
  else ok = v.is_number();
  SWIFT_CHECK(ok, DataError, source + ": \"" + key + "\" has the wrong type: " + v.dump(), "fix the field in " + source);
  return v.get<T>();
}
}  // namespace

GenerationConfig parse_generation_config(const json& j, const std::string& source) {
  SWIFT_CHECK(j.is_object(), DataError, source + " must hold a JSON object", "fix or delete " + source);
  GenerationConfig g;
  const auto bos = json_int_or_list(j, "bos_token_id", source);
  if (!bos.empty()) g.bos_token_id = bos.front();
  g.eos_token_ids = json_int_or_list(j, "eos_token_id", source);
  const auto pad = json_int_or_list(j, "pad_token_id", source);
  if (!pad.empty()) g.pad_token_id = pad.front();
  g.do_sample = optional_field<bool>(j, "do_sample", source);
  g.temperature = optional_field<double>(j, "temperature", source);
  g.top_p = optional_field<double>(j, "top_p", source);
  g.top_k = optional_field<int64_t>(j, "top_k", source);
  g.min_p = optional_field<double>(j, "min_p", source);
  g.repetition_penalty = optional_field<double>(j, "repetition_penalty", source);
  g.max_new_tokens = optional_field<int64_t>(j, "max_new_tokens", source);
  return g;
}

GenerationConfig load_generation_config(const fs::path& dir) {
  const fs::path path = dir / "generation_config.json";
  if (!fs::exists(path)) return {};
  return parse_generation_config(read_json_file(path), path.string());
}

}  // namespace swift::io
