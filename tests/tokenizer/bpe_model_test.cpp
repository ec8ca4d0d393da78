// The BPE model on tiny vocabularies. Expected ids: Hugging Face tokenizers 0.23
// (tokenizers.models.BPE(vocab, merges, ...).tokenize(word)), exact.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "swift/core/error.h"
#include "swift/tokenizer/bpe_model.h"

namespace swift::tokenizer {
namespace {

using Ids = std::vector<int32_t>;

const std::vector<std::pair<std::string, int32_t>> kVocab = {
    {"<unk>", 0}, {"a", 1}, {"b", 2}, {"c", 3}, {"ab", 4}, {"bc", 5}, {"abc", 6}, {"abab", 7}, {"abababab", 8},
    {"<0x78>", 9}};
const std::vector<std::pair<std::string, std::string>> kMerges = {
    {"a", "b"}, {"ab", "ab"}, {"abab", "abab"}, {"b", "c"}, {"ab", "c"}};

Ids run(const BpeModel& m, const std::string& word, bool cached = true) {
  Ids out;
  auto cache = m.new_cache();
  m.tokenize(word, out, cached ? cache.get() : nullptr);
  if (cached) {  // a second call comes from the word cache and must agree
    Ids again;
    m.tokenize(word, again, cache.get());
    EXPECT_EQ(again, out) << word;
  }
  return out;
}

TEST(BpeModel, MergesByRank) {
  BpeModel m(kVocab, kMerges, {});
  EXPECT_EQ(run(m, "abc"), (Ids{6}));
  EXPECT_EQ(run(m, "bcab"), (Ids{5, 4}));
  // 75 symbols: the heap path (long words) gives what the linear scan gives for short ones.
  std::string word;
  for (int i = 0; i < 37; ++i) word += "ab";
  EXPECT_EQ(run(m, word + "c"), (Ids{8, 8, 8, 8, 8, 8, 8, 8, 8, 6}));
  EXPECT_EQ(run(m, word + "c", false), (Ids{8, 8, 8, 8, 8, 8, 8, 8, 8, 6}));
}

TEST(BpeModel, UnknownCharacters) {
  BpeOptions o;
  o.unk_token = "<unk>";
  EXPECT_EQ(run(BpeModel(kVocab, kMerges, o), "axxbyyc"), (Ids{1, 0, 0, 2, 0, 0, 3}));
  o.fuse_unk = true;
  EXPECT_EQ(run(BpeModel(kVocab, kMerges, o), "axxbyyc"), (Ids{1, 0, 2, 0, 3}));
  o.byte_fallback = true;
  EXPECT_EQ(run(BpeModel(kVocab, kMerges, o), "axxbyyc"), (Ids{1, 9, 9, 2, 0, 3}));
  // Without an unk token unknown characters vanish (and their neighbours may merge), as in tokenizers.
  EXPECT_EQ(run(BpeModel(kVocab, kMerges, {}), "axxbc"), (Ids{6}));
  o.unk_token = "<missing>";
  EXPECT_THROW(BpeModel(kVocab, kMerges, o), DataError);
}

TEST(BpeModel, IgnoreMerges) {
  BpeOptions o;
  o.ignore_merges = true;
  BpeModel m(kVocab, kMerges, o);
  EXPECT_EQ(run(m, "abababab"), (Ids{8}));
  EXPECT_EQ(run(m, "abc"), (Ids{6}));
}

TEST(BpeModel, ContinuingSubwordPrefixAndEndOfWordSuffix) {
  BpeOptions o;
  o.continuing_subword_prefix = "##";
  o.end_of_word_suffix = "</w>";
  BpeModel m({{"a", 0}, {"##b", 1}, {"##c</w>", 2}, {"c</w>", 3}, {"a##b", 4}, {"ab", 5}, {"##bc</w>", 6}, {"b", 7}},
             {{"a", "##b"}, {"##b", "##c</w>"}}, o);
  EXPECT_EQ(run(m, "abc"), (Ids{5, 2}));
  EXPECT_EQ(run(m, "c"), (Ids{3}));
  EXPECT_EQ(run(m, "ab"), (Ids{0}));
}

TEST(BpeModel, FromJsonWithBothMergeForms) {
  auto j = nlohmann::json::parse(R"({"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"c":3,"abc":4},
                                     "merges":["a b","ab c"]})");
  auto strings = BpeModel::from_json(j);
  j["merges"] = nlohmann::json::parse(R"([["a","b"],["ab","c"]])");
  auto pairs = BpeModel::from_json(j);
  EXPECT_EQ(run(*strings, "abcab"), (Ids{4, 2}));
  EXPECT_EQ(run(*pairs, "abcab"), (Ids{4, 2}));
  EXPECT_EQ(strings->num_merges(), 2u);
  EXPECT_EQ(*strings->id_to_token(2), "ab");
  EXPECT_EQ(strings->token_to_id("abc"), 4);
  EXPECT_EQ(strings->token_to_id("zzz"), -1);
}

TEST(BpeModel, BadMergesAreDataErrorsNamingTheEntry) {
  auto expect = [](const char* json, const std::string& needle) {
    try {
      BpeModel::from_json(nlohmann::json::parse(json));
      ADD_FAILURE() << "no error: " << needle;
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect(R"({"type":"BPE","vocab":{"a":0,"b":1},"merges":["a b"]})", "merged token 'ab'");
  expect(R"({"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a  b"]})", "model.merges[0]");
  expect(R"({"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a x"]})", "'x' is not in the vocabulary");
  expect(R"({"type":"BPE","vocab":{"a":0},"merges":[3]})", "model.merges[0]");
  expect(R"({"type":"BPE","vocab":{"a":"zero"},"merges":[]})", "model.vocab");
  expect(R"({"type":"BPE","vocab":{"a":0}})", "merges");
  expect(R"({"type":"WordPiece","vocab":{"a":0}})", "WordPiece");
}

}  // namespace
}  // namespace swift::tokenizer
