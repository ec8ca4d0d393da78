// Pre-tokenizers on hand-made tokenizer.json snippets. Expected values: Hugging Face tokenizers 0.23
// (pre_tokenizer.pre_tokenize_str), exact.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "swift/core/error.h"
#include "swift/tokenizer/pre_tokenizer.h"

namespace swift::tokenizer {
namespace {

using Pieces = std::vector<std::string>;

Pieces run(const std::string& json, const std::string& text) {
  auto p = PreTokenizer::from_json(nlohmann::json::parse(json));
  return pre_tokenize_string(*p, text);
}

std::string split(const char* behavior, bool invert = false, const char* pattern = R"({"String":"-"})") {
  return std::string(R"({"type":"Split","pattern":)") + pattern + R"(,"behavior":")" + behavior +
         R"(","invert":)" + (invert ? "true" : "false") + "}";
}

TEST(PreTokenizer, SplitBehaviours) {
  const std::string text = "the-final--countdown";
  EXPECT_EQ(run(split("Removed"), text), (Pieces{"the", "final", "countdown"}));
  EXPECT_EQ(run(split("Isolated"), text), (Pieces{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(run(split("MergedWithPrevious"), text), (Pieces{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(run(split("MergedWithNext"), text), (Pieces{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(run(split("Contiguous"), text), (Pieces{"the", "-", "final", "--", "countdown"}));
}

TEST(PreTokenizer, SplitInvert) {
  EXPECT_EQ(run(split("Isolated", true, R"({"Regex":"\\d+"})"), "ab12cd345"), (Pieces{"ab", "12", "cd", "345"}));
  EXPECT_EQ(run(split("Removed", true, R"({"Regex":"\\d+"})"), "ab12cd345"), (Pieces{"12", "345"}));
}

TEST(PreTokenizer, Llama3RegexWithLookaheadAndUnicodeClasses) {
  const char* pattern =
      R"({"Regex":"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"})";
  // U+180E is not White_Space for tokenizers (PCRE2's own \s would take it).
  EXPECT_EQ(run(split("Isolated", false, pattern), "I'M here  12345 \u180e x\n\n  y"),
            (Pieces{"I", "'M", " here", " ", " ", "123", "45", " \u180e", " x", "\n\n", " ", " y"}));
}

TEST(PreTokenizer, ByteLevel) {
  EXPECT_EQ(run(R"({"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true})",
                "Hello world's 123 \u00e9!"),
            (Pieces{"\u0120Hello", "\u0120world", "'s", "\u0120123", "\u0120\u00c3\u00a9", "!"}));
  EXPECT_EQ(run(R"({"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true})",
                "Hello  world\n\n x"),
            (Pieces{"Hello", "\u0120", "\u0120world", "\u010a\u010a", "\u0120x"}));
  EXPECT_EQ(run(R"({"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false})", "Hi \u00e9"),
            (Pieces{"Hi\u0120\u00c3\u00a9"}));
}

TEST(PreTokenizer, Digits) {
  EXPECT_EQ(run(R"({"type":"Digits","individual_digits":true})", "a123b45"),
            (Pieces{"a", "1", "2", "3", "b", "4", "5"}));
  EXPECT_EQ(run(R"({"type":"Digits","individual_digits":false})", "a123b45"), (Pieces{"a", "123", "b", "45"}));
  EXPECT_EQ(run(R"({"type":"Digits","individual_digits":true})", "\u0663\u00bd"), (Pieces{"\u0663", "\u00bd"}));
}

TEST(PreTokenizer, Metaspace) {
  auto ms = [](const char* scheme, bool split) {
    return std::string(R"({"type":"Metaspace","replacement":"▁","prepend_scheme":")") + scheme + R"(","split":)" +
           (split ? "true" : "false") + "}";
  };
  EXPECT_EQ(run(ms("always", true), "Hello  world"), (Pieces{"\u2581Hello", "\u2581", "\u2581world"}));
  EXPECT_EQ(run(ms("always", false), "Hello  world"), (Pieces{"\u2581Hello\u2581\u2581world"}));
  EXPECT_EQ(run(ms("never", true), "Hello world"), (Pieces{"Hello", "\u2581world"}));
  EXPECT_EQ(run(ms("first", true), "Hello world"), (Pieces{"\u2581Hello", "\u2581world"}));
  EXPECT_THROW(run(R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"sometimes"})", "x"), DataError);
}

TEST(PreTokenizer, WhitespacePunctuationSequence) {
  EXPECT_EQ(run(R"({"type":"WhitespaceSplit"})", " a\tb\u3000c  "), (Pieces{"a", "b", "c"}));
  EXPECT_EQ(run(R"({"type":"Punctuation","behavior":"Isolated"})", "Hi, you!?"),
            (Pieces{"Hi", ",", " you", "!", "?"}));
  EXPECT_EQ(run(R"({"type":"CharDelimiterSplit","delimiter":"|"})", "a|b||c"), (Pieces{"a", "b", "c"}));
  EXPECT_EQ(run(R"({"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},
                  {"type":"Digits","individual_digits":true}]})",
                "ab 12 c3"),
            (Pieces{"ab", "1", "2", "c", "3"}));
}

TEST(PreTokenizer, EmptyTextHasNoPieces) {
  EXPECT_TRUE(run(split("Isolated"), "").empty());
}

TEST(PreTokenizer, Errors) {
  EXPECT_THROW(run(R"({"type":"UnicodeScripts"})", "x"), DataError);
  EXPECT_THROW(run(split("Sideways"), "x"), DataError);
  EXPECT_THROW(run(R"({"type":"Split","pattern":{"Glob":"*"},"behavior":"Isolated","invert":false})", "x"), DataError);
}

}  // namespace
}  // namespace swift::tokenizer
