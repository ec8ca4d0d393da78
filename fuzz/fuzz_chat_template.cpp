// The chat-template renderer (src/template/) on any conversation: the input's first byte picks one of the
// built-in templates and its second one of the vendored tokenizers (tests/assets/tokenizers: Qwen3, Llama 3,
// Mistral); the rest is a `messages` JSON array, read as a dataset row would be, then rendered for inference,
// encoded for training under each loss rule and encoded as a prompt.
#include "fuzz_input.h"
#include "swift/core/error.h"
#include "swift/template/message.h"
#include "swift/template/template.h"
#include "swift/template/template_meta.h"
#include "swift/tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <vector>

namespace {

const std::vector<std::unique_ptr<swift::tokenizer::Tokenizer>>& tokenizers() {
  static const auto loaded = [] {
    std::vector<std::unique_ptr<swift::tokenizer::Tokenizer>> t;
    for (const char* name : {"qwen3", "llama3", "mistral7b"})
      t.push_back(swift::tokenizer::Tokenizer::load(std::filesystem::path(SWIFT_TOKENIZER_ASSETS) / name));
    return t;
  }();
  return loaded;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const auto& names = swift::templates::template_names();
  const auto& meta = swift::templates::find_template_meta(names[data[0] % names.size()]);
  const auto& tokenizer = *tokenizers()[data[1] % tokenizers().size()];
  const auto json = nlohmann::json::parse(data + 2, data + size, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;  // JSON syntax is nlohmann's; the harness is after what comes next
  try {
    const auto conversation = swift::templates::conversation_from_json(json);
    for (const auto rule : {swift::templates::LossRule::kDefault, swift::templates::LossRule::kLastRound,
                            swift::templates::LossRule::kAll}) {
      swift::templates::TemplateOptions options;
      options.loss_rule = rule;
      options.date = "26 Jul 2024";
      const swift::templates::Template chat(meta, tokenizer, options);
      try {
        (void)chat.render(conversation, data[0] & 0x80, (data[1] & 0x80) != 0);
        const auto encoded = chat.encode(conversation);
        if (encoded.input_ids.size() != encoded.labels.size()) std::abort();
      } catch (const swift::UserError&) {
      }
      try {
        (void)chat.encode_prompt(conversation);
      } catch (const swift::UserError&) {
      }
    }
  } catch (const swift::UserError&) {
  }
  return 0;
}
