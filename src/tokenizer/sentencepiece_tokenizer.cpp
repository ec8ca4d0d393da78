// SentencePiece tokenizer.model through libsentencepiece (see sentencepiece_tokenizer.h).
#include "swift/tokenizer/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include <algorithm>

#include "swift/core/error.h"
#include "swift/tokenizer/added_tokens.h"

namespace swift::tokenizer {
namespace {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  SentencePieceTokenizer(const std::filesystem::path& file, TokenizerConfig config)
      : Tokenizer(std::move(config)) {
    auto status = sp_.Load(file.string());
    SWIFT_CHECK(status.ok(), DataError,
                "cannot load SentencePiece model " + file.string() + ": " + status.ToString(),
                "the file may be truncated or not a SentencePiece model; re-download tokenizer.model");
    pieces_ = sp_.GetPieceSize();
    std::vector<AddedToken> added = config_.added_tokens_decoder;
    if (added.empty()) {
      // No tokenizer_config.json: the model's control symbols (<s>, </s>) and <unk> are the special tokens.
      for (int id = 0; id < pieces_; ++id) {
        if (sp_.IsControl(id) || sp_.IsUnknown(id)) {
          AddedToken t;
          t.id = id;
          t.content = sp_.IdToPiece(id);
          t.special = true;
          t.normalized = false;
          added.push_back(std::move(t));
        }
      }
    }
    for (AddedToken& t : added) t.normalized = false;  // matched in the raw text
    added_.set(std::move(added), nullptr);
    vocab_size_ = pieces_;
    for (const AddedToken& t : added_.tokens()) vocab_size_ = std::max<int64_t>(vocab_size_, t.id + 1);
    if (config_.add_bos_token.value_or(true)) bos_ = special_id(config_.bos_token, sp_.bos_id());
    if (config_.add_eos_token.value_or(false)) eos_ = special_id(config_.eos_token, sp_.eos_id());
  }

  std::vector<int64_t> encode(std::string_view text, bool add_special_tokens) const override {
    std::vector<int64_t> out;
    if (add_special_tokens && bos_ >= 0) out.push_back(bos_);
    std::vector<AddedMatch> matches;
    added_.find(text, false, matches);
    size_t last = 0;
    std::vector<int> ids;
    auto encode_span = [&](size_t b, size_t e) {
      if (b >= e) return;
      ids.clear();
      auto status = sp_.Encode(text.substr(b, e - b), &ids);
      SWIFT_CHECK(status.ok(), DataError, "SentencePiece encode failed: " + status.ToString(),
                  "the input text may be invalid UTF-8");
      out.insert(out.end(), ids.begin(), ids.end());
    };
    for (const AddedMatch& m : matches) {
      encode_span(last, m.span.first);
      out.push_back(m.id);
      last = m.span.second;
    }
    encode_span(last, text.size());
    if (add_special_tokens && eos_ >= 0) out.push_back(eos_);
    return out;
  }

  std::string decode(const int64_t* ids, size_t n, bool skip_special_tokens) const override {
    std::string out;
    std::vector<int> run;
    auto flush = [&] {
      if (run.empty()) return;
      std::string text;
      sp_.Decode(run, &text);
      out += text;
      run.clear();
    };
    for (size_t i = 0; i < n; ++i) {
      int64_t id = ids[i];
      if (id < 0 || id >= vocab_size_) continue;
      if (const AddedToken* t = added_.token(int32_t(id))) {
        flush();
        if (!(skip_special_tokens && t->special)) out += t->content;
        continue;
      }
      if (id >= pieces_) continue;
      if (sp_.IsControl(int(id))) {
        flush();
        if (!skip_special_tokens) out += sp_.IdToPiece(int(id));
        continue;
      }
      run.push_back(int(id));
    }
    flush();
    return out;
  }
  using Tokenizer::decode;

  std::optional<int64_t> token_to_id(std::string_view token) const override {
    int32_t added = added_.token_to_id(token);
    if (added >= 0) return added;
    int id = sp_.PieceToId(std::string(token));
    if (sp_.IsUnknown(id) && sp_.IdToPiece(id) != token) return std::nullopt;
    return id;
  }

  std::string id_to_token(int64_t id) const override {
    if (id < 0 || id >= vocab_size_) return {};
    if (const AddedToken* t = added_.token(int32_t(id))) return t->content;
    return id < pieces_ ? sp_.IdToPiece(int(id)) : std::string();
  }

  int64_t vocab_size() const override { return vocab_size_; }

  bool decode_depends_on_next(int64_t id) const override {
    return id >= 0 && id < pieces_ && sp_.IsByte(int(id));
  }

  bool is_special(int64_t id) const override {
    if (id < 0 || id >= vocab_size_) return false;
    if (added_.is_special(int32_t(id))) return true;
    return id < pieces_ && sp_.IsControl(int(id));
  }

 private:
  int64_t special_id(const std::optional<std::string>& token, int fallback) const {
    if (token) {
      auto id = token_to_id(*token);
      if (id) return *id;
    }
    return fallback;
  }

  sentencepiece::SentencePieceProcessor sp_;
  int pieces_ = 0;
  AddedVocabulary added_;
  int64_t vocab_size_ = 0;
  int64_t bos_ = -1, eos_ = -1;
};

}  // namespace

std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& model_file, TokenizerConfig config) {
  return std::make_unique<SentencePieceTokenizer>(model_file, std::move(config));
}

}  // namespace swift::tokenizer
