// Continuous batching for the server: one thread owns the model; submitted sequences wait in a bounded queue,
// are prefilled alone and then join the running decode batch at the next step (up to max_batch_size rows), so
// a new request never waits for others to finish. Results stream back per request through a RequestStream.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "swift/model/generator.h"
#include "swift/model/sampling.h"

namespace swift::serve {

// One sequence to generate.
struct SequenceSpec {
  std::vector<int64_t> prompt;   // token ids: non-empty, inside the vocabulary (checked by the caller)
  model::SamplingParams params;  // max_new_tokens must keep prompt + output within the server's context
  int64_t prompt_logprobs = -1;  // >= 0: report every prompt token after the first (with this many alternatives)
  int64_t adapter = 0;           // LoRA adapter id (see SchedulerOptions::select_adapters); 0: the base model
};

// What happens to one sequence, in order: kPromptLogprobs (once, when asked), kToken..., then kFinished.
struct SequenceEvent {
  enum class Kind { kPromptLogprobs, kToken, kFinished };
  Kind kind = Kind::kToken;
  size_t index = 0;     // which SequenceSpec of the submission
  int64_t token = -1;   // kToken
  bool is_stop = false; // kToken: a stop token (ends the sequence; not part of the text)
  std::optional<model::TokenLogprob> logprob;          // kToken, when params.logprobs
  std::vector<model::TokenLogprob> prompt_logprobs;    // kPromptLogprobs: prompt.size() - 1 entries
  std::string finish_reason;  // kFinished: "stop", "length", "abort" (cancelled), or "error: <message>"
};

// The channel of one submission: the scheduler thread pushes events, the HTTP thread takes them.
class RequestStream {
 public:
  explicit RequestStream(size_t sequences) : finish_requested_(sequences, false) {}
  // The next event; nullopt when none came within `timeout`.
  std::optional<SequenceEvent> next(std::chrono::milliseconds timeout);
  // Stops every sequence of the submission (the client went away); each still reports kFinished ("abort").
  void cancel();
  bool cancelled() const;
  // Ends one sequence after its current token (a stop string matched); it reports kFinished ("stop").
  void finish(size_t index);
  bool finish_requested(size_t index) const;
  void push(SequenceEvent event);

 private:
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<SequenceEvent> events_;
  std::vector<bool> finish_requested_;
  bool cancelled_ = false;
};

struct SchedulerOptions {
  int64_t max_batch_size = 32;  // sequences decoded together. Default: 32
  size_t max_waiting = 256;     // sequences queued beyond the running batch; submit() refuses more. Default: 256
  int64_t headroom = 32;        // KV cache columns reserved at each re-layout. Default: 32
  // Called before every forward pass with each batch row's SequenceSpec::adapter (serve/multi_lora). Default: none.
  std::function<void(const std::vector<int64_t>&)> select_adapters;
};

struct SchedulerStats {
  size_t running = 0;
  size_t waiting = 0;
  int64_t steps = 0;           // decode steps so far
  int64_t largest_batch = 0;   // most rows decoded in one step
};

class Scheduler {
 public:
  // Starts the scheduler thread. The model must stay alive and is used by this thread only.
  Scheduler(model::CausalLM model, SchedulerOptions options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues the sequences of one request. nullptr when the queue cannot take them all (answer 429) or the
  // scheduler is shutting down (answer 503).
  std::shared_ptr<RequestStream> submit(std::vector<SequenceSpec> sequences);
  // Refuses new work, lets queued and running sequences finish (or cancels them when `drain` is false), and
  // joins the thread. Idempotent.
  void shutdown(bool drain = true);
  bool accepting() const;
  size_t max_waiting() const { return options_.max_waiting; }
  SchedulerStats stats() const;

 private:
  struct Waiting {
    std::shared_ptr<RequestStream> stream;
    size_t index;
    SequenceSpec spec;
  };
  struct Impl;
  void loop();

  std::unique_ptr<Impl> impl_;
  SchedulerOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Waiting> waiting_;
  bool stopping_ = false;
  bool drain_ = true;
  SchedulerStats stats_;
  std::thread thread_;
};

}  // namespace swift::serve
