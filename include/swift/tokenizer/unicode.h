// UTF-8 and Unicode helpers for the tokenizer: code point iteration, lossy decoding exactly like Rust's
// String::from_utf8_lossy, character classes as Hugging Face tokenizers sees them, and normal forms (utf8proc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace swift::tokenizer {

inline constexpr uint32_t kReplacementChar = 0xFFFD;
inline constexpr std::string_view kReplacementUtf8 = "\xEF\xBF\xBD";

// Length in bytes of the UTF-8 sequence that starts with `lead` (1 for a stray continuation byte).
inline size_t utf8_len(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;
}

// Decodes the code point at s[i] (s must be valid UTF-8) and advances i past it.
inline uint32_t next_code_point(std::string_view s, size_t& i) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + i;
  unsigned char c = p[0];
  if (c < 0x80) {
    i += 1;
    return c;
  }
  if ((c >> 5) == 0x6) {
    i += 2;
    return (uint32_t(c & 0x1F) << 6) | (p[1] & 0x3F);
  }
  if ((c >> 4) == 0xE) {
    i += 3;
    return (uint32_t(c & 0x0F) << 12) | (uint32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
  }
  i += 4;
  return (uint32_t(c & 0x07) << 18) | (uint32_t(p[1] & 0x3F) << 12) | (uint32_t(p[2] & 0x3F) << 6) |
         (p[3] & 0x3F);
}

void append_utf8(std::string& out, uint32_t cp);
std::string utf8_encode(uint32_t cp);

// Number of code points in valid UTF-8 text.
size_t count_code_points(std::string_view s);

bool is_valid_utf8(std::string_view s);

// Appends `bytes` to out with each maximal invalid subsequence replaced by U+FFFD, the policy of Rust's
// String::from_utf8_lossy and Python's bytes.decode(errors="replace").
void append_utf8_lossy(std::string& out, std::string_view bytes);
std::string utf8_lossy(std::string_view bytes);

// Character classes. is_white_space: Unicode White_Space (Rust char::is_whitespace, Oniguruma \s).
// is_letter / is_numeric: \p{L} / \p{N} with the Unicode version of Hugging Face tokenizers' regex engine
// (is_numeric is Rust's char::is_numeric, used by the Digits pre-tokenizer). is_word_char: regex \w
// (alphabetic, marks, decimal digits, connector punctuation, joiners).
bool is_white_space(uint32_t cp);
bool is_letter(uint32_t cp);
bool is_numeric(uint32_t cp);
bool is_word_char(uint32_t cp);
bool is_combining_mark(uint32_t cp);

enum class NormalForm { kNFC, kNFD, kNFKC, kNFKD };
// Unicode normal form of valid UTF-8 text (utf8proc).
std::string normalize_unicode(std::string_view s, NormalForm form);
// Per-character lowercase mapping (Rust char::to_lowercase: U+0130 becomes "i\u0307").
std::string to_lower(std::string_view s);

}  // namespace swift::tokenizer
