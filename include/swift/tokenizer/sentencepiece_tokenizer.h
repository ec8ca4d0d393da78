// A SentencePiece tokenizer.model (older Llama 2 / Mistral checkpoints) behind the Tokenizer interface, through
// libsentencepiece. Added/special tokens (tokenizer_config.json's added_tokens_decoder, else the model's control
// symbols) are split off the text first, as transformers' slow tokenizers do; each remaining span is encoded by
// SentencePiece (which adds its dummy-prefix space to each span, transformers' legacy=True behaviour).
// add_special_tokens adds BOS unless add_bos_token is false, and EOS when add_eos_token is true.
#pragma once

#include <filesystem>
#include <memory>

#include "swift/tokenizer/tokenizer.h"

namespace swift::tokenizer {

// DataError naming the file when libsentencepiece cannot load it.
std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& model_file, TokenizerConfig config);

}  // namespace swift::tokenizer
