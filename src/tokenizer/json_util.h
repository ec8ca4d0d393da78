// Reading tokenizer.json / tokenizer_config.json fields with errors that say which field is wrong. `where` is
// the JSON path of `j` ("pre_tokenizer.pretokenizers[1]"); the loader prefixes the file name.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "swift/core/error.h"
#include "swift/tokenizer/unicode.h"

namespace swift::tokenizer::detail {

using json = nlohmann::json;

inline const char* kReportHint =
    "the file may be truncated or edited by hand; re-download it from the model repository";

[[noreturn]] inline void fail(const std::string& where, const std::string& what,
                              const std::string& hint = kReportHint) {
  throw DataError(where.empty() ? what : where + ": " + what, hint);
}

inline std::string json_kind(const json& j) { return j.type_name(); }

inline void expect_object(const json& j, const std::string& where) {
  if (!j.is_object()) fail(where, "expected a JSON object, got " + json_kind(j));
}

inline const json& required(const json& j, const char* key, const std::string& where) {
  expect_object(j, where);
  auto it = j.find(key);
  if (it == j.end()) fail(where, std::string("missing field '") + key + "'");
  return *it;
}

inline std::string get_string(const json& j, const char* key, const std::string& where) {
  const json& v = required(j, key, where);
  if (!v.is_string()) fail(where + "." + key, "expected a string, got " + json_kind(v));
  return v.get<std::string>();
}

inline std::optional<std::string> get_opt_string(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) fail(where + "." + key, "expected a string or null, got " + json_kind(*it));
  return it->get<std::string>();
}

inline bool get_bool(const json& j, const char* key, bool def, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  if (!it->is_boolean()) fail(where + "." + key, "expected true or false, got " + json_kind(*it));
  return it->get<bool>();
}

inline int64_t get_int(const json& j, const char* key, int64_t def, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  if (!it->is_number_integer()) fail(where + "." + key, "expected an integer, got " + json_kind(*it));
  return it->get<int64_t>();
}

// Token ids index dense tables (id -> token), so one absurd id would allocate gigabytes. The largest real
// vocabularies are a few hundred thousand tokens; 2^24 leaves room for any of them.
inline constexpr int64_t kMaxTokenId = int64_t(1) << 24;

// A token id: an integer in [0, kMaxTokenId).
inline int32_t token_id(const json& v, const std::string& where) {
  if (!v.is_number_integer()) fail(where, "expected an integer token id, got " + json_kind(v));
  const bool in_range = v.is_number_unsigned() ? v.get<uint64_t>() < uint64_t(kMaxTokenId)
                                                : v.get<int64_t>() >= 0 && v.get<int64_t>() < kMaxTokenId;
  if (!in_range) {
    fail(where, "token id " + v.dump() + " is outside [0, " + std::to_string(kMaxTokenId) + ")");
  }
  return int32_t(v.get<int64_t>());
}

inline std::string type_of(const json& j, const std::string& where) { return get_string(j, "type", where); }

// A single character field (Metaspace replacement, Strip content): exactly one code point.
inline std::string get_char(const json& j, const char* key, const std::string& where) {
  std::string s = get_string(j, key, where);
  if (count_code_points(s) != 1 || !is_valid_utf8(s)) fail(where + "." + key, "expected one character, got '" + s + "'");
  return s;
}

}  // namespace swift::tokenizer::detail

namespace swift::tokenizer {
class Pattern;
// {"String": ...} or {"Regex": ...} (Split, Replace); defined in normalizer.cpp.
Pattern pattern_from_json(const nlohmann::json& j, const std::string& where);
}  // namespace swift::tokenizer
