// Pre-tokenizers of tokenizer.json ("pre_tokenizer"): Split (PCRE2 regex or literal, every delimiter
// behaviour, invert), ByteLevel (add_prefix_space, use_regex), Digits, Metaspace (prepend_scheme
// first/always/never, split), Whitespace, WhitespaceSplit, CharDelimiterSplit and Sequence, with Hugging Face
// tokenizers' semantics. They cut the normalized text into the pieces the model encodes one by one.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace swift::tokenizer {

// One split of the input. A piece with id >= 0 is an added token, already final; pre-tokenizers leave it be.
// origin_len: see NormalizedText.
struct Piece {
  std::string text;
  int32_t id = -1;
  uint32_t origin_len = 0;
};

class Pattern;

// The shape of most byte-level BPE pre-tokenizers (Qwen, Llama 3, GPT-2): cut by one regex, every segment a
// piece (Isolated), then the GPT-2 byte mapping. The encoder streams such pieces into the model without
// building them; the result is the same as pre_tokenize().
struct RegexByteLevelPlan {
  const Pattern* split = nullptr;
  bool add_prefix_space = false;  // prepend ' ' to a text that does not start with one, before splitting
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces every piece that has no id by its splits (empty splits are dropped, as in tokenizers).
  virtual void pre_tokenize(std::vector<Piece>& pieces) const = 0;
  // Fills `plan` and returns true when this pre-tokenizer is exactly a RegexByteLevelPlan.
  virtual bool regex_byte_level_plan(RegexByteLevelPlan* /*plan*/) const { return false; }
  // Introspection for regex_byte_level_plan: the pattern of an Isolated, non-inverted Split (else null), and
  // whether this is a ByteLevel step that only maps bytes (no regex, no prefix space).
  virtual const Pattern* isolated_pattern() const { return nullptr; }
  virtual bool is_plain_byte_mapping() const { return false; }

  // null gives nullptr; DataError for unknown types or bad fields, naming `where`.
  static std::unique_ptr<PreTokenizer> from_json(const nlohmann::json& j,
                                                 const std::string& where = "pre_tokenizer");
};

// The GPT-2 byte alphabet: appends to `out` each byte of `in` as its printable stand-in character.
void byte_level_map(std::string_view in, std::string& out);
// The inverse: the byte a byte-level character stands for, or -1 when `cp` is not in the alphabet.
int byte_level_unmap(uint32_t cp);

// Convenience for tests: runs `p` on one text and returns the piece texts.
std::vector<std::string> pre_tokenize_string(const PreTokenizer& p, std::string text);

}  // namespace swift::tokenizer
