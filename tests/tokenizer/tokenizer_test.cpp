// Whole tokenizers built from small hand-made tokenizer.json files (tests/tokenizer/data): a byte-level BPE
// (Llama 3-style regex, added tokens with lstrip/rstrip/single_word/normalized, template post-processor) and a
// SentencePiece-style BPE (Metaspace prepend_scheme "first", byte fallback). Variants change one field at a
// time. Expected ids and decodes: Hugging Face tokenizers 0.23 on the same JSON, exact.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <map>

#include "swift/core/error.h"
#include "swift/tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace swift::tokenizer {
namespace {

namespace fs = std::filesystem;

using nlohmann::json;

json fixture(const std::string& name) {
  return json::parse(test::read_file(fs::path(SWIFT_SOURCE_DIR) / "tests" / "tokenizer" / "data" / name));
}

// One field changed at a time, as in the Python that made the expectations.
const std::map<std::string, std::function<void(json&)>>& variants() {
  static const std::map<std::string, std::function<void(json&)>> v = {
      {"base", [](json&) {}},
      {"ignore_merges", [](json& j) { j["model"]["ignore_merges"] = true; }},
      {"gpt2", [](json& j) {
         j["pre_tokenizer"] = json::parse(R"({"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true})");
       }},
      // A Digits step between Split and ByteLevel: the generic (non-streaming) pre-tokenizer path.
      {"digits", [](json& j) {
         auto& steps = j["pre_tokenizer"]["pretokenizers"];
         steps.insert(steps.begin() + 1, json::parse(R"({"type":"Digits","individual_digits":true})"));
       }},
      {"lower", [](json& j) {
         j["normalizer"] = json::parse(R"({"type":"Sequence","normalizers":[{"type":"NFC"},{"type":"Lowercase"}]})");
       }},
      {"pairs_to_strings", [](json& j) {
         for (auto& m : j["model"]["merges"]) m = m[0].get<std::string>() + " " + m[1].get<std::string>();
       }},
  };
  return v;
}

