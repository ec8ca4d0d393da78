// tokenizer_config.json (src/tokenizer/tokenizer_config.cpp) on any text.
#include "fuzz_input.h"
#include "swift/core/error.h"
#include "swift/tokenizer/tokenizer_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)swift::tokenizer::parse_tokenizer_config(swift::fuzz::as_text(data, size), "fuzz");
  } catch (const swift::UserError&) {
  }
  return 0;
}
