// PCRE2 regexes behaving like tokenizers' Oniguruma: \s, \p{L}/\p{N} (Unicode version), line anchors, empty
// matches, and pathological inputs.
#include <gtest/gtest.h>

#include "swift/core/error.h"
#include "swift/tokenizer/regex.h"
#include "swift/tokenizer/unicode.h"

namespace swift::tokenizer {
namespace {

std::vector<std::string> matches(const char* pattern, const std::string& text) {
  Regex re(pattern);
  std::vector<Span> spans;
  re.find_all(text, spans);
  std::vector<std::string> out;
  for (auto [b, e] : spans) out.push_back(text.substr(b, e - b));
  return out;
}

using Strings = std::vector<std::string>;

TEST(Regex, WhiteSpaceIsUnicodeWhiteSpace) {
  EXPECT_EQ(matches(R"(\s+)", "a\u3000\u0085b\u180ec\u200bd"), (Strings{"\u3000\u0085"}));
  EXPECT_EQ(matches(R"(\S+)", "a\u180e b"), (Strings{"a\u180e", "b"}));
  EXPECT_EQ(matches(R"([^\s\p{L}]+)", "ab 12\u180e!"), (Strings{"12\u180e!"}));
}

TEST(Regex, LettersAndNumbersUseTokenizersUnicode) {
  // U+1C89 (Unicode 16) and U+105C0 (Todhri, Unicode 16) are letters for tokenizers' Oniguruma.
  EXPECT_EQ(matches(R"(\p{L}+)", "x\u1c89\U000105c0 y"), (Strings{"x\u1c89\U000105c0", "y"}));
  EXPECT_EQ(matches(R"(\p{N}+)", "a\U00010d40\U00010d41 \u0663"), (Strings{"\U00010d40\U00010d41", "\u0663"}));
  EXPECT_TRUE(is_letter(0x1C89));
  EXPECT_TRUE(is_numeric(0x00BD));
  EXPECT_FALSE(is_numeric('x'));
}

TEST(Regex, LookaheadCaseFoldingAndAnchors) {
  EXPECT_EQ(matches(R"(\s+(?!\S)|\s+)", "a   b"), (Strings{"  ", " "}));
  EXPECT_EQ(matches(R"((?i:'s|'ll))", "IT'S we'LL"), (Strings{"'S", "'LL"}));
  EXPECT_EQ(matches(R"(^\w)", "ab\ncd"), (Strings{"a", "c"}));  // Oniguruma: ^ starts every line
  EXPECT_EQ(matches(R"(\h+)", "xyz 0fA9 g"), (Strings{"0fA9"}));  // Oniguruma: \h is a hex digit
}

TEST(Regex, EmptyMatchesStepOneCharacter) {
  // Like onig's find_iter: an empty match right after a match is skipped.
  EXPECT_EQ(matches("x*", "axxb"), (Strings{"", "xx", ""}));
  EXPECT_EQ(matches("", "\u00e9"), (Strings{"", ""}));
}

TEST(Regex, PathologicalRunsDoNotFail) {
  std::string spaces(200000, ' ');
  auto m = matches(R"(\s+(?!\S)|\s+)", spaces + "x");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].size(), spaces.size() - 1);
}

TEST(Regex, BadPatternIsADataError) {
  EXPECT_THROW(Regex("(unclosed"), DataError);
}

TEST(Regex, LiteralPatterns) {
  std::vector<Span> spans;
  Pattern::literal("--").find_all("a---b--", spans);
  EXPECT_EQ(spans, (std::vector<Span>{{1, 3}, {5, 7}}));
  spans.clear();
  Pattern::literal("").find_all("abc", spans);
  EXPECT_TRUE(spans.empty());
}

}  // namespace
}  // namespace swift::tokenizer
