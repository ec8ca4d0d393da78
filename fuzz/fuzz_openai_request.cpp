// The OpenAI request parser of swift deploy (src/serve/openai_protocol.cpp) on any body, as chat and as
// completion: it must answer with ApiError, and a 4xx one: a body can be wrong, never a server error.
#include "fuzz_input.h"
#include "swift/serve/openai_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(swift::fuzz::as_text(data, size));
  swift::serve::ProtocolLimits limits;
  for (int chat = 0; chat < 2; ++chat) {
    try {
      if (chat) (void)swift::serve::parse_chat_request(body, limits);
      else (void)swift::serve::parse_completion_request(body, limits);
    } catch (const swift::serve::ApiError& e) {
      if (e.status < 400 || e.status >= 500) std::abort();
    }
  }
  return 0;
}
