// Regular expressions for tokenizer.json patterns: PCRE2 with JIT, UTF and Unicode properties, made to match
// what Hugging Face tokenizers' Oniguruma matches (\s is White_Space, \p{L}/\p{N} use its Unicode version,
// ^/$ are line anchors). Iteration follows tokenizers' SysRegex::find_iter, empty matches included.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swift::tokenizer {

using Span = std::pair<uint32_t, uint32_t>;  // [begin, end) byte offsets

class Regex {
 public:
  // Throws DataError naming the pattern when PCRE2 cannot compile it.
  explicit Regex(std::string_view pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends the successive non-overlapping matches in `text` (valid UTF-8) to `out`. Thread-safe.
  void find_all(std::string_view text, std::vector<Span>& out) const;
  const std::string& pattern() const { return pattern_; }
  // The PCRE2 pattern actually compiled (after the Oniguruma compatibility rewrite).
  const std::string& compiled_pattern() const { return compiled_; }

 private:
  std::string pattern_;
  std::string compiled_;
  void* code_ = nullptr;  // pcre2_code_8*
};

// A Split/Replace pattern from tokenizer.json: {"String": "..."} (a literal) or {"Regex": "..."}.
class Pattern {
 public:
  static Pattern literal(std::string text);
  static Pattern regex(std::string_view pattern);

  // Appends the non-overlapping matches in `text`. An empty literal matches nothing.
  void find_all(std::string_view text, std::vector<Span>& out) const;
  bool is_literal() const { return regex_ == nullptr; }
  const std::string& literal_text() const { return literal_; }

 private:
  std::string literal_;
  std::shared_ptr<const Regex> regex_;
};

// Rewrites an Oniguruma pattern for PCRE2 (exposed for tests).
std::string onig_to_pcre2(std::string_view pattern);

}  // namespace swift::tokenizer
