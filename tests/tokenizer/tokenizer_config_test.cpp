// tokenizer_config.json parsing and Tokenizer::load's choice of files, with errors that name the file.
#include <gtest/gtest.h>

#include "swift/core/error.h"
#include "swift/tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace swift::tokenizer {
namespace {

namespace fs = std::filesystem;

TEST(TokenizerConfig, ParsesTheFieldsSwiftUses) {
  auto c = parse_tokenizer_config(R"({
    "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
    "eos_token": "</s>", "pad_token": null, "unk_token": "<unk>",
    "add_bos_token": true, "add_eos_token": false,
    "model_max_length": 1000000000000000019884624838656,
    "clean_up_tokenization_spaces": false,
    "chat_template": "{{ messages }}",
    "tokenizer_class": "LlamaTokenizer",
    "additional_special_tokens": ["<x>", {"content": "<y>"}],
    "added_tokens_decoder": {
      "2": {"content": "</s>", "lstrip": false, "normalized": false, "rstrip": false, "single_word": false, "special": true},
      "1": {"content": "<s>", "special": true}
    }})",
                                  "tokenizer_config.json");
  EXPECT_EQ(c.bos_token, "<s>");
  EXPECT_EQ(c.eos_token, "</s>");
  EXPECT_EQ(c.pad_token, std::nullopt);
  EXPECT_EQ(c.unk_token, "<unk>");
  EXPECT_EQ(c.add_bos_token, true);
  EXPECT_EQ(c.add_eos_token, false);
  EXPECT_EQ(c.model_max_length, std::nullopt);  // transformers' "no limit" sentinel
  EXPECT_EQ(c.chat_template, "{{ messages }}");
  EXPECT_EQ(c.tokenizer_class, "LlamaTokenizer");
  EXPECT_EQ(c.additional_special_tokens, (std::vector<std::string>{"<x>", "<y>"}));
  ASSERT_EQ(c.added_tokens_decoder.size(), 2u);
  EXPECT_EQ(c.added_tokens_decoder[0].id, 1);
  EXPECT_EQ(c.added_tokens_decoder[0].content, "<s>");
  EXPECT_FALSE(c.added_tokens_decoder[0].normalized);  // special tokens default to not normalized
  EXPECT_TRUE(c.added_tokens_decoder[1].special);
}

TEST(TokenizerConfig, NamedChatTemplatesAndLengths) {
  auto c = parse_tokenizer_config(
      R"({"model_max_length": 32768, "chat_template": [{"name": "default", "template": "A"},
          {"name": "tool_use", "template": "B"}]})",
      "x");
  EXPECT_EQ(c.model_max_length, 32768);
  EXPECT_EQ(c.chat_template, "A");
  EXPECT_EQ(c.chat_templates.at("tool_use"), "B");
  EXPECT_EQ(parse_tokenizer_config("{}", "x").add_bos_token, std::nullopt);
}

TEST(TokenizerConfig, MalformedIsADataErrorNamingTheFile) {
  test::TempDir dir;
  auto expect = [&](const std::string& content, const std::string& needle) {
    auto file = dir.write("tokenizer_config.json", content);
    try {
      load_tokenizer_config(file);
      ADD_FAILURE() << "no error for " << content;
    } catch (const DataError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(file.string()), std::string::npos) << what;
      EXPECT_NE(what.find(needle), std::string::npos) << what;
      EXPECT_FALSE(e.hint().empty());
    }
  };
  expect(R"({"bos_token": )", "not valid JSON");
  expect(R"({"bos_token": 3})", "bos_token");
  expect(R"({"add_bos_token": "yes"})", "add_bos_token");
  expect(R"({"chat_template": 7})", "chat_template");
  expect(R"({"added_tokens_decoder": {"x": {"content": "a"}}})", "added_tokens_decoder");
  expect(R"([1, 2])", "expected a JSON object");
  expect(R"({"model_max_length": 1e+302222222})", "not valid JSON");  // a number beyond a double (found by fuzzing)
  EXPECT_THROW(load_tokenizer_config(dir.path() / "missing.json"), DataError);
}

TEST(TokenizerLoad, PrefersTokenizerJsonAndReadsTheConfig) {
  test::TempDir dir;
  dir.write("tokenizer.json", test::read_file(fs::path(SWIFT_SOURCE_DIR) / "tests/tokenizer/data/metaspace_bpe.json"));
  dir.write("tokenizer.model", "not a sentencepiece model");  // must not be read
  dir.write("tokenizer_config.json", R"({"bos_token": "<s>", "eos_token": "</s>"})");
  dir.write("chat_template.jinja", "{% for m in messages %}{{ m.content }}{% endfor %}");
  auto tok = Tokenizer::load(dir.path());
  EXPECT_EQ(tok->encode("hello world", true), (std::vector<int64_t>{1, 268, 276}));
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->config().chat_template, "{% for m in messages %}{{ m.content }}{% endfor %}");
  // A file path works too.
  EXPECT_EQ(Tokenizer::load(dir.path() / "tokenizer.json")->encode("hello"), (std::vector<int64_t>{268}));
}

TEST(TokenizerLoad, MissingOrMalformedFilesAreDataErrors) {
  test::TempDir dir;
  auto expect = [](const fs::path& path, const std::string& needle) {
    try {
      Tokenizer::load(path);
      ADD_FAILURE() << "no error for " << path;
    } catch (const DataError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(needle), std::string::npos) << what;
      EXPECT_FALSE(e.hint().empty());
    }
  };
  expect(dir.path() / "nope", "does not exist");
  expect(dir.path(), "expected tokenizer.json or tokenizer.model");
  dir.write("tokenizer.model", "garbage");
  expect(dir.path(), (dir.path() / "tokenizer.model").string());
  dir.write("tokenizer.json", "{\"model\": ");
  expect(dir.path(), (dir.path() / "tokenizer.json").string());
  dir.write("tokenizer.json", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "decoder": {"type": "CTC2"}})");
  expect(dir.path(), "decoder");
  dir.write("tokenizer.json", R"({"model": {"type": "BPE", "vocab": {"a": 1e999}, "merges": []}})");  // beyond a double
  expect(dir.path(), (dir.path() / "tokenizer.json").string());
  // Token ids index dense tables: an absurd one is refused before it allocates gigabytes (found by fuzzing:
  // 87888888888 wrapped to an int32 near 2^31 and asked for 64 GB).
  for (const char* id : {"87888888888", "16777216", "-1", "18446744073709551615"}) {
    dir.write("tokenizer.json", std::string(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": )") + id +
                                    R"(}, "merges": []}})");
    expect(dir.path(), std::string("token id ") + id + " is outside [0, 16777216)");
    dir.write("tokenizer.json", std::string(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},)") +
                                    R"( "added_tokens": [{"content": "<x>", "id": )" + id + "}]}");
    expect(dir.path(), "added_tokens[0].id");
  }
}

}  // namespace
}  // namespace swift::tokenizer
