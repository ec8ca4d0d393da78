// From parsed request to response: prompts -> token ids -> sequences on the scheduler -> text, logprobs, usage.
#include "swift/serve/completion_service.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <random>
#include <sstream>

#include "swift/core/error.h"
#include "swift/template/agent_template.h"
#include "swift/template/template.h"
#include "swift/tokenizer/tokenizer.h"

using nlohmann::json;

namespace swift::serve {

struct Job::Sequence {
  size_t prompt = 0;   // index into prompts_
  size_t choice = 0;   // the OpenAI choice index
  std::unique_ptr<tokenizer::StreamDecoder> decoder;
  std::string text;    // the output text so far (cut at a stop string once one matched)
  size_t sent = 0;     // bytes of text already streamed
  std::vector<int64_t> tokens;  // generated ids, without a stop token
  int64_t generated = 0;        // generated ids, with a stop token
  std::vector<model::TokenLogprob> logprobs;  // one per id in `tokens`
  size_t logprobs_sent = 0;
  size_t text_offset = 0;  // completions logprobs: text_offset of the next token (streamed chunks continue it)
  std::optional<std::vector<model::TokenLogprob>> prompt_logprobs;
  bool stopped = false;          // a stop string matched: later tokens are ignored
  std::string finish_reason;     // set when finished
  bool finished = false;
};

namespace {

std::string hex_id(const std::string& prefix, uint64_t a, uint64_t b) {
  std::ostringstream out;
  out << prefix << std::hex << a << b;
  return out.str();
}

// A JSON chunk as one SSE payload; token texts can be partial UTF-8 (byte-level BPE), so invalid bytes are
// replaced rather than failing the stream.
std::string sse(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json bytes_of(const std::string& text) {
  json out = json::array();
  for (unsigned char c : text) out.push_back(static_cast<int>(c));
  return out;
}

// The length of the longest suffix of `text` that begins some stop string: text that must wait before streaming.
size_t held_back(const std::string& text, const std::vector<std::string>& stops) {
  size_t held = 0;
  for (const auto& s : stops)
    for (size_t k = std::min(s.size() - 1, text.size()); k > held; --k)
      if (text.compare(text.size() - k, k, s, 0, k) == 0) {
        held = k;
        break;
      }
  return held;
}

// Cuts `text` at the first stop string that begins at or after `from` - (longest stop - 1); true when cut.
bool cut_at_stop(std::string& text, size_t from, const std::vector<std::string>& stops) {
  size_t best = std::string::npos;
  for (const auto& s : stops) {
    const size_t start = from >= s.size() ? from - s.size() + 1 : 0;
    const size_t at = text.find(s, start);
    if (at != std::string::npos) best = std::min(best, at);
  }
  if (best == std::string::npos) return false;
  text.resize(best);
  return true;
}

}  // namespace

// ---- CompletionService ----

CompletionService::CompletionService(Scheduler& scheduler, const tokenizer::Tokenizer& tokenizer,
                                     const templates::Template& chat, ServiceOptions options)
    : scheduler_(scheduler), tokenizer_(tokenizer), chat_(chat), options_(std::move(options)) {
  seed_base_ = std::random_device{}();
}

json CompletionService::models() const {
  const auto created = static_cast<int64_t>(std::time(nullptr));
  json data = json::array({{{"id", options_.model_id},
                            {"object", "model"},
                            {"created", created},
                            {"owned_by", "swift"},
                            {"root", options_.model_root},
                            {"parent", nullptr},
                            {"max_model_len", options_.max_model_len}}});
  for (const auto& [name, path] : options_.adapters)
    data.push_back({{"id", name}, {"object", "model"}, {"created", created}, {"owned_by", "swift"}, {"root", path},
                    {"parent", options_.model_id}, {"max_model_len", options_.max_model_len}});
  return {{"object", "list"}, {"data", data}};
}

std::vector<int64_t> CompletionService::checked_ids(std::vector<int64_t> ids) const {
  for (auto id : ids)
    if (id < 0 || id >= options_.vocab_size)
      throw ApiError(400, "token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                              std::to_string(options_.vocab_size - 1) + ")", "prompt", "invalid_value");
  return ids;
}

int64_t CompletionService::adapter_of(const std::string& requested) const {
  if (requested.empty() || requested == options_.model_id) return 0;
  std::string served = "'" + options_.model_id + "'";
  for (size_t i = 0; i < options_.adapters.size(); ++i) {
    if (requested == options_.adapters[i].first) return static_cast<int64_t>(i + 1);
    served += ", '" + options_.adapters[i].first + "'";
  }
  throw ApiError(400, "The model '" + requested + "' does not exist; this server serves " + served, "model",
                 "model_not_found");
}

std::unique_ptr<Job> CompletionService::start_chat(const ChatRequest& r) {
  const int64_t adapter = adapter_of(r.model);
  std::vector<int64_t> ids;
  try {
    ids = chat_.encode_prompt(r.messages, r.enable_thinking ? r.enable_thinking : options_.enable_thinking, r.prompt_end,
                              &r.tools);
  } catch (const UserError& e) {
    throw ApiError(400, e.message(), "messages", "invalid_value");
  }
  std::unique_ptr<Job> job(new Job(Job::Kind::kChat, tokenizer_));
  job->id_ = hex_id("chatcmpl-", seed_base_, counter_++);
  job->logprobs_ = r.logprobs;
  job->top_logprobs_ = r.top_logprobs;
  job->model_ = r.model.empty() ? options_.model_id : r.model;
  if (!r.tools.empty()) job->agent_ = chat_.agent_template();  // encode_prompt checked that there is one
  job->reply_template_ = &chat_;
  job->enable_thinking_ = r.enable_thinking ? r.enable_thinking : options_.enable_thinking;
  return submit(std::move(job), r.sampling, {ids}, r.logprobs, r.top_logprobs, r.sampling.prompt_logprobs, adapter);
}

std::unique_ptr<Job> CompletionService::start_completion(const CompletionRequest& r) {
  const int64_t adapter = adapter_of(r.model);
  std::vector<std::vector<int64_t>> prompts;
  std::unique_ptr<Job> job(new Job(Job::Kind::kCompletion, tokenizer_));
  for (const auto& p : r.prompts) {
    // Text prompts get the tokenizer's special tokens (a BOS where the model wants one), as vLLM encodes them.
    prompts.push_back(p.text ? tokenizer_.encode(*p.text, /*add_special_tokens=*/true) : checked_ids(p.token_ids));
    if (prompts.back().empty()) throw ApiError(400, "the prompt encodes to no tokens", "prompt", "invalid_value");
    if (r.echo) job->echo_.push_back(p.text ? *p.text : tokenizer_.decode(prompts.back()));
  }
  job->id_ = hex_id("cmpl-", seed_base_, counter_++);
  job->logprobs_ = r.logprobs.has_value();
  job->top_logprobs_ = r.logprobs.value_or(0);
  job->echo_logprobs_ = r.echo && r.logprobs.has_value();
  int64_t prompt_logprobs = r.sampling.prompt_logprobs;
  if (job->echo_logprobs_) prompt_logprobs = std::max(prompt_logprobs, job->top_logprobs_);
  job->model_ = r.model.empty() ? options_.model_id : r.model;
  return submit(std::move(job), r.sampling, prompts, job->logprobs_, job->top_logprobs_, prompt_logprobs, adapter);
}

std::unique_ptr<Job> CompletionService::submit(std::unique_ptr<Job> job, const SamplingFields& f,
                                               const std::vector<std::vector<int64_t>>& prompts, bool logprobs,
                                               int64_t top_logprobs, int64_t prompt_logprobs, int64_t adapter) {
  const int64_t context = options_.max_model_len;
  std::vector<SequenceSpec> specs;
  for (size_t p = 0; p < prompts.size(); ++p) {
    const int64_t P = static_cast<int64_t>(prompts[p].size());
    if (P >= context)
      throw ApiError(400, "This model's maximum context length is " + std::to_string(context) + " tokens. However, the prompt has " +
                              std::to_string(P) + " tokens, leaving no room for the reply.",
                     job->kind_ == Job::Kind::kChat ? "messages" : "prompt", "context_length_exceeded");
    if (f.max_tokens && *f.max_tokens > context - P)
      throw ApiError(400, "This model's maximum context length is " + std::to_string(context) + " tokens. However, you requested " +
                              std::to_string(P + *f.max_tokens) + " tokens (" + std::to_string(P) + " in the prompt, " +
                              std::to_string(*f.max_tokens) + " in the completion).",
                     "max_tokens", "context_length_exceeded");
    for (int64_t c = 0; c < f.n; ++c) {
      SequenceSpec s;
      s.prompt = prompts[p];
      auto& q = s.params;
      q = options_.defaults;
      q.max_new_tokens = f.max_tokens ? *f.max_tokens : std::min(options_.defaults.max_new_tokens, context - P);
      if (f.temperature) q.temperature = *f.temperature;
      if (f.top_p) q.top_p = *f.top_p;
      if (f.top_k) q.top_k = *f.top_k;
      if (f.min_p) q.min_p = *f.min_p;
      if (f.repetition_penalty) q.repetition_penalty = *f.repetition_penalty;
      for (auto id : f.stop_token_ids) q.stop_token_ids.push_back(id);
      q.stop_sequences.clear();  // --stop_words are matched as text (job->stop_)
      const uint64_t index = specs.size();
      q.seed = f.seed ? static_cast<uint64_t>(*f.seed) + index : seed_base_ * 1000003ULL + counter_++;
      q.logprobs = logprobs;
      q.top_logprobs = top_logprobs;
      s.prompt_logprobs = prompt_logprobs;
      s.adapter = adapter;
      specs.push_back(std::move(s));

      auto seq = std::make_unique<Job::Sequence>();
      seq->prompt = p;
      seq->choice = static_cast<size_t>(index);
      seq->decoder = std::make_unique<tokenizer::StreamDecoder>(tokenizer_, /*skip_special_tokens=*/true);
      job->sequences_.push_back(std::move(seq));
    }
  }
  job->prompts_ = prompts;
  job->created_ = static_cast<int64_t>(std::time(nullptr));
  job->stop_ = f.stop;
  for (const auto& w : options_.stop_words) job->stop_.push_back(w);
  job->include_usage_ = f.include_usage;
  job->return_details_ = f.return_details;
  job->prompt_logprobs_ = f.prompt_logprobs;
  if (!scheduler_.accepting()) throw ApiError(503, "the server is shutting down", "", "service_unavailable", "server_error");
  // More sequences (prompts x n) than the whole waiting queue holds could never be accepted: a 400, not a 429.
  if (specs.size() > scheduler_.max_waiting())
    throw ApiError(400, "the request asks for " + std::to_string(specs.size()) + " sequences (prompts x n); the server queues at most " +
                            std::to_string(scheduler_.max_waiting()),
                   "n", "invalid_value");
  job->stream_ = scheduler_.submit(std::move(specs));
  if (!job->stream_) {
    if (!scheduler_.accepting())
      throw ApiError(503, "the server is shutting down", "", "service_unavailable", "server_error");
    throw ApiError(429, "the server is busy: its waiting queue is full; retry later", "", "rate_limit_exceeded",
                   "rate_limit_error");
  }
  return job;
}

// ---- Job ----

Job::Job(Kind kind, const tokenizer::Tokenizer& tokenizer) : kind_(kind), tokenizer_(tokenizer) {}

Job::~Job() { cancel(); }

void Job::cancel() {
  if (stream_ && !done()) stream_->cancel();
}

bool Job::done() const {
  for (const auto& s : sequences_)
    if (!s->finished) return false;
  return true;
}

void Job::append_reply_text(Sequence& s, const std::string& piece) const {
  s.text += s.text.empty() && reply_template_ ? reply_template_->reply_text(piece, enable_thinking_) : piece;
}

int64_t Job::pump(std::chrono::milliseconds wait) {
  auto event = stream_->next(wait);
  if (!event) return -1;
  auto& s = *sequences_.at(event->index);
  // The scheduler's error path can report a sequence that already finished a second time: the first report
  // stands, or the client would see an error after the finish.
  if (s.finished) return -1;
  switch (event->kind) {
    case SequenceEvent::Kind::kPromptLogprobs:
      s.prompt_logprobs = std::move(event->prompt_logprobs);
      break;
    case SequenceEvent::Kind::kToken:
      if (s.stopped) break;
      ++s.generated;
      if (event->is_stop) break;
      s.tokens.push_back(event->token);
      if (event->logprob) s.logprobs.push_back(*event->logprob);
      {
        const size_t before = s.text.size();
        append_reply_text(s, s.decoder->push(event->token));
        if (!stop_.empty() && cut_at_stop(s.text, before, stop_)) {
          s.stopped = true;
          stream_->finish(event->index);
        }
      }
      break;
    case SequenceEvent::Kind::kFinished:
      if (!s.stopped) {
        const size_t before = s.text.size();
        append_reply_text(s, s.decoder->flush());
        if (!stop_.empty() && cut_at_stop(s.text, before, stop_)) s.stopped = true;
      }
      s.finish_reason = s.stopped ? "stop" : event->finish_reason;
      s.finished = true;
      break;
  }
  return static_cast<int64_t>(event->index);
}

json Job::logprobs_json(const Sequence& s, size_t from, size_t* text_offset) const {
  auto token_text = [&](int64_t id) { return tokenizer_.decode(std::vector<int64_t>{id}); };
  if (kind_ == Kind::kChat) {
    json content = json::array();
    for (size_t i = from; i < s.logprobs.size(); ++i) {
      const auto& t = s.logprobs[i];
      json top = json::array();
      for (const auto& alt : t.top) {
        const auto text = token_text(alt.token);
        top.push_back({{"token", text}, {"logprob", alt.logprob}, {"bytes", bytes_of(text)}});
      }
      const auto text = token_text(t.token);
      content.push_back({{"token", text}, {"logprob", t.logprob}, {"bytes", bytes_of(text)}, {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  // Completions: parallel lists; with echo the prompt's tokens come first (the first without a logprob).
  json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(), offsets = json::array();
  size_t offset = text_offset ? *text_offset : 0;
  auto add = [&](int64_t id, const json& lp, const json& top) {
    const auto text = token_text(id);
    tokens.push_back(text);
    token_logprobs.push_back(lp);
    top_logprobs.push_back(top);
    offsets.push_back(offset);
    offset += text.size();
  };
  auto top_map = [&](const model::TokenLogprob& t) {
    json m = json::object();
    for (const auto& alt : t.top) m[token_text(alt.token)] = alt.logprob;
    return m;
  };
  if (echo_logprobs_ && from == 0) {
    const auto& prompt = prompts_[s.prompt];
    add(prompt[0], nullptr, nullptr);
    if (s.prompt_logprobs)
      for (const auto& t : *s.prompt_logprobs) add(t.token, t.logprob, top_map(t));
  }
  for (size_t i = from; i < s.logprobs.size(); ++i) add(s.logprobs[i].token, s.logprobs[i].logprob, top_map(s.logprobs[i]));
  if (text_offset) *text_offset = offset;
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top_logprobs}, {"text_offset", offsets}};
}

json Job::usage() const {
  int64_t prompt = 0, completion = 0;
  for (const auto& p : prompts_) prompt += static_cast<int64_t>(p.size());
  for (const auto& s : sequences_) completion += s->generated;
  return {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}};
}

namespace {
// vLLM's prompt_logprobs: null for the first token, then {token_id: {logprob, rank, decoded_token}} holding the
// actual token and the top alternatives.
json prompt_logprobs_json(const tokenizer::Tokenizer& tok, const std::vector<model::TokenLogprob>& lps) {
  json out = json::array({nullptr});
  for (const auto& t : lps) {
    json m = json::object();
    for (size_t r = 0; r < t.top.size(); ++r)
      m[std::to_string(t.top[r].token)] = {{"logprob", t.top[r].logprob},
                                           {"rank", static_cast<int64_t>(r + 1)},
                                           {"decoded_token", tok.decode(std::vector<int64_t>{t.top[r].token})}};
    m[std::to_string(t.token)] = {{"logprob", t.logprob}, {"rank", t.rank},
                                  {"decoded_token", tok.decode(std::vector<int64_t>{t.token})}};
    out.push_back(m);
  }
  return out;
}
}  // namespace

json Job::result(const std::function<bool()>& client_gone) {
  while (!done()) {
    pump(std::chrono::milliseconds(200));
    if (client_gone && !done() && client_gone()) {
      cancel();
      throw ClientGone();
    }
  }
  json choices = json::array();
  for (const auto& sp : sequences_) {
    const auto& s = *sp;
    if (s.finish_reason.rfind("error: ", 0) == 0)
      throw ApiError(500, "generation failed: " + s.finish_reason.substr(7), "", "internal_error", "server_error");
    json c = {{"index", s.choice}, {"finish_reason", s.finish_reason == "abort" ? json("abort") : json(s.finish_reason)}};
    c["logprobs"] = logprobs_ ? logprobs_json(s, 0) : json(nullptr);
    if (kind_ == Kind::kChat) {
      c["message"] = {{"role", "assistant"}, {"content", s.text}};
      if (json calls = tool_calls_json(s, false); !calls.is_null()) c["message"]["tool_calls"] = std::move(calls);
    } else {
      c["text"] = (echo_.empty() ? std::string() : echo_[s.prompt]) + s.text;
      if (prompt_logprobs_ >= 0 && s.prompt_logprobs) c["prompt_logprobs"] = prompt_logprobs_json(tokenizer_, *s.prompt_logprobs);
      if (return_details_) c["prompt_token_ids"] = prompts_[s.prompt];
    }
    if (return_details_) c["token_ids"] = s.tokens;
    choices.push_back(std::move(c));
  }
  json out = {{"id", id_},
              {"object", kind_ == Kind::kChat ? "chat.completion" : "text_completion"},
              {"created", created_},
              {"model", model_},
              {"choices", choices},
              {"usage", usage()}};
  if (kind_ == Kind::kChat) {
    if (return_details_) out["prompt_token_ids"] = prompts_.front();
    if (prompt_logprobs_ >= 0 && sequences_.front()->prompt_logprobs)
      out["prompt_logprobs"] = prompt_logprobs_json(tokenizer_, *sequences_.front()->prompt_logprobs);
  }
  return out;
}

json Job::chunk(size_t index, const std::string& text, const json& logprobs, const json& finish_reason,
                bool first) const {
  const auto& s = *sequences_[index];
  json c = {{"index", s.choice}, {"logprobs", logprobs}, {"finish_reason", finish_reason}};
  if (kind_ == Kind::kChat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || first) delta["content"] = text;
    if (finish_reason.is_string())  // the last chunk carries the reply's tool calls, as ms-swift streams them
      if (json calls = tool_calls_json(s, true); !calls.is_null()) delta["tool_calls"] = std::move(calls);
    c["delta"] = delta;
  } else {
    c["text"] = text;
  }
  if (return_details_ && finish_reason.is_string()) c["token_ids"] = s.tokens;
  json out = {{"id", id_},
          {"object", kind_ == Kind::kChat ? "chat.completion.chunk" : "text_completion"},
          {"created", created_},
          {"model", model_},
          {"choices", json::array({c})}};
  // With include_usage, OpenAI sends "usage": null on every chunk but the final usage chunk.
  if (include_usage_) out["usage"] = nullptr;
  return out;
}

json Job::tool_calls_json(const Sequence& s, bool streamed) const {
  if (!agent_) return nullptr;
  const auto calls = templates::parse_tool_calls(*agent_, s.text);
  if (calls.empty()) return nullptr;
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json call = {{"id", "call_" + id_.substr(id_.find('-') + 1) + "_" + std::to_string(s.choice) + "_" + std::to_string(i)},
                 {"type", "function"},
                 {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (streamed) call["index"] = i;
    out.push_back(std::move(call));
  }
  return out;
}

bool Job::stream(const std::function<bool(const std::string&)>& write) {
  if (kind_ == Kind::kChat) {  // the assistant role first, as OpenAI does
    for (size_t i = 0; i < sequences_.size(); ++i) {
      if (!write(sse(chunk(i, "", nullptr, nullptr, true)))) return cancel(), false;
    }
  } else if (!echo_.empty()) {
    for (size_t i = 0; i < sequences_.size(); ++i)
      if (!write(sse(chunk(i, echo_[sequences_[i]->prompt], nullptr, nullptr, false)))) return cancel(), false;
  }
  while (!done()) {
    const int64_t touched = pump(std::chrono::milliseconds(200));
    if (touched < 0) continue;
    auto& s = *sequences_[static_cast<size_t>(touched)];
    const size_t ready = s.finished || s.stopped ? s.text.size() : s.text.size() - held_back(s.text, stop_);
    const bool new_logprobs = logprobs_ && s.logprobs.size() > s.logprobs_sent;
    if (ready > s.sent || new_logprobs || s.finished) {
      if (s.finish_reason.rfind("error: ", 0) == 0) {
        write(sse(error_json("generation failed: " + s.finish_reason.substr(7), "server_error", "", "internal_error")));
        continue;
      }
      const std::string piece = ready > s.sent ? s.text.substr(s.sent, ready - s.sent) : std::string();
      json lp = logprobs_ ? logprobs_json(s, s.logprobs_sent, &s.text_offset) : json(nullptr);
      s.logprobs_sent = s.logprobs.size();
      s.sent = std::max(s.sent, ready);
      if (!piece.empty() || new_logprobs)
        if (!write(sse(chunk(static_cast<size_t>(touched), piece, lp, nullptr, false)))) return cancel(), false;
      if (s.finished && !write(sse(chunk(static_cast<size_t>(touched), "", nullptr, s.finish_reason, false))))
        return cancel(), false;
    }
  }
  if (include_usage_) {
    json u = {{"id", id_}, {"object", kind_ == Kind::kChat ? "chat.completion.chunk" : "text_completion"},
              {"created", created_}, {"model", model_}, {"choices", json::array()}, {"usage", usage()}};
    if (!write(sse(u))) return false;
  }
  return write("[DONE]");
}

}  // namespace swift::serve
