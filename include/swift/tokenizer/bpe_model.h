// The BPE model of tokenizer.json ("model": {"type": "BPE"}): merges by rank with a heap over a linked list of
// symbols (pair -> rank in a flat hash table), byte_fallback, unk_token/fuse_unk, ignore_merges,
// continuing_subword_prefix and end_of_word_suffix, with Hugging Face tokenizers' semantics. Words already seen
// come from a bounded word cache the caller owns (one per thread).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swift::tokenizer {

namespace detail {
class StringIdTable;
class MergeTable;
class WordCache;
}  // namespace detail

struct BpeOptions {
  std::optional<std::string> unk_token;  // Default: none (unknown characters are dropped, as in tokenizers)
  std::string continuing_subword_prefix;  // Default: "" (none)
  std::string end_of_word_suffix;         // Default: "" (none)
  bool fuse_unk = false;                  // consecutive unknown characters give one unk
  bool byte_fallback = false;             // unknown characters become <0xXX> byte tokens when they exist
  bool ignore_merges = false;             // a word that is itself in the vocabulary is one token
};

class BpeModel {
 public:
  // Scratch state for one thread: the word cache and reusable buffers. Create with new_cache().
  class Cache;
  struct CacheDeleter {
    void operator()(Cache* c) const;
  };
  using CachePtr = std::unique_ptr<Cache, CacheDeleter>;

  // vocab: token -> id; merges: pairs in rank order. Throws DataError when a merge names a token (or makes one)
  // that is not in the vocabulary.
  BpeModel(std::vector<std::pair<std::string, int32_t>> vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options);
  ~BpeModel();

  // From tokenizer.json's "model" object; merges may be "a b" strings or ["a", "b"] pairs.
  static std::unique_ptr<BpeModel> from_json(const nlohmann::json& j, const std::string& where = "model");

  CachePtr new_cache() const;

  // Appends the ids of one pre-tokenized word to `out`. `cache` may be null (no caching).
  void tokenize(std::string_view word, std::vector<int32_t>& out, Cache* cache) const;

  // -1 when absent.
  int32_t token_to_id(std::string_view token) const;
  // nullptr when `id` is not in the vocabulary.
  const std::string* id_to_token(int32_t id) const;
  // One past the largest id.
  int32_t size() const { return int32_t(tokens_.size()); }
  size_t num_merges() const { return num_merges_; }
  const BpeOptions& options() const { return options_; }

 private:
  void merge_word(std::string_view word, std::vector<int32_t>& out, Cache& scratch) const;
  void merge_linear(Cache& scratch, std::vector<int32_t>& out) const;

  BpeOptions options_;
  std::vector<std::string> tokens_;  // by id ("" for ids not in the vocabulary)
  std::vector<bool> present_;
  std::unique_ptr<detail::StringIdTable> vocab_;
  std::unique_ptr<detail::MergeTable> merges_;
  size_t num_merges_ = 0;
  std::array<int32_t, 256> byte_ids_{};  // <0xXX> token ids for byte_fallback (-1: absent)
  std::vector<int32_t> char_ids_;         // id of each single code point below 0x800 when no prefix/suffix
  int32_t unk_id_ = -1;
};

}  // namespace swift::tokenizer
