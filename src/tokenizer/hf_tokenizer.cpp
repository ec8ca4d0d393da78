// tokenizer.json pipeline (Hugging Face tokenizers' TokenizerImpl::encode / decode for single sequences).
#include "swift/tokenizer/hf_tokenizer.h"

#include <algorithm>

#include "json_util.h"
#include "swift/tokenizer/regex.h"
#include "swift/tokenizer/unicode.h"

namespace swift::tokenizer {

using detail::json;

namespace {
constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // U+2581, SentencePiece's space
}  // namespace

struct HfTokenizer::Scratch {
  BpeModel::CachePtr cache;
  std::vector<Piece> pieces;
  std::vector<AddedMatch> matches, normalized_matches;
  std::vector<int32_t> ids;
  std::vector<Span> spans;
  std::string buffer, prefixed;
};

// Borrows a Scratch from the pool for one call and gives it back.
class HfTokenizer::Lease {
 public:
  explicit Lease(const HfTokenizer& t) : t_(t) {
    {
      std::lock_guard<std::mutex> lock(t_.pool_mutex_);
      if (!t_.pool_.empty()) {
        s_ = std::move(t_.pool_.back());
        t_.pool_.pop_back();
      }
    }
    if (!s_) {
      s_ = std::make_unique<Scratch>();
      s_->cache = t_.model_->new_cache();
    }
  }
  ~Lease() {
    std::lock_guard<std::mutex> lock(t_.pool_mutex_);
    t_.pool_.push_back(std::move(s_));
  }
  Scratch& get() { return *s_; }

