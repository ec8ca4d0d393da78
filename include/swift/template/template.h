// A chat template bound to a tokenizer: renders conversations to text and encodes them to token ids with the
// labels that say which tokens carry loss, following ms-swift's Template (swift/template/base.py) piece by piece.
//
//   auto tok = swift::tokenizer::Tokenizer::load(model_dir);
//   swift::templates::Template chat(swift::templates::find_template_meta("qwen3"), *tok);
//   Encoded e = chat.encode(conversation);              // SFT: input_ids + labels (-100 = no loss)
//   std::vector<int64_t> ids = chat.encode_prompt(conversation, /*enable_thinking=*/false);  // infer
//
// Like ms-swift, encode() tokenizes the template's pieces separately (system/user text, each reply, the
// separators) and concatenates the ids, so that label boundaries fall on token boundaries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "swift/template/message.h"
#include "swift/template/template_meta.h"

namespace swift::tokenizer {
class Tokenizer;
}

namespace swift::templates {

inline constexpr int64_t kIgnoreIndex = -100;

// The `tools` of a conversation, each as parse_tools returns it (agent_template.h).
using Tools = std::vector<nlohmann::ordered_json>;

// Which tokens carry loss (ms-swift's --loss_scale base strategies).
enum class LossRule {
  kDefault,    // "default": every assistant reply and the end-of-turn token after it
  kLastRound,  // "last_round": only the reply after the last user/tool turn (and its end-of-turn token)
  kAll,        // "all": every token (but the first)
};
// "default" | "last_round" | "all"; UsageError naming --loss_scale otherwise.
LossRule parse_loss_rule(std::string_view name);
std::string_view loss_rule_name(LossRule rule);

// --loss_scale as ms-swift spells it: a base rule, optionally joined with "+ignore_empty_think" ("ignore_empty_think"
// alone means "default+ignore_empty_think"). ms-swift's other loss-scale names (react, hermes, qwen, ...) are refused.
struct LossScale {
  LossRule rule = LossRule::kDefault;
  bool ignore_empty_think = false;
};
LossScale parse_loss_scale(std::string_view name);
std::string loss_scale_name(const LossScale& scale);

struct TemplateOptions {
  // --system: replaces the template's default system prompt; a system message in the data still wins, and an
  // empty system message means "no system prompt". Default: unset.
  std::optional<std::string> system;
  // --loss_scale. Default: kDefault.
  LossRule loss_rule = LossRule::kDefault;
  // --enable_thinking, the default for requests that do not say. Default: unset, which is ms-swift's default:
  // true for thinking-only templates (qwen3_thinking), false for hybrid ones (qwen3) and all others.
  std::optional<bool> enable_thinking;
  // --add_non_thinking_prefix: in training, open replies that lack "<think>" with the template's empty think
  // block (qwen3). Default: true.
  bool add_non_thinking_prefix = true;
  // --agent_template: how tools, tool calls and tool results are written. Default: unset, which is the template's
  // own (hermes for qwen*, llama3 for llama3*; none for the others, where tools are an error).
  std::optional<AgentTemplate> agent_template;
  // "+ignore_empty_think" in --loss_scale: in training, an empty think block opening a reply ("<think>\n\n</think>\n\n",
  // or a bare "</think>\n\n") carries no loss, as ms-swift's ignore_empty_think.json. Default: false; training turns
  // it on for hybrid thinking templates (qwen3) as ms-swift does, unless --disable_ignore_empty_think
  // (data::training_template).
  bool ignore_empty_think = false;
  // The "Today Date" of llama3_2's system header, e.g. "26 Jul 2024". Default: "" (today, as ms-swift).
  std::string date;
  // What a training row is (swift rlhf; ms-swift's template modes "rlhf" and "kto"): encode_row
  // (train/sft_data.h) also encodes each pair's rejected_messages, or each labelled reply's "label" and its KL
  // conversation (kl_messages); a row without them is an error. sft and pt train on the conversation alone.
  // Default: kConversation.
  // kPrompt: the conversation up to the reply the model is to write (GRPO's prompts), encoded for generation.
  enum class RowKind { kConversation, kPreferencePair, kLabelledReply, kPrompt };
  RowKind row_kind = RowKind::kConversation;
};

// One encoded conversation. input_ids: [T]; labels: [T], input_ids where the token carries loss, else -100.
struct Encoded {
  std::vector<int64_t> input_ids;
  std::vector<int64_t> labels;
  std::string text;  // the rendered text the ids encode
};

class Template {
 public:
  // Binds `meta` to `tokenizer`, which must outlive the Template. Never throws for a tokenizer that lacks the
  // template's tokens (a tokenizer is useful without a chat template); render/encode do.
  Template(TemplateMeta meta, const tokenizer::Tokenizer& tokenizer, TemplateOptions options = {});

