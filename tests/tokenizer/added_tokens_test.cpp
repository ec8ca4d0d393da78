// Added-token matching (tokenizers' AddedVocabulary::find_matches): leftmost-longest, single_word, lstrip/rstrip.
#include <gtest/gtest.h>

#include "swift/tokenizer/added_tokens.h"

namespace swift::tokenizer {
namespace {

std::vector<std::pair<Span, int32_t>> find(const AddedVocabulary& v, const std::string& text, bool normalized = false) {
  std::vector<AddedMatch> m;
  v.find(text, normalized, m);
  std::vector<std::pair<Span, int32_t>> out;
  for (const auto& x : m) out.push_back({x.span, x.id});
  return out;
}

AddedToken token(int64_t id, std::string content, bool special = true) {
  AddedToken t;
  t.id = id;
  t.content = std::move(content);
  t.special = special;
  t.normalized = false;
  return t;
}

TEST(AddedTokens, LeftmostLongestAndSingleWord) {
  AddedVocabulary v;
  AddedToken word = token(12, "ab", false);
  word.single_word = true;
  v.set({token(10, "<a>"), token(11, "<a><b>"), word}, nullptr);
  using M = std::vector<std::pair<Span, int32_t>>;
  EXPECT_EQ(find(v, "x<a><b>y<a> ab cab ab."),
            (M{{{1, 7}, 11}, {{8, 11}, 10}, {{12, 14}, 12}, {{19, 21}, 12}}));
  EXPECT_EQ(find(v, "abab"), M{});  // "ab" inside a word never matches
  EXPECT_EQ(find(v, "\u00e9ab"), M{});  // a letter outside ASCII is a word character too
  EXPECT_TRUE(find(v, "").empty());
}

TEST(AddedTokens, LstripRstripSwallowWhitespace) {
  AddedVocabulary v;
  AddedToken m = token(5, "<m>");
  m.lstrip = m.rstrip = true;
  v.set({m}, nullptr);
  using M = std::vector<std::pair<Span, int32_t>>;
  EXPECT_EQ(find(v, "a  <m>\u3000 b"), (M{{{1, 10}, 5}}));
  EXPECT_EQ(find(v, "<m><m>"), (M{{{0, 3}, 5}, {{3, 6}, 5}}));
}

TEST(AddedTokens, NormalizedTokensAreSearchedSeparately) {
  AddedVocabulary v;
  AddedToken n = token(7, "<n>", false);
  n.normalized = true;
  v.set({token(6, "<r>"), n}, nullptr);
  using M = std::vector<std::pair<Span, int32_t>>;
  EXPECT_EQ(find(v, "<r><n>"), (M{{{0, 3}, 6}}));
  EXPECT_EQ(find(v, "<r><n>", true), (M{{{3, 6}, 7}}));
  EXPECT_TRUE(v.is_special(6));
  EXPECT_FALSE(v.is_special(7));
  EXPECT_EQ(v.token_to_id("<n>"), 7);
  EXPECT_EQ(*v.decode_text(6), "<r>");
  EXPECT_EQ(v.decode_text(8), nullptr);
}

}  // namespace
}  // namespace swift::tokenizer
