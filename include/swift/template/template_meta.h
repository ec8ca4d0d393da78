// The built-in chat templates, described as ms-swift describes them (TemplateMeta): the text around each turn,
// the default system prompt, stop words, and which token strings must be in the vocabulary.
//
//   <prefix | system_prefix with {{SYSTEM}}>
//   <prompt with {{QUERY}}><generation_prompt><reply> <chat_sep>
//   <prompt with {{QUERY}}><generation_prompt><reply> <suffix>
//
// ms-swift's `prompt` is our prompt + generation_prompt; it is split so that a conversation ending in a user turn
// can be rendered without the assistant header (add_generation_prompt=false).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace swift::templates {

// One part of a template: literal text (which may contain {{SYSTEM}}, {{QUERY}} and {{DATE}}), or the
// tokenizer's own BOS/EOS token, whatever it is called (ms-swift's [['bos_token_id']] / [['eos_token_id']]).
struct Piece {
  enum class Kind { kText, kBos, kEos };
  Kind kind = Kind::kText;
  std::string text;  // kText only

  Piece(const char* s) : text(s) {}  // NOLINT: templates are written as lists of string literals
  Piece(std::string s) : text(std::move(s)) {}  // NOLINT
  static Piece bos() { return Piece(Kind::kBos); }
  static Piece eos() { return Piece(Kind::kEos); }

 private:
  explicit Piece(Kind kind) : kind(kind) {}
};
using Prompt = std::vector<Piece>;

// How a turn of tool results is written (ms-swift's agent template, for plain-text tool results).
enum class ToolFormat {
  kPlain,   // like a user turn, results joined by "\n"
  kHermes,  // a user turn of "<tool_response>\n...\n</tool_response>" blocks joined by "\n" (Qwen)
  kLlama3,  // one "<|start_header_id|>tool<|end_header_id|>\n\n...<|eot_id|>" block per result
  kReact,   // ReAct (react_en): inside the reply's own turn, after its "Observation:"
  kGlm4,    // GLM-4: after the calls' <|observation|>, "\n" + results joined by "<|observation|>\n" + "<|assistant|>\n"
};

struct TemplateMeta {
  std::string name;
  std::string description;    // one line for docs and --help
  Prompt prefix;              // start of a conversation without a system prompt
  Prompt system_prefix;       // start of one with a system prompt ({{SYSTEM}}); empty: system prompts are dropped
  Prompt prompt;              // a user turn ({{QUERY}})
  Prompt generation_prompt;   // opens the assistant's reply
  Prompt chat_sep;            // after a reply that is followed by another turn
  Prompt suffix;              // after the last reply (training)
  bool multi_round = true;    // false: only the last user turn and reply are rendered (plain text)
  std::optional<std::string> default_system;  // used when neither the data nor --system gives one
  // Start with the BOS (and end with the EOS) that the tokenizer's post-processor would add (ms-swift's
  // auto_add_bos): <s> for Llama 2/Mistral tokenizers, nothing for Qwen's.
  bool auto_add_bos = false;
  std::vector<std::string> stop_words;       // besides the suffix's last token and the tokenizer's EOS
  std::vector<std::string> required_tokens;  // token strings the vocabulary must have for this template
  ToolFormat tool_format = ToolFormat::kPlain;
  // Thinking (Qwen3): a hybrid template opens a non-thinking reply with non_thinking_prefix; a thinking-only
  // one opens every reply with thinking_prefix.
  bool is_thinking = false;
  std::string thinking_prefix;
  std::string non_thinking_prefix;
  // Gemma 3 (ms-swift's Gemma3Template): no system turn; a system prompt opens the first message, "\n\n" after it.
  bool system_in_first_message = false;
  // Gemma 3: each reply's leading and trailing newlines are dropped.
  bool strip_reply_newlines = false;
  // GLM-4 (ms-swift's GLM4Template.strip_newline): a prompt left open for generation ends at the generation prompt
  // without its last "\n" (the model writes it), and generated replies lose their leading newlines.
  bool open_prompt_drops_newline = false;
};

// Names of the built-in templates, sorted: chatml, default, llama, llama3, llama3_2, mistral, qwen, qwen2_5, ...
const std::vector<std::string>& template_names();
// "chatml, default, llama, ..." for messages.
std::string template_names_joined();
// The built-in template `name`; UsageError listing the available ones when there is none.
const TemplateMeta& find_template_meta(std::string_view name);

// ms-swift's generation template (--use_chat_template false): BOS + the text, EOS after a training reply.
TemplateMeta plain_text_template_meta();

}  // namespace swift::templates