  const TemplateMeta& meta() const { return meta_; }
  const TemplateOptions& options() const { return options_; }
  const std::string& name() const { return meta_.name; }
  // enable_thinking for requests that do not say (TemplateOptions::enable_thinking).
  bool default_enable_thinking() const;

  // The text of `messages` as an inference prompt, in the shape of Hugging Face's apply_chat_template(
  // tokenize=False): earlier replies lose their thinking (templates that think), a final assistant reply gets
  // its end-of-turn text, and add_generation_prompt opens the next assistant reply (with the empty think block
  // when thinking is off). UsageError when the vocabulary lacks the template's tokens; DataError for a
  // conversation the template cannot hold (a system message after the first, a tool turn after a user turn).
  std::string render(const Conversation& messages, bool add_generation_prompt = true,
                     std::optional<bool> enable_thinking = std::nullopt) const;

  // Training: input_ids and labels of the whole conversation under options().loss_rule, as ms-swift's
  // Template.encode in train mode (before truncation).
  Encoded encode(const Conversation& messages, const Tools* tools = nullptr) const;

  // Inference: the ids of a prompt, as ms-swift encodes it for generation (its engines' Template.encode). How it
  // ends is `end` (vLLM's add_generation_prompt / continue_final_message). DataError for kContinue when the last
  // message is not an assistant's.
  std::vector<int64_t> encode_prompt(const Conversation& messages, std::optional<bool> enable_thinking = std::nullopt,
                                     PromptEnd end = PromptEnd::kAuto, const Tools* tools = nullptr) const;

  // The agent template in force (--agent_template, else the template's own); nullopt when there is none.
  std::optional<AgentTemplate> agent_template() const;

  // Strings that end a generated reply (the suffix's last token, the template's stop words, the tokenizer's EOS),
  // and the ids of those that are single tokens in this vocabulary, e.g. <|im_end|>, <|endoftext|> for qwen.
  std::vector<std::string> stop_words() const;
  // A generated reply as ms-swift's decode_generate_ids gives it: GLM-4's loses its leading newlines when its prompt
  // ended at <|assistant|> (the model writes the newline first), not after a response prefix such as <think>; every
  // other template's is unchanged. `enable_thinking` as the prompt was encoded (unset: the template's default).
  std::string reply_text(std::string decoded, std::optional<bool> enable_thinking = std::nullopt) const;
  std::vector<int64_t> stop_token_ids() const;

  // The first of the template's tokens that the tokenizer lacks as a token of its own, if any.
  std::optional<std::string> missing_token() const;

 private:
  struct Context;
  enum class Mode { kTrain, kInfer, kRender };
  // continue_final (kInfer): the last reply stays open (no end of turn, no generation prompt).
  std::vector<Context> build(const Conversation& messages, Mode mode, bool add_generation_prompt,
                             bool enable_thinking, bool continue_final = false, const Tools* tools = nullptr) const;
  Encoded tokenize(std::vector<Context> contexts, bool with_labels) const;
  void check_tokens() const;
  std::string expand(const std::string& text, const std::string* system, const std::string* query) const;

  TemplateMeta meta_;
  const tokenizer::Tokenizer* tokenizer_;
  TemplateOptions options_;
  std::optional<std::string> missing_token_;
};

}  // namespace swift::templates
