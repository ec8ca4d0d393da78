// The built-in templates. The text is ms-swift's (swift/template/templates/{utils,qwen,llama,llm,gemma,deepseek,
// microsoft,glm,internlm}.py, ms-swift 4.6), cross-checked with the models' own Jinja chat templates; `mistral` is
// Mistral-7B-Instruct's [INST] format, which ms-swift serves with its `llama` template instead (see docs/templates.md).
#include "swift/template/template_meta.h"

#include <algorithm>
#include <map>

#include "swift/core/error.h"

namespace swift::templates {

namespace {

const char* const kDefaultSystem = "You are a helpful assistant.";

// https://github.com/facebookresearch/llama/blob/main/llama/generation.py, as ms-swift's `llama` template.
const char* const kLlama2DefaultSystem =
    "You are a helpful, respectful and honest assistant. Always answer as helpfully as possible, while being safe. "
    "Your answers should not include any harmful, unethical, racist, sexist, toxic, dangerous, or illegal content. "
    "Please ensure that your responses are socially unbiased and positive in nature.\n\n"
    "If a question does not make any sense, or is not factually coherent, explain why instead of answering "
    "something not correct. If you don't know the answer to a question, please don't share false information.";

TemplateMeta chatml() {
  TemplateMeta m;
  m.name = "chatml";
  m.description = "ChatML (<|im_start|>role ... <|im_end|>), no default system prompt";
  m.prompt = {"<|im_start|>user\n{{QUERY}}<|im_end|>\n"};
  m.generation_prompt = {"<|im_start|>assistant\n"};
  m.chat_sep = {"<|im_end|>\n"};
  m.suffix = {"<|im_end|>\n"};
  m.system_prefix = {"<|im_start|>system\n{{SYSTEM}}<|im_end|>\n"};
  m.auto_add_bos = true;
  m.required_tokens = {"<|im_start|>", "<|im_end|>"};
  return m;  // no agent template of its own (ms-swift's ChatmlTemplateMeta): --agent_template for tools
}

// InternLM2 / 2.5 / 3: ChatML after the tokenizer's <s>, with InternLM's default system prompt.
TemplateMeta internlm2() {
  TemplateMeta m = chatml();
  m.name = "internlm2";
  m.description = "InternLM2 / InternLM2.5 / InternLM3 (ChatML after <s>) with InternLM's default system prompt";
  m.default_system =
      "You are an AI assistant whose name is InternLM (书生·浦语).\n"
      "- InternLM (书生·浦语) is a conversational language model that is developed by Shanghai AI Laboratory "
      "(上海人工智能实验室). It is designed to be helpful, honest, and harmless.\n"
      "- InternLM (书生·浦语) can understand and communicate fluently in the language chosen by the user such as "
      "English and 中文.";
  return m;
}

TemplateMeta qwen(std::string name, std::optional<std::string> default_system, std::string description) {
  TemplateMeta m = chatml();
  m.name = std::move(name);
  m.description = std::move(description);
  m.default_system = std::move(default_system);
  m.auto_add_bos = false;
  m.stop_words = {"<|endoftext|>"};
  m.tool_format = ToolFormat::kHermes;  // ms-swift's QwenTemplateMeta: agent_template hermes
  return m;
}

TemplateMeta llama3() {
  TemplateMeta m;
  m.name = "llama3";
  m.description = "Llama 3 / 3.1 headers (<|start_header_id|>role<|end_header_id|>), no default system prompt";
  m.prefix = {"<|begin_of_text|>"};
  m.system_prefix = {"<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n{{SYSTEM}}<|eot_id|>"};
  m.prompt = {"<|start_header_id|>user<|end_header_id|>\n\n{{QUERY}}<|eot_id|>"};
  m.generation_prompt = {"<|start_header_id|>assistant<|end_header_id|>\n\n"};
  m.chat_sep = {"<|eot_id|>"};
  m.suffix = {"<|eot_id|>"};
  m.required_tokens = {"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
  m.tool_format = ToolFormat::kLlama3;
  return m;
}

TemplateMeta llama3_2() {
  TemplateMeta m = llama3();
  m.name = "llama3_2";
  m.description = "Llama 3.2: llama3 with a dated system header that is always present";
  // ms-swift's prefix holds {{SYSTEM}}, so it is the system_prefix too and the prefix is it without the system.
  m.system_prefix = {
      "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
      "Cutting Knowledge Date: December 2023\nToday Date: {{DATE}}\n\n{{SYSTEM}}<|eot_id|>"};
  m.prefix = {
      "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
      "Cutting Knowledge Date: December 2023\nToday Date: {{DATE}}\n\n<|eot_id|>"};
  return m;
}

TemplateMeta llama2() {
  TemplateMeta m;
  m.name = "llama";
  m.description = "Llama 2 chat ([INST] <<SYS>> ... [/INST]) with Llama 2's default system prompt";
  m.prefix = {"<s>[INST] "};
  m.system_prefix = {"<s>[INST] <<SYS>>\n{{SYSTEM}}\n<</SYS>>\n\n"};
  m.prompt = {"{{QUERY}} [/INST]"};
  m.chat_sep = {"</s><s>[INST] "};
  m.suffix = {"</s>"};
  m.default_system = kLlama2DefaultSystem;
  m.required_tokens = {"<s>", "</s>"};
  return m;
}

TemplateMeta mistral() {
  TemplateMeta m;
  m.name = "mistral";
  m.description = "Mistral 7B Instruct ([INST] ... [/INST], one <s>), system prompt before the first query";
  m.prefix = {"<s>[INST] "};
  m.system_prefix = {"<s>[INST] {{SYSTEM}}\n\n"};
  m.prompt = {"{{QUERY}} [/INST]"};
  m.chat_sep = {"</s>[INST] "};
  m.suffix = {"</s>"};
  m.required_tokens = {"<s>", "</s>"};
  return m;
}

// Gemma (1 and 2): <start_of_turn>role ... <end_of_turn>, the assistant's role called "model".
TemplateMeta gemma() {
  TemplateMeta m;
  m.name = "gemma";
  m.description = "Gemma / Gemma 2 (<start_of_turn>user ... <start_of_turn>model), no default system prompt";
  m.prefix = {"<bos>"};
  m.system_prefix = {"<bos><start_of_turn>system\n{{SYSTEM}}<end_of_turn>\n"};
  m.prompt = {"<start_of_turn>user\n{{QUERY}}<end_of_turn>\n"};
  m.generation_prompt = {"<start_of_turn>model\n"};
  m.chat_sep = {"<end_of_turn>\n"};
  m.suffix = {"<end_of_turn>"};
  m.required_tokens = {"<bos>", "<start_of_turn>", "<end_of_turn>"};
  return m;
}

// Gemma 3 text models: gemma's turns, the system prompt inside the first message, replies stripped of newlines.
TemplateMeta gemma3_text() {
  TemplateMeta m = gemma();
  m.name = "gemma3_text";
  m.description = "Gemma 3 text (gemma's turns; a system prompt opens the first user message)";
  m.system_prefix = {};
  m.system_in_first_message = true;
  m.strip_reply_newlines = true;
  return m;
}

// DeepSeek (V1 chat, V2): "User: ... Assistant:", the tokenizer's BOS in front and its EOS after each reply.
TemplateMeta deepseek() {
  TemplateMeta m;
  m.name = "deepseek";
  m.description = "DeepSeek / DeepSeek-V2 chat (User: ... Assistant:), no default system prompt";
  m.prefix = {Piece::bos()};
  m.system_prefix = {Piece::bos(), "{{SYSTEM}}\n\n"};
  m.prompt = {"User: {{QUERY}}\n\nAssistant:"};
  m.chat_sep = {Piece::eos()};
  m.suffix = {Piece::eos()};
  return m;
}

// DeepSeek-V2.5 / V3 (ms-swift's deepseek_v2_5): <｜User｜> and <｜Assistant｜> turns, the system prompt right after
// the begin-of-sentence token.
TemplateMeta deepseek_v2_5() {
  TemplateMeta m;
  m.name = "deepseek_v2_5";
  m.description = "DeepSeek-V2.5 / V3 (<｜User｜>...<｜Assistant｜>), no default system prompt";
  m.prefix = {"<｜begin▁of▁sentence｜>"};
  m.system_prefix = {"<｜begin▁of▁sentence｜>{{SYSTEM}}"};
  m.prompt = {"<｜User｜>{{QUERY}}<｜Assistant｜>"};
  m.chat_sep = {"<｜end▁of▁sentence｜>"};
  m.suffix = {"<｜end▁of▁sentence｜>"};
  m.required_tokens = {"<｜begin▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "<｜end▁of▁sentence｜>"};
  return m;
}

// DeepSeek-R1 and its distilled Qwen/Llama checkpoints: deepseek_v2_5's turns, every reply opened by "<think>\n".
TemplateMeta deepseek_r1() {
  TemplateMeta m = deepseek_v2_5();
  m.name = "deepseek_r1";
  m.description = "DeepSeek-R1 and R1-Distill (deepseek_v2_5's turns, replies opened by <think>)";
  m.is_thinking = true;
  m.thinking_prefix = "<think>\n";
  return m;
}

// Phi-3, Phi-3.5 and Phi-4-mini: <|user|> / <|assistant|> / <|system|> turns closed by <|end|>, each on its own line.
TemplateMeta phi3() {
  TemplateMeta m;
  m.name = "phi3";
  m.description = "Phi-3 / Phi-3.5 / Phi-4-mini (<|user|>\n...<|end|>\n<|assistant|>\n), no default system prompt";
  m.system_prefix = {"<|system|>\n{{SYSTEM}}<|end|>\n"};
  m.prompt = {"<|user|>\n{{QUERY}}<|end|>\n<|assistant|>\n"};
  m.chat_sep = {"<|end|>\n"};
  m.suffix = {"<|end|>"};
  m.auto_add_bos = true;
  m.required_tokens = {"<|user|>", "<|assistant|>", "<|end|>"};
  return m;
}

// Phi-4 (14B): ChatML's turns with <|im_sep|> after the role and no newlines.
TemplateMeta phi4() {
  TemplateMeta m;
  m.name = "phi4";
  m.description = "Phi-4 (<|im_start|>user<|im_sep|>...<|im_end|>), no default system prompt";
  m.system_prefix = {"<|im_start|>system<|im_sep|>{{SYSTEM}}<|im_end|>"};
  m.prompt = {"<|im_start|>user<|im_sep|>{{QUERY}}<|im_end|><|im_start|>assistant<|im_sep|>"};
  m.chat_sep = {"<|im_end|>"};
  m.suffix = {"<|im_end|>"};
  m.auto_add_bos = true;
  m.required_tokens = {"<|im_start|>", "<|im_sep|>", "<|im_end|>"};
  return m;
}

// GLM-4-0414 and GLM-Z1: [gMASK]<sop>, then <|system|> / <|user|> / <|assistant|> turns with nothing between them, the
// last reply closed by <|user|>; a prompt left open ends at <|assistant|> (ms-swift's GLM4Template strips the newline).
TemplateMeta glm4() {
  TemplateMeta m;
  m.name = "glm4";
  m.description = "GLM-4-0414 / GLM-Z1 ([gMASK]<sop><|user|>\n...<|assistant|>\n), no default system prompt";
  m.prefix = {"[gMASK]<sop>"};
  m.system_prefix = {"[gMASK]<sop><|system|>\n{{SYSTEM}}"};
  m.prompt = {"<|user|>\n{{QUERY}}"};
  m.generation_prompt = {"<|assistant|>\n"};
  m.suffix = {"<|user|>"};
  m.auto_add_bos = true;
  m.stop_words = {"<|endoftext|>", "<|user|>", "<|observation|>"};
  m.required_tokens = {"[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>"};
  m.thinking_prefix = "<think>";
  m.open_prompt_drops_newline = true;
  m.tool_format = ToolFormat::kGlm4;  // ms-swift's GLM4TemplateMeta: agent_template glm4
  return m;
}

TemplateMeta default_template() {
  TemplateMeta m;
  m.name = "default";
  m.description = "ms-swift's generic '### Human: / ### Assistant:' template; the tokenizer's EOS ends a reply";
  m.system_prefix = {"{{SYSTEM}}\n\n"};
  m.prompt = {"### Human:\n{{QUERY}}\n\n"};
  m.generation_prompt = {"### Assistant:\n"};
  m.chat_sep = {"\n\n"};
  m.suffix = {Piece::eos()};
  m.default_system = kDefaultSystem;
  m.auto_add_bos = true;
  return m;
}

std::map<std::string, TemplateMeta, std::less<>> build_registry() {
  std::vector<TemplateMeta> all;
  all.push_back(chatml());
  all.push_back(qwen("qwen", kDefaultSystem, "Qwen / Qwen2 (ChatML) with 'You are a helpful assistant.'"));
  all.push_back(qwen("qwen2_5", "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
                     "Qwen2.5 (ChatML) with Qwen2.5's default system prompt"));
  TemplateMeta q3 = qwen("qwen3", std::nullopt,
                         "Qwen3 hybrid thinking (ChatML); enable_thinking switches per request");
  q3.is_thinking = true;
  q3.non_thinking_prefix = "<think>\n\n</think>\n\n";
  all.push_back(q3);
  TemplateMeta q3t = qwen("qwen3_thinking", std::nullopt, "Qwen3 thinking-only (Qwen3-*-Thinking-2507)");
  q3t.is_thinking = true;
  q3t.thinking_prefix = "<think>\n";
  all.push_back(q3t);
  all.push_back(qwen("qwen3_nothinking", std::nullopt, "Qwen3 instruct-only (Qwen3-*-Instruct-2507)"));
  all.push_back(llama3());
  all.push_back(llama3_2());
  all.push_back(llama2());
  all.push_back(mistral());
  all.push_back(gemma());
  all.push_back(gemma3_text());
  all.push_back(deepseek());
  all.push_back(deepseek_v2_5());
  all.push_back(deepseek_r1());
  all.push_back(phi3());
  all.push_back(phi4());
  all.push_back(glm4());
  all.push_back(internlm2());
  all.push_back(default_template());
  std::map<std::string, TemplateMeta, std::less<>> registry;
  for (auto& m : all) registry.emplace(m.name, std::move(m));
  return registry;
}

const std::map<std::string, TemplateMeta, std::less<>>& registry() {
  static const auto r = build_registry();
  return r;
}

}  // namespace

const std::vector<std::string>& template_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& [name, meta] : registry()) v.push_back(name);
    return v;
  }();
  return names;
}

std::string template_names_joined() {
  std::string s;
  for (const auto& name : template_names()) s += (s.empty() ? "" : ", ") + name;
  return s;
}

const TemplateMeta& find_template_meta(std::string_view name) {
  auto it = registry().find(name);
  if (it == registry().end()) {
    throw UsageError("unknown chat template '" + std::string(name) + "'",
                     "pass --template with one of: " + template_names_joined());
  }
  return it->second;
}

TemplateMeta plain_text_template_meta() {
  TemplateMeta m;
  m.name = "plain";
  m.description = "no chat template (--use_chat_template false): BOS + text, EOS after a training reply";
  m.prompt = {"{{QUERY}}"};
  m.suffix = {Piece::eos()};
  m.auto_add_bos = true;
  m.multi_round = false;
  return m;
}

}  // namespace swift::templates
