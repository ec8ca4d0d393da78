// BPE with Hugging Face tokenizers' semantics (tokenizers/src/models/bpe/{model,word}.rs): initial symbols per
// character (byte_fallback, unk), then the lowest-ranked adjacent pair is merged until none is left.
#include "swift/tokenizer/bpe_model.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "hash_table.h"
#include "json_util.h"
#include "swift/core/logging.h"
#include "swift/tokenizer/unicode.h"

namespace swift::tokenizer {

namespace {
constexpr size_t kMaxCachedWordBytes = 256;  // tokenizers' cache MAX_LENGTH
// Up to this many initial symbols a linear scan for the best pair beats the heap.
constexpr size_t kLinearMergeMax = 48;

struct Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
  uint32_t len;  // 0: merged away
};

struct QueuedMerge {
  int32_t rank;
  int32_t pos;
  int32_t new_id;
  // std heap is a max-heap: "greater" pops the lowest rank, then the leftmost position.
  bool operator<(const QueuedMerge& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};
}  // namespace

class BpeModel::Cache {
 public:
  detail::WordCache words;
  std::vector<Symbol> symbols;
  std::vector<QueuedMerge> heap;
  std::vector<int32_t> ids, ranks, new_ids;
  std::string buffer;
};

// Short words: repeatedly merge the lowest-ranked adjacent pair (leftmost on ties), which is exactly the order
// the heap gives, since both always pick the minimum over the currently valid pairs.
void BpeModel::merge_linear(Cache& s, std::vector<int32_t>& out) const {
  auto& ids = s.ids;
  auto& ranks = s.ranks;
  auto& new_ids = s.new_ids;
  ids.clear();
  for (const Symbol& sym : s.symbols) ids.push_back(sym.id);
  constexpr int32_t kNone = INT32_MAX;
  auto rank_of = [&](size_t i, int32_t* new_id) {
    const auto* m = merges_->find(ids[i], ids[i + 1]);
    if (!m) return kNone;
    *new_id = m->new_id;
    return m->rank;
  };
  size_t n = ids.size();
  ranks.resize(n - 1);
  new_ids.resize(n - 1);
  for (size_t i = 0; i + 1 < n; ++i) ranks[i] = rank_of(i, &new_ids[i]);
  while (n > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < n; ++i) {
      if (ranks[i] < ranks[best]) best = i;
    }
    if (ranks[best] == kNone) break;
    ids[best] = new_ids[best];
    ids.erase(ids.begin() + long(best) + 1);
    ranks.erase(ranks.begin() + long(best));
    new_ids.erase(new_ids.begin() + long(best));
    --n;
    if (best + 1 < n) ranks[best] = rank_of(best, &new_ids[best]);
    if (best > 0) ranks[best - 1] = rank_of(best - 1, &new_ids[best - 1]);
  }
  out.insert(out.end(), ids.begin(), ids.end());
}

BpeModel::~BpeModel() = default;

BpeModel::BpeModel(std::vector<std::pair<std::string, int32_t>> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options)
    : options_(std::move(options)),
      vocab_(std::make_unique<detail::StringIdTable>()),
      merges_(std::make_unique<detail::MergeTable>()) {
  int32_t max_id = -1;
  for (const auto& [token, id] : vocab) {
    SWIFT_CHECK(id >= 0, DataError, "token '" + token + "' has negative id " + std::to_string(id),
                detail::kReportHint);
    max_id = std::max(max_id, id);
  }
  tokens_.assign(size_t(max_id + 1), std::string());
  present_.assign(size_t(max_id + 1), false);
  std::vector<int32_t> ids;
  ids.reserve(vocab.size());
  for (auto& [token, id] : vocab) {
    if (present_[id]) continue;  // two strings for one id: the first wins
    present_[id] = true;
    tokens_[id] = std::move(token);
    ids.push_back(id);
  }
  vocab_->build(&tokens_, ids);

  merges_->reserve(merges.size());
  num_merges_ = merges.size();
  const size_t prefix_len = options_.continuing_subword_prefix.size();
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    int32_t a_id = vocab_->find(a), b_id = vocab_->find(b);
    auto where = [&] { return "model.merges[" + std::to_string(rank) + "]"; };
    if (a_id < 0) detail::fail(where(), "merge token '" + a + "' is not in the vocabulary");
    if (b_id < 0) detail::fail(where(), "merge token '" + b + "' is not in the vocabulary");
    joined.assign(a);
    joined.append(b, std::min(prefix_len, b.size()), std::string::npos);
    int32_t new_id = vocab_->find(joined);
    if (new_id < 0) detail::fail(where(), "merged token '" + joined + "' is not in the vocabulary");
    merges_->insert(a_id, b_id, {int32_t(rank), new_id});
  }

  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    byte_ids_[b] = vocab_->find(name);
  }
  if (options_.continuing_subword_prefix.empty() && options_.end_of_word_suffix.empty()) {
    char_ids_.assign(0x800, -1);
    for (uint32_t cp = 0; cp < 0x800; ++cp) char_ids_[cp] = vocab_->find(utf8_encode(cp));
  }
  if (options_.unk_token) {
    unk_id_ = vocab_->find(*options_.unk_token);
    // tokenizers fails only when an unknown character shows up; a clear error at load is kinder.
    SWIFT_CHECK(unk_id_ >= 0, DataError, "unk_token '" + *options_.unk_token + "' is not in the vocabulary",
                detail::kReportHint);
  }
}

