// Added tokens (tokenizer.json "added_tokens"): special and ordinary tokens matched in the text before the model
// runs, leftmost-longest, with lstrip/rstrip/single_word, and normalized=true tokens matched after
// normalization, as Hugging Face tokenizers' AddedVocabulary does.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "swift/tokenizer/regex.h"

namespace swift::tokenizer {

class Normalizer;

struct AddedToken {
  int64_t id = -1;
  std::string content;
  bool special = false;
  bool lstrip = false;       // the match swallows whitespace on its left
  bool rstrip = false;       // ... and on its right
  bool normalized = true;    // matched in the normalized text instead of the raw text
  bool single_word = false;  // only matches when not inside a word
};

// A match of an added token: bytes [span.first, span.second) of the text searched, and the token's id.
struct AddedMatch {
  Span span;
  int32_t id;
};

class AddedVocabulary {
 public:
  AddedVocabulary();
  ~AddedVocabulary();
  AddedVocabulary(AddedVocabulary&&) noexcept;
  AddedVocabulary& operator=(AddedVocabulary&&) noexcept;

  // Registers the tokens; normalized tokens are matched by their normalized content (`normalizer` may be null).
  void set(std::vector<AddedToken> tokens, const Normalizer* normalizer);

  // Added-token matches in `text`, in order: `normalized` selects the normalized=true tokens (searched in
  // normalized text) or the others (searched in the raw text).
  void find(std::string_view text, bool normalized, std::vector<AddedMatch>& out) const;

  const AddedToken* token(int32_t id) const;
  // The text decode() shows for `id` (the normalized content for normalized tokens); nullptr if not added.
  const std::string* decode_text(int32_t id) const;
  int32_t token_to_id(std::string_view content) const;  // -1 when absent
  bool is_special(int32_t id) const;
  bool empty() const { return tokens_.empty(); }
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  class Trie;
  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> by_id_;
  std::unordered_map<std::string, int32_t> by_content_;
  std::unordered_map<int32_t, std::string> normalized_text_;
  std::unique_ptr<Trie> raw_trie_, normalized_trie_;
};

}  // namespace swift::tokenizer
