// Normalizers on hand-made tokenizer.json snippets. Expected values: Hugging Face tokenizers 0.23
// (Tokenizer.from_str(...).normalizer.normalize_str), exact.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "swift/core/error.h"
#include "swift/tokenizer/normalizer.h"

namespace swift::tokenizer {
namespace {

std::string run(const char* json, const std::string& text) {
  auto n = Normalizer::from_json(nlohmann::json::parse(json));
  return normalize_string(n.get(), text);
}

TEST(Normalizer, UnicodeForms) {
  EXPECT_EQ(run(R"({"type":"NFC"})", "e\u0301 A\u030a \u212b"), "\u00e9 \u00c5 \u00c5");
  EXPECT_EQ(run(R"({"type":"NFD"})", "\u00e9 \u00c5"), "e\u0301 A\u030a");
  EXPECT_EQ(run(R"({"type":"NFKC"})", "\ufb01 \u2460 \uff28\uff45\uff4c\uff4c\uff4f \u337f"),
            "fi 1 Hello \u682a\u5f0f\u4f1a\u793e");
  EXPECT_EQ(run(R"({"type":"NFKD"})", "\ufb01 \u00e9"), "fi e\u0301");
  EXPECT_EQ(run(R"({"type":"NFC"})", "plain ascii"), "plain ascii");
}

TEST(Normalizer, UnicodeFormsFollowTokenizersUnicodeVersion) {
  // tokenizers' normalizer predates these characters: it leaves them (and their neighbours) alone.
  EXPECT_EQ(run(R"({"type":"NFC"})", "v\u089b\u0344x"), "v\u089b\u0308\u0301x");
  EXPECT_EQ(run(R"({"type":"NFC"})", "\U00011935\U00011930"), "\U00011935\U00011930");
  // U+11A7 is not a trailing consonant: no composition (utf8proc <= 2.8 would drop it).
  EXPECT_EQ(run(R"({"type":"NFC"})", "\uc5b4\u11a7"), "\uc5b4\u11a7");
  EXPECT_EQ(run(R"({"type":"NFKC"})", "\u32ff"), "\u32ff");
}

TEST(Normalizer, Lowercase) {
  EXPECT_EQ(run(R"({"type":"Lowercase"})", "HeLLo \u0130STANBUL \u03a3\u0391\u03a3"),
            "hello i\u0307stanbul \u03c3\u03b1\u03c3");
}

TEST(Normalizer, Strip) {
  EXPECT_EQ(run(R"({"type":"Strip","strip_left":true,"strip_right":true})", " \u3000\t hi there \n\u00a0"),
            "hi there");
  EXPECT_EQ(run(R"({"type":"Strip","strip_left":true,"strip_right":false})", "  hi  "), "hi  ");
  EXPECT_EQ(run(R"({"type":"Strip","strip_left":false,"strip_right":true})", "  hi \u2003"), "  hi");
  EXPECT_EQ(run(R"({"type":"Strip","strip_left":true,"strip_right":true})", " \t "), "");
}

TEST(Normalizer, StripAccentsNmtByteLevel) {
  EXPECT_EQ(run(R"({"type":"StripAccents"})", "e\u0301a\u0300"), "ea");
  EXPECT_EQ(run(R"({"type":"Nmt"})", "a\x01" "b\tc\u200bd\ufeff"), "ab c d ");
  EXPECT_EQ(run(R"({"type":"ByteLevel"})", "h\u00e9 "), "h\u00c3\u00a9\u0120");
}

TEST(Normalizer, PrependReplaceSequence) {
  EXPECT_EQ(run(R"({"type":"Prepend","prepend":"▁"})", "hello world"), "\u2581hello world");
  EXPECT_EQ(run(R"({"type":"Prepend","prepend":"▁"})", ""), "");  // nothing to prepend to
  EXPECT_EQ(run(R"({"type":"Replace","pattern":{"String":" "},"content":"▁"})", " hello  world "),
            "\u2581hello\u2581\u2581world\u2581");
  EXPECT_EQ(run(R"({"type":"Replace","pattern":{"Regex":"\\s+"},"content":" "})", "a \t\n b\u3000c"), "a b c");
  EXPECT_EQ(run(R"({"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},
                  {"type":"Replace","pattern":{"String":" "},"content":"▁"}]})",
                "Hello world"),
            "\u2581Hello\u2581world");
}

TEST(Normalizer, NullIsNone) { EXPECT_EQ(Normalizer::from_json(nlohmann::json()), nullptr); }

TEST(Normalizer, UnknownTypeIsADataErrorNamingThePath) {
  try {
    Normalizer::from_json(nlohmann::json::parse(R"({"type":"Sequence","normalizers":[{"type":"Precompiled"}]})"));
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("normalizer.normalizers[0]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Precompiled"), std::string::npos) << e.what();
    EXPECT_FALSE(e.hint().empty());
  }
  EXPECT_THROW(Normalizer::from_json(nlohmann::json::parse(R"({"type":"Replace","pattern":{"Regex":"("},"content":""})")),
               DataError);
  EXPECT_THROW(Normalizer::from_json(nlohmann::json::parse(R"({"prepend":"x"})")), DataError);
}

}  // namespace
}  // namespace swift::tokenizer