std::unique_ptr<BpeModel> BpeModel::from_json(const nlohmann::json& j, const std::string& where) {
  using detail::json;
  std::string type = j.contains("type") ? detail::type_of(j, where) : "BPE";
  if (type != "BPE") {
    detail::fail(where + ".type", "unsupported model type '" + type + "'",
                 "swift implements BPE tokenizer.json models (Llama 3, Qwen, Mistral, Llama 2 ...); for a "
                 "SentencePiece model put its tokenizer.model in the folder instead of tokenizer.json");
  }
  BpeOptions o;
  o.unk_token = detail::get_opt_string(j, "unk_token", where);
  o.continuing_subword_prefix = detail::get_opt_string(j, "continuing_subword_prefix", where).value_or("");
  o.end_of_word_suffix = detail::get_opt_string(j, "end_of_word_suffix", where).value_or("");
  o.fuse_unk = detail::get_bool(j, "fuse_unk", false, where);
  o.byte_fallback = detail::get_bool(j, "byte_fallback", false, where);
  o.ignore_merges = detail::get_bool(j, "ignore_merges", false, where);
  auto dropout = j.find("dropout");
  if (dropout != j.end() && dropout->is_number() && dropout->get<double>() > 0) {
    log_warn("tokenizer: BPE dropout ", dropout->get<double>(), " is ignored (encoding is deterministic)");
  }

  const json& v = detail::required(j, "vocab", where);
  if (!v.is_object()) detail::fail(where + ".vocab", "expected an object of token -> id, got " + detail::json_kind(v));
  std::vector<std::pair<std::string, int32_t>> vocab;
  vocab.reserve(v.size());
  for (auto it = v.begin(); it != v.end(); ++it) {
    vocab.emplace_back(it.key(), detail::token_id(it.value(), where + ".vocab[\"" + it.key() + "\"]"));
  }

  const json& m = detail::required(j, "merges", where);
  if (!m.is_array()) detail::fail(where + ".merges", "expected a list, got " + detail::json_kind(m));
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(m.size());
  for (size_t i = 0; i < m.size(); ++i) {
    const json& e = m[i];
    auto at = [&] { return where + ".merges[" + std::to_string(i) + "]"; };
    if (e.is_string()) {
      // "a b": exactly one space (tokenizers' convert_merges_to_hashmap).
      const std::string& s = e.get_ref<const std::string&>();
      if (i == 0 && s.rfind("#version", 0) == 0) continue;
      size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) {
        detail::fail(at(), "expected \"left right\" (one space), got \"" + s + "\"");
      }
      merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
    } else {
      detail::fail(at(), "expected \"left right\" or [\"left\", \"right\"], got " + e.dump());
    }
  }
  return std::make_unique<BpeModel>(std::move(vocab), merges, std::move(o));
}

BpeModel::CachePtr BpeModel::new_cache() const { return CachePtr(new Cache()); }
void BpeModel::CacheDeleter::operator()(Cache* c) const { delete c; }