 private:
  const HfTokenizer& t_;
  std::unique_ptr<Scratch> s_;
};

HfTokenizer::~HfTokenizer() = default;

HfTokenizer::HfTokenizer(const json& j, TokenizerConfig config) : Tokenizer(std::move(config)) {
  detail::expect_object(j, "");
  if (j.contains("version") && j["version"].is_string() && j["version"].get<std::string>() != "1.0") {
    detail::fail("version", "unknown tokenizer.json version '" + j["version"].get<std::string>() + "'",
                 "swift reads version 1.0, written by tokenizers >= 0.9");
  }
  model_ = BpeModel::from_json(detail::required(j, "model", ""), "model");
  auto field = [&](const char* key) -> const json& {
    static const json null_json;
    auto it = j.find(key);
    return it == j.end() ? null_json : *it;
  };
  normalizer_ = Normalizer::from_json(field("normalizer"), "normalizer");
  pre_tokenizer_ = PreTokenizer::from_json(field("pre_tokenizer"), "pre_tokenizer");
  post_processor_ = PostProcessor::from_json(field("post_processor"), "post_processor");
  decoder_ = Decoder::from_json(field("decoder"), "decoder");

  std::vector<AddedToken> added;
  const json& list = field("added_tokens");
  if (!list.is_null() && !list.is_array()) detail::fail("added_tokens", "expected a list, got " + detail::json_kind(list));
  for (size_t i = 0; !list.is_null() && i < list.size(); ++i) {
    std::string at = "added_tokens[" + std::to_string(i) + "]";
    const json& e = list[i];
    AddedToken t;
    t.content = detail::get_string(e, "content", at);
    t.special = detail::get_bool(e, "special", false, at);
    t.lstrip = detail::get_bool(e, "lstrip", false, at);
    t.rstrip = detail::get_bool(e, "rstrip", false, at);
    t.normalized = detail::get_bool(e, "normalized", !t.special, at);
    t.single_word = detail::get_bool(e, "single_word", false, at);
    // As tokenizers: a token the model already has keeps the model's id.
    int32_t model_id = model_->token_to_id(t.content);
    t.id = model_id >= 0 ? model_id : detail::token_id(detail::required(e, "id", at), at + ".id");
    has_normalized_added_ = has_normalized_added_ || t.normalized;
    added.push_back(std::move(t));
  }
  added_.set(std::move(added), normalizer_.get());

  // SentencePiece-style tokenizer.json (Mistral, Llama 2: no pre-tokenizer, or Metaspace without split) runs BPE
  // on the whole text. When no token has "▁" after another character, no merge can cross the start of a "▁..."
  // word, so cutting the text there gives identical ids, and short pieces the word cache can serve.
  const BpeOptions& o = model_->options();
  if (!o.ignore_merges && o.continuing_subword_prefix.empty() && o.end_of_word_suffix.empty() &&
      model_->token_to_id(kMetaspace) >= 0) {
    bool crossing = false;
    for (int32_t id = 0; id < model_->size() && !crossing; ++id) {
      const std::string* t = model_->id_to_token(id);
      if (!t) continue;
      for (size_t p = t->find(kMetaspace, 1); p != std::string::npos && !crossing; p = t->find(kMetaspace, p + 1)) {
        crossing = p < kMetaspace.size() || t->compare(p - kMetaspace.size(), kMetaspace.size(), kMetaspace) != 0;
      }
    }
    split_words_ = !crossing;
  }

  if (pre_tokenizer_ && !pre_tokenizer_->regex_byte_level_plan(&plan_)) plan_ = RegexByteLevelPlan{};

  vocab_size_ = model_->size();
  for (const AddedToken& t : added_.tokens()) vocab_size_ = std::max(vocab_size_, t.id + 1);

  if (config_.add_bos_token || config_.add_eos_token) {
    auto id = [&](const std::optional<std::string>& tok, bool on) -> int32_t {
      if (!on || !tok) return -1;
      auto v = token_to_id(*tok);
      return v ? int32_t(*v) : -1;
    };
    post_processor_ = PostProcessor::bos_eos(id(config_.bos_token, config_.add_bos_token.value_or(false)),
                                             id(config_.eos_token, config_.add_eos_token.value_or(false)));
  }
}

// Cuts pieces before each "▁" that follows another character (see the constructor for why this is exact).
void HfTokenizer::split_metaspace_words(std::vector<Piece>& pieces) const {
  std::vector<Piece> out;
  out.reserve(pieces.size() * 8);
  for (Piece& p : pieces) {
    if (p.id >= 0) {
      out.push_back(std::move(p));
      continue;
    }
    const std::string& t = p.text;
    size_t start = 0;
    for (size_t pos = t.find(kMetaspace, 1); pos != std::string::npos; pos = t.find(kMetaspace, pos + 1)) {
      bool after_metaspace = pos >= kMetaspace.size() &&
                             t.compare(pos - kMetaspace.size(), kMetaspace.size(), kMetaspace) == 0;
      if (after_metaspace) continue;
      Piece w;
      w.text = t.substr(start, pos - start);
      out.push_back(std::move(w));
      start = pos;
    }
    if (start == 0) {
      out.push_back(std::move(p));
    } else {
      Piece w;
      w.text = t.substr(start);
      out.push_back(std::move(w));
    }
  }
  pieces.swap(out);
}

// The RegexByteLevelPlan path: each regex segment is byte-mapped into one buffer and encoded, no pieces built.
void HfTokenizer::encode_streaming(Scratch& s) const {
  for (const Piece& p : s.pieces) {
    if (p.id >= 0) {
      s.ids.push_back(p.id);
      continue;
    }
    std::string_view text = p.text;
    if (plan_.add_prefix_space && text[0] != ' ') {
      s.prefixed.assign(1, ' ');
      s.prefixed += text;
      text = s.prefixed;
    }
    s.spans.clear();
    plan_.split->find_all(text, s.spans);
    auto encode_segment = [&](size_t begin, size_t end) {
      if (begin >= end) return;
      s.buffer.clear();
      byte_level_map(text.substr(begin, end - begin), s.buffer);
      model_->tokenize(s.buffer, s.ids, s.cache.get());
    };
    size_t prev = 0;
    for (const Span& m : s.spans) {
      encode_segment(prev, m.first);
      encode_segment(m.first, m.second);
      prev = m.second;
    }
    encode_segment(prev, text.size());
  }
}

void HfTokenizer::encode_into(std::string_view text, Scratch& s) const {
  auto& pieces = s.pieces;
  pieces.clear();
  auto add_free = [&](size_t begin, size_t end) {
    NormalizedText nt;
    nt.text.assign(text.substr(begin, end - begin));
    nt.origin_len = begin == 0 ? uint32_t(utf8_len(static_cast<unsigned char>(text[0]))) : 0;
    if (normalizer_) normalizer_->normalize(nt);
    if (nt.text.empty()) return;
    if (has_normalized_added_) {
      added_.find(nt.text, true, s.normalized_matches);
      size_t last = 0;
      auto push_text = [&](size_t b, size_t e) {
        if (b >= e) return;
        Piece p;
        p.text = nt.text.substr(b, e - b);
        p.origin_len = nt.origin_len > b ? uint32_t(std::min(nt.origin_len - b, e - b)) : 0;
        pieces.push_back(std::move(p));
      };
      for (const AddedMatch& m : s.normalized_matches) {
        push_text(last, m.span.first);
        Piece p;
        p.id = m.id;
        pieces.push_back(std::move(p));
        last = m.span.second;
      }
      push_text(last, nt.text.size());
      return;
    }
    Piece p;
    p.text = std::move(nt.text);
    p.origin_len = nt.origin_len;
    pieces.push_back(std::move(p));
  };

  added_.find(text, false, s.matches);
  size_t last = 0;
  for (const AddedMatch& m : s.matches) {
    if (last < m.span.first) add_free(last, m.span.first);
    Piece p;
    p.id = m.id;
    pieces.push_back(std::move(p));
    last = m.span.second;
  }
  if (last < text.size()) add_free(last, text.size());

  if (plan_.split) {
    encode_streaming(s);
    return;
  }
  if (pre_tokenizer_) pre_tokenizer_->pre_tokenize(pieces);
  if (split_words_) split_metaspace_words(pieces);
  for (const Piece& p : pieces) {
    if (p.id >= 0) {
      s.ids.push_back(p.id);
    } else {
      model_->tokenize(p.text, s.ids, s.cache.get());
    }
  }
}

std::vector<int64_t> HfTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::string repaired;
  if (!is_valid_utf8(text)) {
    repaired = utf8_lossy(text);
    text = repaired;
  }
  Lease lease(*this);
  Scratch& s = lease.get();
  s.ids.clear();
  encode_into(text, s);
  if (post_processor_) post_processor_->process(s.ids, add_special_tokens);
  return std::vector<int64_t>(s.ids.begin(), s.ids.end());
}

