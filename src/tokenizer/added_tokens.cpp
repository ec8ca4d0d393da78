// Added-token matching as Hugging Face tokenizers' AddedVocabulary::find_matches: a byte trie searched
// leftmost-longest, then single_word / lstrip / rstrip adjust or reject each match.
#include "swift/tokenizer/added_tokens.h"

#include <algorithm>
#include <array>

#include "swift/tokenizer/normalizer.h"
#include "swift/tokenizer/unicode.h"

namespace swift::tokenizer {

class AddedVocabulary::Trie {
 public:
  Trie() : nodes_(1) { first_.fill(false); }
  void add(std::string_view key, int32_t token_index) {
    if (key.empty()) return;
    first_[static_cast<unsigned char>(key[0])] = true;
    int32_t node = 0;
    for (unsigned char c : key) {
      int32_t next = child(node, c);
      if (next < 0) {
        next = int32_t(nodes_.size());
        nodes_[node].edges.emplace_back(c, next);
        nodes_.emplace_back();
      }
      node = next;
    }
    if (nodes_[node].token < 0) nodes_[node].token = token_index;
  }
  // The longest key starting at text[pos]: its length and token index, or length 0.
  std::pair<size_t, int32_t> longest_at(std::string_view text, size_t pos) const {
    int32_t node = 0;
    size_t best_len = 0;
    int32_t best = -1;
    for (size_t i = pos; i < text.size(); ++i) {
      node = child(node, static_cast<unsigned char>(text[i]));
      if (node < 0) break;
      if (nodes_[node].token >= 0) {
        best_len = i + 1 - pos;
        best = nodes_[node].token;
      }
    }
    return {best_len, best};
  }
  bool may_start(unsigned char c) const { return first_[c]; }

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> edges;
    int32_t token = -1;
  };
  int32_t child(int32_t node, unsigned char c) const {
    for (const auto& [byte, next] : nodes_[node].edges) {
      if (byte == c) return next;
    }
    return -1;
  }
  std::vector<Node> nodes_;
  std::array<bool, 256> first_;
};

AddedVocabulary::AddedVocabulary() = default;
AddedVocabulary::~AddedVocabulary() = default;
AddedVocabulary::AddedVocabulary(AddedVocabulary&&) noexcept = default;
AddedVocabulary& AddedVocabulary::operator=(AddedVocabulary&&) noexcept = default;

void AddedVocabulary::set(std::vector<AddedToken> tokens, const Normalizer* normalizer) {
  tokens_ = std::move(tokens);
  by_id_.clear();
  by_content_.clear();
  normalized_text_.clear();
  raw_trie_ = std::make_unique<Trie>();
  normalized_trie_ = std::make_unique<Trie>();
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& t = tokens_[i];
    if (t.content.empty()) continue;
    int32_t id = int32_t(t.id);
    by_id_[id] = i;
    by_content_.emplace(t.content, id);
    if (t.normalized) {
      std::string normed = normalize_string(normalizer, t.content);
      normalized_trie_->add(normed, int32_t(i));
      if (normed != t.content) normalized_text_[id] = std::move(normed);
    } else {
      raw_trie_->add(t.content, int32_t(i));
    }
  }
}

namespace {

// Code point ending at byte `end` (exclusive) of valid UTF-8 text.
uint32_t code_point_before(std::string_view s, size_t end, size_t* start) {
  size_t i = end - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  *start = i;
  size_t j = i;
  return next_code_point(s, j);
}

}  // namespace

void AddedVocabulary::find(std::string_view text, bool normalized, std::vector<AddedMatch>& out) const {
  out.clear();
  const Trie* trie = normalized ? normalized_trie_.get() : raw_trie_.get();
  if (!trie || text.empty()) return;
  size_t start_offset = 0;  // end of the previous accepted match
  size_t pos = 0;
  while (pos < text.size()) {
    if (!trie->may_start(static_cast<unsigned char>(text[pos]))) {
      ++pos;
      continue;
    }
    auto [len, index] = trie->longest_at(text, pos);
    if (len == 0) {
      ++pos;
      continue;
    }
    const AddedToken& t = tokens_[index];
    size_t start = pos, stop = pos + len;
    pos = stop;  // the search resumes after this match even when it is rejected (non-overlapping iteration)
    if (t.single_word) {
      size_t unused = 0;
      bool start_space = start == 0 || !is_word_char(code_point_before(text, start, &unused));
      size_t j = stop;
      bool stop_space = stop == text.size() || !is_word_char(next_code_point(text, j));
      if (!start_space || !stop_space) continue;
    }
    if (t.lstrip) {
      size_t s = start;
      while (s > 0) {
        size_t prev = 0;
        if (!is_white_space(code_point_before(text, s, &prev))) break;
        s = prev;
      }
      start = std::max(s, start_offset);
    }
    if (t.rstrip) {
      while (stop < text.size()) {
        size_t j = stop;
        if (!is_white_space(next_code_point(text, j))) break;
        stop = j;
      }
      pos = stop;
    }
    out.push_back({{uint32_t(start), uint32_t(stop)}, int32_t(t.id)});
    start_offset = stop;
  }
}

const AddedToken* AddedVocabulary::token(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const std::string* AddedVocabulary::decode_text(int32_t id) const {
  auto n = normalized_text_.find(id);
  if (n != normalized_text_.end()) return &n->second;
  const AddedToken* t = token(id);
  return t ? &t->content : nullptr;
}

int32_t AddedVocabulary::token_to_id(std::string_view content) const {
  auto it = by_content_.find(std::string(content));
  return it == by_content_.end() ? -1 : it->second;
}

bool AddedVocabulary::is_special(int32_t id) const {
  const AddedToken* t = token(id);
  return t && t->special;
}

}  // namespace swift::tokenizer