struct Case {
  const char* fixture;
  const char* variant;
  std::string text;
  std::vector<int64_t> ids, ids_special;
  std::string decoded, decoded_skip;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
    {"bl", "base", "hello world", {259, 264}, {291, 259, 264, 292}, "<|begin|>hello world<|end|>", "hello world"},
    {"bl", "base", " hello worldwide", {32, 259, 264, 119, 105, 100, 101}, {291, 32, 259, 264, 119, 105, 100, 101, 292}, "<|begin|> hello worldwide<|end|>", " hello worldwide"},
    {"bl", "base", "the token izer 12345", {116, 256, 273, 32, 276, 32, 278, 52, 53}, {291, 116, 256, 273, 32, 276, 32, 278, 52, 53, 292}, "<|begin|>the token izer 12345<|end|>", "the token izer 12345"},
    {"bl", "base", "\u4f60\u597d\n\n\u4f60\u597d", {288, 289, 288}, {291, 288, 289, 288, 292}, "<|begin|>\u4f60\u597d\n\n\u4f60\u597d<|end|>", "\u4f60\u597d\n\n\u4f60\u597d"},
    {"bl", "base", "<|begin|>hello<|end|>", {291, 259, 292}, {291, 291, 259, 292, 292}, "<|begin|><|begin|>hello<|end|><|end|>", "hello"},
    {"bl", "base", "a <mask>  b", {97, 294, 98}, {291, 97, 294, 98, 292}, "<|begin|>a<mask>b<|end|>", "ab"},
    {"bl", "base", "x<think>y", {120, 293, 121}, {291, 120, 293, 121, 292}, "<|begin|>x<think>y<|end|>", "x<think>y"},
    {"bl", "base", "[w] a[w]b [w]", {295, 32, 97, 91, 119, 93, 98, 32, 295}, {291, 295, 32, 97, 91, 119, 93, 98, 32, 295, 292}, "<|begin|>[w] a[w]b [w]<|end|>", "[w] a[w]b [w]"},
    {"bl", "base", "\u00dcn\u00ef \u00fcn\u00ef \u00dcn\u00ef", {296, 32, 195, 188, 110, 195, 175, 32, 296}, {291, 296, 32, 195, 188, 110, 195, 175, 32, 296, 292}, "<|begin|>\ufffdn\ufffd \u00fcn\u00ef \ufffdn\ufffd<|end|>", "\ufffdn\ufffd \u00fcn\u00ef \ufffdn\ufffd"},
    {"bl", "base", "U\u0308n\u00ef", {296}, {291, 296, 292}, "<|begin|>\ufffdn\ufffd<|end|>", "\ufffdn\ufffd"},
    {"bl", "base", "", {}, {291, 292}, "<|begin|><|end|>", ""},
    {"bl", "base", "  ", {32, 32}, {291, 32, 32, 292}, "<|begin|>  <|end|>", "  "},
    {"bl", "ignore_merges", "hello world", {259, 264}, {291, 259, 264, 292}, "<|begin|>hello world<|end|>", "hello world"},
    {"bl", "ignore_merges", " hello worldwide", {283, 290}, {291, 283, 290, 292}, "<|begin|> hello worldwide<|end|>", " hello worldwide"},
    {"bl", "ignore_merges", "the token izer 12345", {116, 256, 273, 32, 276, 32, 278, 52, 53}, {291, 116, 256, 273, 32, 276, 32, 278, 52, 53, 292}, "<|begin|>the token izer 12345<|end|>", "the token izer 12345"},
    {"bl", "ignore_merges", "\u4f60\u597d\n\n\u4f60\u597d", {288, 289, 288}, {291, 288, 289, 288, 292}, "<|begin|>\u4f60\u597d\n\n\u4f60\u597d<|end|>", "\u4f60\u597d\n\n\u4f60\u597d"},
    {"bl", "ignore_merges", "<|begin|>hello<|end|>", {291, 259, 292}, {291, 291, 259, 292, 292}, "<|begin|><|begin|>hello<|end|><|end|>", "hello"},
    {"bl", "ignore_merges", "a <mask>  b", {97, 294, 98}, {291, 97, 294, 98, 292}, "<|begin|>a<mask>b<|end|>", "ab"},
    {"bl", "ignore_merges", "x<think>y", {120, 293, 121}, {291, 120, 293, 121, 292}, "<|begin|>x<think>y<|end|>", "x<think>y"},
    {"bl", "ignore_merges", "[w] a[w]b [w]", {295, 32, 97, 91, 119, 93, 98, 32, 295}, {291, 295, 32, 97, 91, 119, 93, 98, 32, 295, 292}, "<|begin|>[w] a[w]b [w]<|end|>", "[w] a[w]b [w]"},
    {"bl", "ignore_merges", "\u00dcn\u00ef \u00fcn\u00ef \u00dcn\u00ef", {296, 32, 195, 188, 110, 195, 175, 32, 296}, {291, 296, 32, 195, 188, 110, 195, 175, 32, 296, 292}, "<|begin|>\ufffdn\ufffd \u00fcn\u00ef \ufffdn\ufffd<|end|>", "\ufffdn\ufffd \u00fcn\u00ef \ufffdn\ufffd"},
    {"bl", "ignore_merges", "U\u0308n\u00ef", {296}, {291, 296, 292}, "<|begin|>\ufffdn\ufffd<|end|>", "\ufffdn\ufffd"},
    {"bl", "ignore_merges", "", {}, {291, 292}, "<|begin|><|end|>", ""},
    {"bl", "ignore_merges", "  ", {32, 32}, {291, 32, 32, 292}, "<|begin|>  <|end|>", "  "},
    {"bl", "gpt2", "hello world", {32, 259, 264}, {291, 32, 259, 264, 292}, "<|begin|> hello world<|end|>", " hello world"},
    {"bl", "gpt2", " hello worldwide", {32, 259, 264, 119, 105, 100, 101}, {291, 32, 259, 264, 119, 105, 100, 101, 292}, "<|begin|> hello worldwide<|end|>", " hello worldwide"},
    {"bl", "gpt2", "the token izer 12345", {265, 256, 273, 32, 276, 32, 278, 52, 53}, {291, 265, 256, 273, 32, 276, 32, 278, 52, 53, 292}, "<|begin|> the token izer 12345<|end|>", " the token izer 12345"},
    {"bl", "gpt2", "\u4f60\u597d\n\n\u4f60\u597d", {32, 288, 10, 10, 288}, {291, 32, 288, 10, 10, 288, 292}, "<|begin|> \u4f60\u597d\n\n\u4f60\u597d<|end|>", " \u4f60\u597d\n\n\u4f60\u597d"},
    {"bl", "gpt2", "<|begin|>hello<|end|>", {291, 32, 259, 292}, {291, 291, 32, 259, 292, 292}, "<|begin|><|begin|> hello<|end|><|end|>", " hello"},
    {"bl", "gpt2", "a <mask>  b", {32, 97, 294, 32, 98}, {291, 32, 97, 294, 32, 98, 292}, "<|begin|> a<mask> b<|end|>", " a b"},
    {"bl", "gpt2", "x<think>y", {32, 120, 293, 32, 121}, {291, 32, 120, 293, 32, 121, 292}, "<|begin|> x<think> y<|end|>", " x<think> y"},
    {"bl", "gpt2", "[w] a[w]b [w]", {295, 32, 97, 91, 119, 93, 98, 32, 295}, {291, 295, 32, 97, 91, 119, 93, 98, 32, 295, 292}, "<|begin|>[w] a[w]b [w]<|end|>", "[w] a[w]b [w]"},
    {"bl", "gpt2", "\u00dcn\u00ef \u00fcn\u00ef \u00dcn\u00ef", {296, 32, 195, 188, 110, 195, 175, 32, 296}, {291, 296, 32, 195, 188, 110, 195, 175, 32, 296, 292}, "<|begin|>\ufffdn\ufffd \u00fcn\u00ef \ufffdn\ufffd<|end|>", "\ufffdn\ufffd \u00fcn\u00ef \ufffdn\ufffd"},
    {"bl", "gpt2", "U\u0308n\u00ef", {296}, {291, 296, 292}, "<|begin|>\ufffdn\ufffd<|end|>", "\ufffdn\ufffd"},
    {"bl", "gpt2", "", {}, {291, 292}, "<|begin|><|end|>", ""},
    {"bl", "gpt2", "  ", {32, 32}, {291, 32, 32, 292}, "<|begin|>  <|end|>", "  "},
    {"bl", "digits", "hello world", {259, 264}, {291, 259, 264, 292}, "<|begin|>hello world<|end|>", "hello world"},
    {"bl", "digits", " hello worldwide", {32, 259, 264, 119, 105, 100, 101}, {291, 32, 259, 264, 119, 105, 100, 101, 292}, "<|begin|> hello worldwide<|end|>", " hello worldwide"},
    {"bl", "digits", "the token izer 12345", {116, 256, 273, 32, 276, 32, 49, 50, 51, 52, 53}, {291, 116, 256, 273, 32, 276, 32, 49, 50, 51, 52, 53, 292}, "<|begin|>the token izer 12345<|end|>", "the token izer 12345"},
    {"bl", "digits", "\u4f60\u597d\n\n\u4f60\u597d", {288, 289, 288}, {291, 288, 289, 288, 292}, "<|begin|>\u4f60\u597d\n\n\u4f60\u597d<|end|>", "\u4f60\u597d\n\n\u4f60\u597d"},
    {"bl", "digits", "<|begin|>hello<|end|>", {291, 259, 292}, {291, 291, 259, 292, 292}, "<|begin|><|begin|>hello<|end|><|end|>", "hello"},
    {"bl", "digits", "a <mask>  b", {97, 294, 98}, {291, 97, 294, 98, 292}, "<|begin|>a<mask>b<|end|>", "ab"},
    {"bl", "digits", "x<think>y", {120, 293, 121}, {291, 120, 293, 121, 292}, "<|begin|>x<think>y<|end|>", "x<think>y"},
    {"bl", "digits", "[w] a[w]b [w]", {295, 32, 97, 91, 119, 93, 98, 32, 295}, {291, 295, 32, 97, 91, 119, 93, 98, 32, 295, 292}, "<|begin|>[w] a[w]b [w]<|end|>", "[w] a[w]b [w]"},
    {"bl", "digits", "\u00dcn\u00ef \u00fcn\u00ef \u00dcn\u00ef", {296, 32, 195, 188, 110, 195, 175, 32, 296}, {291, 296, 32, 195, 188, 110, 195, 175, 32, 296, 292}, "<|begin|>\ufffdn\ufffd \u00fcn\u00ef \ufffdn\ufffd<|end|>", "\ufffdn\ufffd \u00fcn\u00ef \ufffdn\ufffd"},
    {"bl", "digits", "U\u0308n\u00ef", {296}, {291, 296, 292}, "<|begin|>\ufffdn\ufffd<|end|>", "\ufffdn\ufffd"},
    {"bl", "digits", "", {}, {291, 292}, "<|begin|><|end|>", ""},
    {"bl", "digits", "  ", {32, 32}, {291, 32, 32, 292}, "<|begin|>  <|end|>", "  "},
    {"bl", "lower", "hello world", {259, 264}, {291, 259, 264, 292}, "<|begin|>hello world<|end|>", "hello world"},
    {"bl", "lower", " hello worldwide", {32, 259, 264, 119, 105, 100, 101}, {291, 32, 259, 264, 119, 105, 100, 101, 292}, "<|begin|> hello worldwide<|end|>", " hello worldwide"},
    {"bl", "lower", "the token izer 12345", {116, 256, 273, 32, 276, 32, 278, 52, 53}, {291, 116, 256, 273, 32, 276, 32, 278, 52, 53, 292}, "<|begin|>the token izer 12345<|end|>", "the token izer 12345"},
    {"bl", "lower", "\u4f60\u597d\n\n\u4f60\u597d", {288, 289, 288}, {291, 288, 289, 288, 292}, "<|begin|>\u4f60\u597d\n\n\u4f60\u597d<|end|>", "\u4f60\u597d\n\n\u4f60\u597d"},
    {"bl", "lower", "<|begin|>hello<|end|>", {291, 259, 292}, {291, 291, 259, 292, 292}, "<|begin|><|begin|>hello<|end|><|end|>", "hello"},
    {"bl", "lower", "a <mask>  b", {97, 294, 98}, {291, 97, 294, 98, 292}, "<|begin|>a<mask>b<|end|>", "ab"},
    {"bl", "lower", "x<think>y", {120, 293, 121}, {291, 120, 293, 121, 292}, "<|begin|>x<think>y<|end|>", "x<think>y"},
    {"bl", "lower", "[w] a[w]b [w]", {295, 32, 97, 91, 119, 93, 98, 32, 295}, {291, 295, 32, 97, 91, 119, 93, 98, 32, 295, 292}, "<|begin|>[w] a[w]b [w]<|end|>", "[w] a[w]b [w]"},
    {"bl", "lower", "\u00dcn\u00ef \u00fcn\u00ef \u00dcn\u00ef", {296, 32, 296, 32, 296}, {291, 296, 32, 296, 32, 296, 292}, "<|begin|>\ufffdn\ufffd \ufffdn\ufffd \ufffdn\ufffd<|end|>", "\ufffdn\ufffd \ufffdn\ufffd \ufffdn\ufffd"},
    {"bl", "lower", "U\u0308n\u00ef", {296}, {291, 296, 292}, "<|begin|>\ufffdn\ufffd<|end|>", "\ufffdn\ufffd"},
    {"bl", "lower", "", {}, {291, 292}, "<|begin|><|end|>", ""},
    {"bl", "lower", "  ", {32, 32}, {291, 32, 32, 292}, "<|begin|>  <|end|>", "  "},
    {"sp", "base", "hello world", {268, 276}, {1, 268, 276}, "<s> hello world", "hello world"},
    {"sp", "base", "<s>hello", {1, 260, 262, 264, 264, 267}, {1, 1, 260, 262, 264, 264, 267}, "<s><s>hello", "hello"},
    {"sp", "base", "hello<s>hello", {268, 1, 260, 262, 264, 264, 267}, {1, 268, 1, 260, 262, 264, 264, 267}, "<s> hello<s>hello", "hellohello"},
    {"sp", "base", " hello", {268}, {1, 268}, "<s> hello", "hello"},
    {"sp", "base", "h\u00e9llo w\u00f6rld", {261, 287, 264, 264, 267, 270, 198, 185, 272, 264, 275}, {1, 261, 287, 264, 264, 267, 270, 198, 185, 272, 264, 275}, "<s> h\u00e9llo w\u00f6rld", "h\u00e9llo w\u00f6rld"},
    {"sp", "base", "Hello", {259, 75, 262, 264, 264, 267}, {1, 259, 75, 262, 264, 264, 267}, "<s> Hello", "Hello"},
    {"sp", "base", "\u4f60\u597d!", {259, 231, 192, 163, 232, 168, 192, 36}, {1, 259, 231, 192, 163, 232, 168, 192, 36}, "<s> \u4f60\u597d!", "\u4f60\u597d!"},
    {"sp", "base", "hello  world", {268, 259, 276}, {1, 268, 259, 276}, "<s> hello  world", "hello  world"},
    {"sp", "base", "", {}, {1}, "<s>", ""},
    {"sp", "base", "</s>", {2}, {1, 2}, "<s></s>", ""},
    {"sp", "base", "<s>a b", {1, 288, 259, 289}, {1, 1, 288, 259, 289}, "<s><s>a b", "a b"},
    {"sp", "base", "x<s>ab  c d", {259, 300, 1, 288, 289, 286, 290, 259, 275}, {1, 259, 300, 1, 288, 289, 286, 290, 259, 275}, "<s> x<s>ab  c d", "xab  c d"},
    {"sp", "pairs_to_strings", "hello world", {268, 276}, {1, 268, 276}, "<s> hello world", "hello world"},
    {"sp", "pairs_to_strings", "<s>hello", {1, 260, 262, 264, 264, 267}, {1, 1, 260, 262, 264, 264, 267}, "<s><s>hello", "hello"},
    {"sp", "pairs_to_strings", "hello<s>hello", {268, 1, 260, 262, 264, 264, 267}, {1, 268, 1, 260, 262, 264, 264, 267}, "<s> hello<s>hello", "hellohello"},
    {"sp", "pairs_to_strings", " hello", {268}, {1, 268}, "<s> hello", "hello"},
    {"sp", "pairs_to_strings", "h\u00e9llo w\u00f6rld", {261, 287, 264, 264, 267, 270, 198, 185, 272, 264, 275}, {1, 261, 287, 264, 264, 267, 270, 198, 185, 272, 264, 275}, "<s> h\u00e9llo w\u00f6rld", "h\u00e9llo w\u00f6rld"},
    {"sp", "pairs_to_strings", "Hello", {259, 75, 262, 264, 264, 267}, {1, 259, 75, 262, 264, 264, 267}, "<s> Hello", "Hello"},
    {"sp", "pairs_to_strings", "\u4f60\u597d!", {259, 231, 192, 163, 232, 168, 192, 36}, {1, 259, 231, 192, 163, 232, 168, 192, 36}, "<s> \u4f60\u597d!", "\u4f60\u597d!"},
    {"sp", "pairs_to_strings", "hello  world", {268, 259, 276}, {1, 268, 259, 276}, "<s> hello  world", "hello  world"},
    {"sp", "pairs_to_strings", "", {}, {1}, "<s>", ""},
    {"sp", "pairs_to_strings", "</s>", {2}, {1, 2}, "<s></s>", ""},
  };
  return c;
}

