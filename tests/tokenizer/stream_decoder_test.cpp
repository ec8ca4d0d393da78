// Streaming detokenization: pieces never split a UTF-8 character and add up to decode(all ids).
#include <gtest/gtest.h>

#include "swift/tokenizer/tokenizer.h"
#include "swift/tokenizer/unicode.h"
#include "tokenizer_test_util.h"

namespace swift::tokenizer {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<Tokenizer> metaspace() {
  return Tokenizer::from_json(
      test::read_file(fs::path(SWIFT_SOURCE_DIR) / "tests/tokenizer/data/metaspace_bpe.json"));
}

TEST(StreamDecoder, HoldsBackByteRunsUntilTheyEnd) {
  auto tok = metaspace();
  // "▁hello", then "€!" as four byte-fallback tokens, then "▁world" (ids from metaspace_bpe.json).
  int64_t e2 = 3 + 0xE2, x82 = 3 + 0x82, xac = 3 + 0xAC, bang = 3 + '!';
  StreamDecoder s(*tok);
  EXPECT_EQ(s.push(268), "hello");  // Strip drops the first space, as in the full decode
  EXPECT_EQ(s.push(e2), "");
  EXPECT_EQ(s.push(x82), "");
  EXPECT_EQ(s.push(xac), "");  // a later invalid byte would turn the whole run into U+FFFDs
  EXPECT_EQ(s.push(bang), "");
  EXPECT_EQ(s.push(276), "\u20ac! world");
  EXPECT_EQ(s.push(268), " hello");
  EXPECT_EQ(s.flush(), "");
  EXPECT_EQ(tok->decode({268, e2, x82, xac, bang, 276, 268}), "hello\u20ac! world hello");
  EXPECT_TRUE(tok->decode_depends_on_next(e2));
  EXPECT_FALSE(tok->decode_depends_on_next(268));
}

TEST(StreamDecoder, ByteLevelPiecesCompleteCharacters) {
  auto tok = Tokenizer::from_json(
      test::read_file(fs::path(SWIFT_SOURCE_DIR) / "tests/tokenizer/data/byte_level_bpe.json"));
  std::vector<int64_t> ids = tok->encode("h\u00e9 \U0001F600!");
  StreamDecoder s(*tok);
  std::vector<std::string> pieces;
  for (int64_t id : ids) pieces.push_back(s.push(id));
  pieces.push_back(s.flush());
  // Bytes of é and of the emoji arrive one token at a time; text comes out when a character is complete.
  EXPECT_EQ(pieces, (std::vector<std::string>{"h", "", "\u00e9", " ", "", "", "", "\U0001F600", "!", ""}));
  EXPECT_FALSE(tok->decode_depends_on_next(ids[1]));  // ByteLevel decoding never rewrites a complete character
}

TEST(StreamDecoder, FlushGivesWhatIsLeft) {
  auto tok = metaspace();
  StreamDecoder s(*tok);
  EXPECT_EQ(s.push(268), "hello");
  EXPECT_EQ(s.push(3 + 0xE2), "");
  EXPECT_EQ(s.flush(), "\ufffd");  // an incomplete character decodes as U+FFFD, like decode()
  EXPECT_EQ(s.push(268), "hello");  // flush starts over
}

TEST(StreamDecoder, SkipsSpecialTokensWhenAsked) {
  auto tok = metaspace();
  std::vector<int64_t> ids = {1, 268, 2, 276, 1};
  for (bool skip : {false, true}) {
    StreamDecoder s(*tok, skip);
    std::string all;
    for (int64_t id : ids) {
      std::string piece = s.push(id);
      EXPECT_TRUE(is_valid_utf8(piece));
      all += piece;
    }
    all += s.flush();
    EXPECT_EQ(all, tok->decode(ids, skip)) << skip;
  }
}

TEST(StreamDecoder, RandomIdSequencesAddUpToTheFullDecode) {
  auto tok = metaspace();
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    std::vector<int64_t> ids(rng() % 20);
    for (auto& id : ids) id = int64_t(rng() % uint32_t(tok->vocab_size() + 3));
    StreamDecoder s(*tok);
    std::string all;
    for (int64_t id : ids) all += s.push(id);
    all += s.flush();
    EXPECT_EQ(all, tok->decode(ids)) << round;
  }
}

}  // namespace
}  // namespace swift::tokenizer
