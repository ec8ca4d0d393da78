// Post-processors of tokenizer.json ("post_processor"): TemplateProcessing (e.g. "<s> $A" for Mistral and
// Llama 3.1), ByteLevel (offsets only: no change to ids), BertProcessing, RobertaProcessing and Sequence. They add
// the special tokens of encode(text, add_special_tokens=true); single sequences only.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace swift::tokenizer {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Rewrites the ids of one encoded sequence; only when add_special_tokens is true does anything change.
  virtual void process(std::vector<int32_t>& ids, bool add_special_tokens) const = 0;

  // null gives nullptr; DataError for unknown types or bad fields, naming `where`.
  static std::unique_ptr<PostProcessor> from_json(const nlohmann::json& j,
                                                  const std::string& where = "post_processor");
  // The processor that adds BOS and/or EOS around the sequence (tokenizer_config add_bos_token/add_eos_token).
  static std::unique_ptr<PostProcessor> bos_eos(int32_t bos_id, int32_t eos_id);  // -1: none
};

}  // namespace swift::tokenizer
