// tokenizer_config.json parsing.
#include "swift/tokenizer/tokenizer_config.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "json_util.h"

namespace swift::tokenizer {
namespace {

using detail::json;

// "..." or {"content": "...", "__type": "AddedToken", ...}; null -> unset.
std::optional<std::string> token_string(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) return detail::get_string(*it, "content", key);
  detail::fail(key, "expected a string or {\"content\": ...}, got " + detail::json_kind(*it));
}

}  // namespace

TokenizerConfig parse_tokenizer_config(std::string_view text, const std::string& source) {
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    throw DataError(source + " is not valid JSON: " + e.what(),
                    "the file may be truncated; re-download it from the model repository");
  }
  return with_context(source, [&] {
    detail::expect_object(j, "");
    TokenizerConfig c;
    c.bos_token = token_string(j, "bos_token");
    c.eos_token = token_string(j, "eos_token");
    c.pad_token = token_string(j, "pad_token");
    c.unk_token = token_string(j, "unk_token");
    const std::pair<const char*, std::optional<bool>*> flags[] = {{"add_bos_token", &c.add_bos_token},
                                                                  {"add_eos_token", &c.add_eos_token}};
    for (const auto& [key, field] : flags) {
      auto it = j.find(key);
      if (it == j.end() || it->is_null()) continue;
      if (!it->is_boolean()) detail::fail(key, "expected true or false, got " + detail::json_kind(*it));
      *field = it->get<bool>();
    }
    auto mml = j.find("model_max_length");
    if (mml != j.end() && mml->is_number()) {
      double v = mml->get<double>();
      if (v > 0 && v < 1e18) c.model_max_length = mml->is_number_integer() ? mml->get<int64_t>() : int64_t(v);
    }
    c.clean_up_tokenization_spaces = detail::get_bool(j, "clean_up_tokenization_spaces", false, "");
    c.tokenizer_class = detail::get_opt_string(j, "tokenizer_class", "").value_or("");

    auto ct = j.find("chat_template");
    if (ct != j.end() && !ct->is_null()) {
      if (ct->is_string()) {
        c.chat_template = ct->get<std::string>();
      } else if (ct->is_array()) {
        for (size_t i = 0; i < ct->size(); ++i) {
          std::string at = "chat_template[" + std::to_string(i) + "]";
          c.chat_templates[detail::get_string((*ct)[i], "name", at)] = detail::get_string((*ct)[i], "template", at);
        }
        auto d = c.chat_templates.find("default");
        if (d != c.chat_templates.end()) c.chat_template = d->second;
      } else {
        detail::fail("chat_template", "expected a string or a list of {name, template}, got " + detail::json_kind(*ct));
      }
    }

    auto atd = j.find("added_tokens_decoder");
    if (atd != j.end() && !atd->is_null()) {
      detail::expect_object(*atd, "added_tokens_decoder");
      for (auto it = atd->begin(); it != atd->end(); ++it) {
        std::string at = "added_tokens_decoder[\"" + it.key() + "\"]";
        AddedToken t;
        try {
          size_t used = 0;
          t.id = std::stoll(it.key(), &used);
          if (used != it.key().size()) throw std::invalid_argument(it.key());
        } catch (const std::exception&) {
          detail::fail(at, "the key must be a token id");
        }
        const json& v = it.value();
        t.content = detail::get_string(v, "content", at);
        t.special = detail::get_bool(v, "special", false, at);
        t.lstrip = detail::get_bool(v, "lstrip", false, at);
        t.rstrip = detail::get_bool(v, "rstrip", false, at);
        t.normalized = detail::get_bool(v, "normalized", !t.special, at);
        t.single_word = detail::get_bool(v, "single_word", false, at);
        c.added_tokens_decoder.push_back(std::move(t));
      }
      std::sort(c.added_tokens_decoder.begin(), c.added_tokens_decoder.end(),
                [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
    }
    auto ast = j.find("additional_special_tokens");
    if (ast != j.end() && ast->is_array()) {
      for (const json& t : *ast) {
        if (t.is_string()) c.additional_special_tokens.push_back(t.get<std::string>());
        if (t.is_object() && t.contains("content")) c.additional_special_tokens.push_back(t["content"].get<std::string>());
      }
    }
    return c;
  });
}

std::string read_text_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  SWIFT_CHECK(in.good(), DataError, "cannot read " + file.string(),
              "check that the file exists and is readable");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TokenizerConfig load_tokenizer_config(const std::filesystem::path& file) {
  return parse_tokenizer_config(read_text_file(file), file.string());
}

}  // namespace swift::tokenizer
