// The tokenizer.json pipeline, as Hugging Face tokenizers runs it: added tokens split off the raw text,
// normalizer, normalized added tokens, pre-tokenizer, BPE model (per piece, through a word cache),
// post-processor; decode maps ids to token strings and runs the decoder.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "swift/tokenizer/added_tokens.h"
#include "swift/tokenizer/bpe_model.h"
#include "swift/tokenizer/decoder.h"
#include "swift/tokenizer/normalizer.h"
#include "swift/tokenizer/post_processor.h"
#include "swift/tokenizer/pre_tokenizer.h"
#include "swift/tokenizer/tokenizer.h"

namespace swift::tokenizer {

class HfTokenizer final : public Tokenizer {
 public:
  // From a parsed tokenizer.json; errors name JSON paths (the caller adds the file name). The config's
  // add_bos_token / add_eos_token, when set, decide what add_special_tokens adds (as LlamaTokenizerFast);
  // otherwise tokenizer.json's post-processor does.
  HfTokenizer(const nlohmann::json& tokenizer_json, TokenizerConfig config);
  ~HfTokenizer() override;

  std::vector<int64_t> encode(std::string_view text, bool add_special_tokens = false) const override;
  std::string decode(const int64_t* ids, size_t n, bool skip_special_tokens = false) const override;
  using Tokenizer::decode;
  std::optional<int64_t> token_to_id(std::string_view token) const override;
  std::string id_to_token(int64_t id) const override;
  int64_t vocab_size() const override;
  bool is_special(int64_t id) const override;
  bool decode_depends_on_next(int64_t id) const override;

  const BpeModel& model() const { return *model_; }
  const AddedVocabulary& added_tokens() const { return added_; }

 private:
  struct Scratch;
  class Lease;
  void encode_into(std::string_view text, Scratch& s) const;
  void split_metaspace_words(std::vector<Piece>& pieces) const;
  void encode_streaming(Scratch& s) const;

  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  AddedVocabulary added_;
  bool has_normalized_added_ = false;
  bool split_words_ = false;
  RegexByteLevelPlan plan_;   // set when the pre-tokenizer can be streamed  // cut SentencePiece-style text into "▁word" pieces before BPE
  int64_t vocab_size_ = 0;

  // Per-thread scratch (word cache, buffers), handed out to concurrent encode() calls.
  mutable std::mutex pool_mutex_;
  mutable std::vector<std::unique_ptr<Scratch>> pool_;
};

}  // namespace swift::tokenizer
