// tokenizer.json (src/tokenizer/hf_tokenizer.cpp and the models, normalizers, pre-tokenizers, post-processors
// and decoders it builds) on any text; a tokenizer that loads then encodes and decodes a fixed text.
#include "fuzz_input.h"
#include "swift/core/error.h"
#include "swift/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto tokenizer = swift::tokenizer::Tokenizer::from_json(swift::fuzz::as_text(data, size), {}, "fuzz");
    for (const bool special : {false, true}) {
      const auto ids = tokenizer->encode("Hello, wörld! 12345 \t\n  <|im_end|> 你好 \xF0\x9F\x98\x80 \xFF", special);
      (void)tokenizer->decode(ids, !special);
    }
    for (int64_t id = -1; id < 8; ++id) (void)tokenizer->id_to_token(id);
  } catch (const swift::UserError&) {
  }
  return 0;
}
