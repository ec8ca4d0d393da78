// tokenizer_config.json: the special tokens, BOS/EOS policy, length limit and chat template that sit next to
// tokenizer.json / tokenizer.model in a Hugging Face model folder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "swift/tokenizer/added_tokens.h"

namespace swift::tokenizer {

struct TokenizerConfig {
  // Special token strings; each may be written as "..." or {"content": "...", ...}. Default: unset.
  std::optional<std::string> bos_token, eos_token, pad_token, unk_token;
  // Whether encode(add_special_tokens=true) adds BOS / EOS. Unset: tokenizer.json's post-processor decides
  // (tokenizer.model: BOS yes, EOS no, as LlamaTokenizer).
  std::optional<bool> add_bos_token, add_eos_token;
  // Unset when absent or when it is the "no limit" sentinel (transformers' int(1e30)).
  std::optional<int64_t> model_max_length;
  // Kept for callers; swift's decode never applies the WordPiece-era space cleanup (transformers 5 skips it for
  // BPE too). Default: false.
  bool clean_up_tokenization_spaces = false;
  // The Jinja chat template, unrendered (the "default" one when a list of named templates is given, else from
  // chat_template.jinja / chat_template.json in the folder). Default: unset.
  std::optional<std::string> chat_template;
  std::map<std::string, std::string> chat_templates;  // named templates, when given as a list
  std::string tokenizer_class;                         // e.g. "Qwen2Tokenizer"; "" when absent
  std::vector<AddedToken> added_tokens_decoder;        // sorted by id
  std::vector<std::string> additional_special_tokens;
};

// Parses the text of a tokenizer_config.json; `source` names it in errors (DataError).
TokenizerConfig parse_tokenizer_config(std::string_view json_text, const std::string& source);
// Reads `file`; DataError naming the file when it is unreadable or malformed.
TokenizerConfig load_tokenizer_config(const std::filesystem::path& file);

// Reads a whole file; DataError naming it (with `what`, e.g. "tokenizer.json") when it cannot be read.
std::string read_text_file(const std::filesystem::path& file);

}  // namespace swift::tokenizer
