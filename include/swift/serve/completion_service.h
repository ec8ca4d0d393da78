// The OpenAI routes' work between HTTP and the scheduler: turn a parsed request into prompt token ids (chat
// template or raw text/ids), check it against the context, submit its sequences, and assemble the answer:
// text with stop strings cut, logprobs, usage, finish_reason, as one JSON body or as streamed chunks.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "swift/model/sampling.h"
#include "swift/serve/openai_protocol.h"
#include "swift/serve/scheduler.h"

namespace swift::tokenizer {
class Tokenizer;
}
namespace swift::templates {
class Template;
}

namespace swift::serve {

struct ServiceOptions {
  std::string model_id;        // the id /v1/models lists and requests name (--served_model_name)
  std::string model_root;      // the model folder (reported as "root")
  // LoRA adapters served next to the base: request model == adapters[i].name runs with adapter id i + 1.
  std::vector<std::pair<std::string, std::string>> adapters;  // (name, folder)
  int64_t max_model_len = 0;   // prompt + output tokens at most
  int64_t vocab_size = 0;
  model::SamplingParams defaults;        // --temperature ..., generation_config.json; stop_token_ids included
  std::vector<std::string> stop_words;   // --stop_words: stop strings added to every request
  std::optional<bool> enable_thinking;   // --enable_thinking: for chat requests that do not say
  ProtocolLimits limits;
};

class Job;

// Job::result's answer when the client disconnected before the answer was ready.
struct ClientGone : std::exception {
  const char* what() const noexcept override { return "the client disconnected"; }
};

class CompletionService {
 public:
  // tokenizer and chat must outlive the service; the scheduler too.
  CompletionService(Scheduler& scheduler, const tokenizer::Tokenizer& tokenizer, const templates::Template& chat,
                    ServiceOptions options);

  // GET /v1/models
  nlohmann::json models() const;
  const ServiceOptions& options() const { return options_; }

  // Submits a request; ApiError (400 bad request, 429 queue full, 503 shutting down) when it cannot run.
  std::unique_ptr<Job> start_chat(const ChatRequest& request);
  std::unique_ptr<Job> start_completion(const CompletionRequest& request);

 private:
  std::vector<int64_t> checked_ids(std::vector<int64_t> ids) const;
  int64_t adapter_of(const std::string& model) const;  // ApiError 400 for an unknown model
  std::unique_ptr<Job> submit(std::unique_ptr<Job> job, const SamplingFields& fields,
                              const std::vector<std::vector<int64_t>>& prompts, bool logprobs, int64_t top_logprobs,
                              int64_t prompt_logprobs, int64_t adapter);

  Scheduler& scheduler_;
  const tokenizer::Tokenizer& tokenizer_;
  const templates::Template& chat_;
  ServiceOptions options_;
  std::atomic<uint64_t> counter_{0};
  uint64_t seed_base_;
};

// One request in flight.
class Job {
 public:
  enum class Kind { kChat, kCompletion };
  ~Job();
  // Waits for every sequence and returns the response body. ApiError (500) when generation failed.
  // client_gone, when given, is asked while waiting; once it says true the request is cancelled and
  // ClientGone thrown (nobody is left to answer).
  nlohmann::json result(const std::function<bool()>& client_gone = nullptr);
  // Streams: calls write(data) with each SSE "data: ..." payload (a JSON chunk, then "[DONE]"). When write
  // returns false (client gone) the request is cancelled and stream returns false.
  bool stream(const std::function<bool(const std::string&)>& write);
  void cancel();

 private:
  friend class CompletionService;
  struct Sequence;
  Job(Kind kind, const tokenizer::Tokenizer& tokenizer);
  // Takes one event (waiting up to `wait`); returns the index of the sequence it touched, or -1.
  int64_t pump(std::chrono::milliseconds wait);
  void append_reply_text(Sequence& s, const std::string& piece) const;  // to s.text, as the template decodes replies
  bool done() const;
  nlohmann::json chunk(size_t index, const std::string& text, const nlohmann::json& logprobs,
                       const nlohmann::json& finish_reason, bool first) const;
  nlohmann::json usage() const;
  // Logprobs of tokens from `from` on. Completions number text_offset from *text_offset (0 when null) and
  // advance it, so streamed chunks continue where the previous one ended.
  nlohmann::json logprobs_json(const Sequence& s, size_t from, size_t* text_offset = nullptr) const;

  Kind kind_;
  const tokenizer::Tokenizer& tokenizer_;
  std::string id_, model_;
  int64_t created_ = 0;
  std::vector<std::vector<int64_t>> prompts_;
  std::vector<std::string> echo_;  // completions with echo: each prompt's text
  std::vector<std::unique_ptr<Sequence>> sequences_;
  std::vector<std::string> stop_;
  bool logprobs_ = false, include_usage_ = false, return_details_ = false, echo_logprobs_ = false;
  int64_t top_logprobs_ = 0, prompt_logprobs_ = -1;
  std::shared_ptr<RequestStream> stream_;
  // Chat requests with tools: the agent template that finds tool calls in each reply (ms-swift's get_toolcall).
  std::optional<templates::AgentTemplate> agent_;
  // Chat: the template whose reply_text shapes the reply's start (GLM-4's drops leading newlines), and the request's
  // enable_thinking; null otherwise.
  const templates::Template* reply_template_ = nullptr;
  std::optional<bool> enable_thinking_;
  // The reply's tool calls as OpenAI's message.tool_calls (with "index" when streamed); null when none.
  nlohmann::json tool_calls_json(const Sequence& s, bool streamed) const;
};

}  // namespace swift::serve