std::unique_ptr<Tokenizer> build(const std::string& which, const std::string& variant) {
  json j = fixture(which == "bl" ? "byte_level_bpe.json" : "metaspace_bpe.json");
  variants().at(variant)(j);
  return Tokenizer::from_json(j.dump());
}

TEST(HandMadeTokenizer, MatchesHuggingFace) {
  std::map<std::string, std::unique_ptr<Tokenizer>> built;
  for (const Case& c : cases()) {
    std::string key = std::string(c.fixture) + "/" + c.variant;
    auto& tok = built[key];
    if (!tok) tok = build(c.fixture, c.variant);
    EXPECT_EQ(tok->encode(c.text), c.ids) << key << " \"" << c.text << "\"";
    EXPECT_EQ(tok->encode(c.text, true), c.ids_special) << key << " \"" << c.text << "\"";
    EXPECT_EQ(tok->decode(c.ids_special), c.decoded) << key << " \"" << c.text << "\"";
    EXPECT_EQ(tok->decode(c.ids_special, true), c.decoded_skip) << key << " \"" << c.text << "\"";
  }
}

TEST(HandMadeTokenizer, MergesInBothStoredForms) {
  // metaspace_bpe.json stores merges as ["a", "b"] pairs; the variant stores "a b" strings.
  auto pairs = build("sp", "base"), strings = build("sp", "pairs_to_strings");
  EXPECT_TRUE(fixture("metaspace_bpe.json")["model"]["merges"][0].is_array());
  EXPECT_TRUE(fixture("byte_level_bpe.json")["model"]["merges"][0].is_string());
  for (const char* text : {"hello world", "the thing", "\u00e9t\u00e9 \u4f60"}) {
    EXPECT_EQ(pairs->encode(text), strings->encode(text)) << text;
  }
}