int32_t BpeModel::token_to_id(std::string_view token) const { return vocab_->find(token); }

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || id >= int32_t(tokens_.size()) || !present_[id]) return nullptr;
  return &tokens_[id];
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out, Cache* cache) const {
  if (word.empty()) return;
  const bool cacheable = cache && word.size() < kMaxCachedWordBytes;
  uint64_t h = 0;
  if (cacheable) {
    h = detail::hash_bytes(word);
    const int32_t* ids = nullptr;
    uint32_t n = 0;
    if (cache->words.find(word, h, &ids, &n)) {
      out.insert(out.end(), ids, ids + n);
      return;
    }
  }
  size_t start = out.size();
  int32_t whole = options_.ignore_merges ? vocab_->find(word) : -1;
  if (whole >= 0) {
    out.push_back(whole);
  } else if (cache) {
    merge_word(word, out, *cache);
  } else {
    Cache scratch;
    merge_word(word, out, scratch);
  }
  if (cacheable) cache->words.insert(word, h, out.data() + start, out.size() - start);
}

void BpeModel::merge_word(std::string_view w, std::vector<int32_t>& out, Cache& s) const {
  auto& symbols = s.symbols;
  symbols.clear();
  auto add = [&](int32_t id, uint32_t len) {
    int32_t pos = int32_t(symbols.size());
    symbols.push_back({id, pos - 1, -1, len});
    if (pos > 0) symbols[pos - 1].next = pos;
  };
  int32_t pending_unk_len = -1;  // an unk waiting to be emitted (or fused), with its byte length
  auto flush_unk = [&] {
    if (pending_unk_len >= 0) add(unk_id_, uint32_t(pending_unk_len));
    pending_unk_len = -1;
  };
  const bool decorated = char_ids_.empty();
  for (size_t i = 0; i < w.size();) {
    size_t start = i;
    uint32_t cp = next_code_point(w, i);
    uint32_t byte_len = uint32_t(i - start);
    int32_t id;
    std::string_view piece = w.substr(start, byte_len);
    if (!decorated && cp < 0x800) {
      id = char_ids_[cp];
    } else if (!decorated) {
      id = vocab_->find(piece);
    } else {
      s.buffer.clear();
      if (start != 0) s.buffer += options_.continuing_subword_prefix;
      s.buffer.append(piece);
      if (i == w.size()) s.buffer += options_.end_of_word_suffix;
      piece = s.buffer;
      id = vocab_->find(piece);
    }
    if (id >= 0) {
      flush_unk();
      add(id, byte_len);
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (unsigned char b : piece) all = all && byte_ids_[b] >= 0;
      if (all) {
        // As in tokenizers, a pending unk is not flushed before byte tokens.
        for (unsigned char b : piece) add(byte_ids_[b], 1);
        continue;
      }
    }
    if (unk_id_ >= 0) {
      if (pending_unk_len >= 0 && options_.fuse_unk) {
        pending_unk_len += int32_t(byte_len);
      } else {
        flush_unk();
        pending_unk_len = int32_t(byte_len);
      }
    }
    // No unk token: the character is dropped, as tokenizers does.
  }
  flush_unk();

  if (symbols.size() > 1 && symbols.size() <= kLinearMergeMax) {
    merge_linear(s, out);
    return;
  }
  if (symbols.size() > 1) {
    // Long words: a heap of candidate merges (lowest rank, then leftmost), stale entries skipped on pop.
    auto& heap = s.heap;
    heap.clear();
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      if (const auto* m = merges_->find(symbols[i].id, symbols[i + 1].id)) {
        heap.push_back({m->rank, int32_t(i), m->new_id});
      }
    }
    std::make_heap(heap.begin(), heap.end());
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end());
      QueuedMerge top = heap.back();
      heap.pop_back();
      Symbol& left = symbols[top.pos];
      if (left.len == 0 || left.next < 0) continue;
      Symbol right = symbols[left.next];
      // Skip entries made stale by earlier merges.
      const auto* m = merges_->find(left.id, right.id);
      if (!m || m->new_id != top.new_id) continue;
      left.id = top.new_id;
      left.len += right.len;
      symbols[left.next].len = 0;
      left.next = right.next;
      if (right.next >= 0) symbols[right.next].prev = top.pos;
      if (left.prev >= 0) {
        if (const auto* pm = merges_->find(symbols[left.prev].id, left.id)) {
          heap.push_back({pm->rank, left.prev, pm->new_id});
          std::push_heap(heap.begin(), heap.end());
        }
      }
      if (left.next >= 0) {
        if (const auto* nm = merges_->find(left.id, symbols[left.next].id)) {
          heap.push_back({nm->rank, top.pos, nm->new_id});
          std::push_heap(heap.begin(), heap.end());
        }
      }
    }
  }
  for (const Symbol& sym : symbols) {
    if (sym.len) out.push_back(sym.id);
  }
}

}  // namespace swift::tokenizer
