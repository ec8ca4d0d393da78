// Streaming detokenization, Hugging Face's DecodeStream algorithm (tokenizers/src/tokenizer/mod.rs,
// step_decode_stream) plus flush().
#include "swift/tokenizer/tokenizer.h"
#include "swift/tokenizer/unicode.h"

namespace swift::tokenizer {
namespace {
bool ends_with_replacement(const std::string& s) {
  return s.size() >= kReplacementUtf8.size() &&
         s.compare(s.size() - kReplacementUtf8.size(), kReplacementUtf8.size(), kReplacementUtf8) == 0;
}
}  // namespace

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_tokens_(skip_special_tokens) {}

std::string StreamDecoder::push(int64_t id) {
  // A byte-fallback token decodes together with the byte tokens after it: wait for the run to end. Ids that
  // decode to nothing (unknown, or skipped special tokens) do not end a run: decode() joins across them.
  const bool was_in_byte_run = in_byte_run_;
  bool contributes = !tokenizer_.id_to_token(id).empty() && !(skip_special_tokens_ && tokenizer_.is_special(id));
  if (contributes) in_byte_run_ = tokenizer_.decode_depends_on_next(id);
  if (prefix_.empty() && !ids_.empty() && !was_in_byte_run) {
    // The pending ids decoded to nothing so far (e.g. a skipped special token): take them whole as context once
    // they decode to complete characters.
    std::string p = tokenizer_.decode(ids_, skip_special_tokens_);
    if (!ends_with_replacement(p)) {
      prefix_ = std::move(p);
      prefix_index_ = ids_.size();
    }
  }
  ids_.push_back(id);
  if (in_byte_run_) return {};
  std::string text = tokenizer_.decode(ids_, skip_special_tokens_);
  if (text.size() <= prefix_.size() || ends_with_replacement(text)) return {};
  std::string piece;
  if (text.compare(0, prefix_.size(), prefix_) == 0) {
    piece = text.substr(prefix_.size());
  } else {
    // The context decodes differently with the new ids (not seen with the supported decoders): emit the new ids
    // decoded on their own rather than fail mid-generation.
    std::vector<int64_t> fresh(ids_.begin() + long(prefix_index_), ids_.end());
    piece = tokenizer_.decode(fresh, skip_special_tokens_);
  }
  ids_.erase(ids_.begin(), ids_.begin() + long(prefix_index_));
  prefix_ = tokenizer_.decode(ids_, skip_special_tokens_);
  prefix_index_ = ids_.size();
  return piece;
}

std::string StreamDecoder::flush() {
  std::string piece;
  if (prefix_index_ < ids_.size()) {
    std::string text = tokenizer_.decode(ids_, skip_special_tokens_);
    if (text.compare(0, prefix_.size(), prefix_) == 0) {
      piece = text.substr(prefix_.size());
    } else {
      std::vector<int64_t> fresh(ids_.begin() + long(prefix_index_), ids_.end());
      piece = tokenizer_.decode(fresh, skip_special_tokens_);
    }
  }
  reset();
  return piece;
}

void StreamDecoder::reset() {
  ids_.clear();
  prefix_.clear();
  prefix_index_ = 0;
  in_byte_run_ = false;
}

}  // namespace swift::tokenizer