TEST(HandMadeTokenizer, VocabularyQueries) {
  auto tok = build("bl", "base");
  EXPECT_EQ(tok->vocab_size(), 297);
  EXPECT_EQ(tok->token_to_id("<|end|>"), 292);
  EXPECT_EQ(tok->token_to_id("hello"), 259);
  EXPECT_EQ(tok->token_to_id("not a token"), std::nullopt);
  EXPECT_EQ(tok->id_to_token(264), "\u0120world");
  EXPECT_EQ(tok->id_to_token(100000), "");
  EXPECT_TRUE(tok->is_special(291));
  EXPECT_FALSE(tok->is_special(293));  // <think> is added but not special
  EXPECT_FALSE(tok->is_special(259));
  EXPECT_EQ(tok->decode({259, 100000, -5, 264}), "hello world");  // unknown ids are skipped
}

TEST(HandMadeTokenizer, InvalidUtf8IsReadAsReplacementCharacter) {
  auto tok = build("bl", "base");
  EXPECT_EQ(tok->encode("a\xff" "b"), tok->encode("a\ufffd" "b"));
  EXPECT_EQ(tok->encode("\xe2\x82"), tok->encode("\ufffd"));
}

TEST(HandMadeTokenizer, ConfigAddBosEosDecidesSpecialTokens) {
  TokenizerConfig config;
  config.bos_token = "<s>";
  config.eos_token = "</s>";
  config.add_bos_token = true;
  config.add_eos_token = true;
  auto tok = Tokenizer::from_json(fixture("metaspace_bpe.json").dump(), config);
  EXPECT_EQ(tok->encode("hello", true), (std::vector<int64_t>{1, 268, 2}));
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->pad_id(), std::nullopt);
  config.add_bos_token = false;
  config.add_eos_token = std::nullopt;
  EXPECT_EQ(Tokenizer::from_json(fixture("metaspace_bpe.json").dump(), config)->encode("hello", true),
            (std::vector<int64_t>{268}));
}