std::string HfTokenizer::decode(const int64_t* ids, size_t n, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] > INT32_MAX) continue;
    int32_t id = int32_t(ids[i]);
    const std::string* t = added_.decode_text(id);
    if (t) {
      if (skip_special_tokens && added_.is_special(id)) continue;
    } else {
      t = model_->id_to_token(id);
      if (!t) continue;  // unknown ids are skipped, as tokenizers does
      if (skip_special_tokens && added_.is_special(added_.token_to_id(*t))) continue;
    }
    tokens.push_back(*t);
  }
  if (decoder_) return decoder_->decode(std::move(tokens));
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i) out.push_back(' ');
    out += tokens[i];
  }
  return out;
}

std::optional<int64_t> HfTokenizer::token_to_id(std::string_view token) const {
  int32_t id = added_.token_to_id(token);
  if (id < 0) id = model_->token_to_id(token);
  if (id < 0) return std::nullopt;
  return id;
}

std::string HfTokenizer::id_to_token(int64_t id) const {
  if (id < 0 || id > INT32_MAX) return {};
  if (const std::string* t = added_.decode_text(int32_t(id))) return *t;
  if (const std::string* t = model_->id_to_token(int32_t(id))) return *t;
  return {};
}

int64_t HfTokenizer::vocab_size() const { return vocab_size_; }

bool HfTokenizer::decode_depends_on_next(int64_t id) const {
  if (!decoder_ || !decoder_->joins_byte_tokens() || id < 0 || id > INT32_MAX) return false;
  const std::string* t = added_.decode_text(int32_t(id));
  if (!t) t = model_->id_to_token(int32_t(id));
  unsigned char byte;
  return t && parse_byte_token(*t, &byte);
}

bool HfTokenizer::is_special(int64_t id) const {
  return id >= 0 && id <= INT32_MAX && added_.is_special(int32_t(id));
}

}  // namespace swift::tokenizer
