// The OpenAI API's request bodies and error shape (chat completions, completions), plus the extensions vLLM and
// ms-swift accept (top_k, min_p, repetition_penalty, chat_template_kwargs, prompt_logprobs, return_details).
// Parsing checks every field's type and range and throws ApiError, which the server turns into
// {"error": {"message", "type", "param", "code"}} with its HTTP status. No model or tokenizer needed here.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "swift/template/message.h"

namespace swift::serve {

// An error the client caused (or an overloaded server), as OpenAI reports it.
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string param = {}, std::string code = {},
           std::string type = "invalid_request_error")
      : std::runtime_error(message), status(status), type(std::move(type)), param(std::move(param)),
        code(std::move(code)) {}
  int status;
  std::string type, param, code;
};

// {"error": {"message", "type", "param", "code"}} (param/code null when empty).
nlohmann::json error_json(const std::string& message, const std::string& type, const std::string& param = {},
                          const std::string& code = {});

// What the server allows; requests outside it are refused with 400.
struct ProtocolLimits {
  int64_t max_logprobs = 20;  // top_logprobs / logprobs / prompt_logprobs at most
  int64_t max_n = 64;         // choices per request at most
};

// Fields both routes share. Unset optionals take the server's defaults (--temperature ..., generation_config).
struct SamplingFields {
  std::optional<int64_t> max_tokens;  // max_tokens (or max_completion_tokens): >= 1
  std::optional<double> temperature;  // >= 0 (0 = greedy)
  std::optional<double> top_p;        // (0, 1]
  std::optional<int64_t> top_k;       // -1 or 0: off; else >= 1
  std::optional<double> min_p;        // [0, 1]
  std::optional<double> repetition_penalty;  // > 0
  std::optional<int64_t> seed;
  std::vector<std::string> stop;      // stop strings (a string or a list of up to 16)
  std::vector<int64_t> stop_token_ids;  // vLLM extension
  int64_t n = 1;
  bool stream = false;
  bool include_usage = false;         // stream_options.include_usage
  int64_t prompt_logprobs = -1;       // vLLM extension: -1 off, else k >= 0
  bool return_details = false;        // prompt_token_ids and token_ids in the response
};

struct ChatRequest {
  std::string model;  // "" when absent: the base model
  templates::Conversation messages;
  SamplingFields sampling;
  bool logprobs = false;
  int64_t top_logprobs = 0;
  std::optional<bool> enable_thinking;  // chat_template_kwargs.enable_thinking
  // vLLM's add_generation_prompt / continue_final_message; neither given: ms-swift's (a final assistant message
  // is continued, else the next reply opened).
  templates::PromptEnd prompt_end = templates::PromptEnd::kAuto;
  // `tools` after `tool_choice` (ms-swift's: "none" drops them, {"function": {"name"}} keeps that one), each
  // wrapped as {"type": "function", "function": ...}, in the key order of the request.
  std::vector<nlohmann::ordered_json> tools;
};

// A completions prompt: text, or token ids.
struct PromptInput {
  std::optional<std::string> text;
  std::vector<int64_t> token_ids;  // when text is unset
};

struct CompletionRequest {
  std::string model;
  std::vector<PromptInput> prompts;  // a string, a list of strings, a list of ids, or a list of id lists
  SamplingFields sampling;
  std::optional<int64_t> logprobs;   // number of alternatives per token (0 = only the chosen token's)
  bool echo = false;
};

// Parses a request body. ApiError (400) naming the field for bad JSON, a missing or mistyped field, or a value out
// of range.
ChatRequest parse_chat_request(const std::string& body, const ProtocolLimits& limits);
CompletionRequest parse_completion_request(const std::string& body, const ProtocolLimits& limits);

}  // namespace swift::serve