TEST(HandMadeTokenizer, BatchEncodeOnThreads) {
  auto tok = build("bl", "base");
  std::vector<std::string> texts;
  for (int i = 0; i < 500; ++i) texts.push_back(cases()[size_t(i) % 12].text + std::to_string(i));
  for (int threads : {1, 3, 0}) {
    auto batch = tok->encode_batch(texts, threads, true);
    ASSERT_EQ(batch.size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(batch[i], tok->encode(texts[i], true)) << i;
  }
  EXPECT_TRUE(tok->encode_batch({}, 4).empty());
}

TEST(HandMadeTokenizer, MalformedJsonIsADataErrorNamingTheSource) {
  json j = fixture("byte_level_bpe.json");
  auto expect_error = [](const std::string& text, const std::string& needle) {
    try {
      Tokenizer::from_json(text, {}, "/models/x/tokenizer.json");
      ADD_FAILURE() << "no error for " << needle;
    } catch (const DataError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("/models/x/tokenizer.json"), std::string::npos) << what;
      EXPECT_NE(what.find(needle), std::string::npos) << what;
      EXPECT_FALSE(e.hint().empty());
    }
  };
  expect_error(j.dump().substr(0, 500), "not valid JSON");
  json bad = j;
  bad["model"]["merges"][3] = "a b c";
  expect_error(bad.dump(), "model.merges[3]");
  bad = j;
  bad["model"]["merges"].push_back("zz qq");
  expect_error(bad.dump(), "not in the vocabulary");
  bad = j;
  bad["model"]["type"] = "Unigram";
  expect_error(bad.dump(), "Unigram");
  bad = j;
  bad["pre_tokenizer"]["pretokenizers"][1]["type"] = "Mystery";
  expect_error(bad.dump(), "pre_tokenizer.pretokenizers[1]");
  bad = j;
  bad["model"].erase("vocab");
  expect_error(bad.dump(), "vocab");
  bad = j;
  bad["added_tokens"][0].erase("content");
  expect_error(bad.dump(), "added_tokens[0]");
}

}  // namespace
}  // namespace swift::tokenizer
