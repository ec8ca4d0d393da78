// The scheduler thread: admit waiting sequences (prefill each alone, sample its first token), merge them into
// the running batch's cache, decode one token for every row, report, drop finished rows; repeat.
#include "swift/serve/scheduler.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/utils.h>

#include <algorithm>

#include "swift/core/logging.h"
#include "swift/serve/batch_cache.h"

namespace swift::serve {

// ---- RequestStream ----

std::optional<SequenceEvent> RequestStream::next(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
  SequenceEvent e = std::move(events_.front());
  events_.pop_front();
  return e;
}

void RequestStream::cancel() {
  std::lock_guard<std::mutex> lock(mutex_);
  cancelled_ = true;
}

bool RequestStream::cancelled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cancelled_;
}

void RequestStream::finish(size_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (index < finish_requested_.size()) finish_requested_[index] = true;
}

bool RequestStream::finish_requested(size_t index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return index < finish_requested_.size() && finish_requested_[index];
}

void RequestStream::push(SequenceEvent event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::move(event));
  }
  ready_.notify_all();
}

// ---- Scheduler ----

namespace {

// A sequence in the decode batch (row i of the batch cache is rows[i]).
struct Row {
  std::shared_ptr<RequestStream> stream;
  size_t index = 0;
  SequenceSpec spec;
  at::Generator rng;
  std::vector<int64_t> seen;  // prompt + output, for the repetition penalty
  int64_t generated = 0;      // tokens chosen so far (incl. a stop token)
  int64_t next_token = -1;    // chosen last, fed to the next decode step
};

bool is_stop_token(const model::SamplingParams& p, int64_t token) {
  return std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), token) != p.stop_token_ids.end();
}

void finish(Row& row, const std::string& reason) {
  if (!row.stream) return;
  SequenceEvent e;
  e.kind = SequenceEvent::Kind::kFinished;
  e.index = row.index;
  e.finish_reason = reason;
  row.stream->push(std::move(e));
}

// Chooses each row's next token from logits [B, V] (fp32), reporting it; returns the rows still going.
std::vector<bool> choose_and_report(std::vector<Row*>& rows, const at::Tensor& logits, bool stopping_hard) {
  const int64_t B = logits.size(0);
  bool any_logprobs = false, all_plain_greedy = true;
  for (auto* r : rows) {
    any_logprobs |= r->spec.params.logprobs;
    all_plain_greedy &= r->spec.params.greedy() && r->spec.params.repetition_penalty == 1.0;
  }
  auto greedy = logits.argmax(-1).to(at::kCPU);
  at::Tensor log_probs;
  if (any_logprobs) log_probs = logits.log_softmax(-1);
  std::vector<bool> going(static_cast<size_t>(B), true);
  for (int64_t b = 0; b < B; ++b) {
    Row& row = *rows[static_cast<size_t>(b)];
    const auto& p = row.spec.params;
    int64_t token;
    if (all_plain_greedy || (p.greedy() && p.repetition_penalty == 1.0)) {
      token = greedy[b].item<int64_t>();
    } else {
      try {  // a row whose settings break sampling (e.g. a temperature so small the probabilities overflow) fails alone
        auto processed = logits.narrow(0, b, 1).clone();
        model::apply_repetition_penalty(processed, {row.seen}, p.repetition_penalty);
        token = model::choose_tokens(model::filter_logits(processed, p), p, row.rng).to(at::kCPU)[0].item<int64_t>();
      } catch (const std::exception& ex) {
        finish(row, std::string("error: sampling failed: ") + ex.what());
        going[static_cast<size_t>(b)] = false;
        continue;
      }
    }
    SequenceEvent e;
    e.index = row.index;
    e.token = token;
    e.is_stop = is_stop_token(p, token);
    if (p.logprobs) {
      auto chosen = at::tensor(std::vector<int64_t>{token}, at::kLong).to(logits.device());
      e.logprob = model::describe_logprobs(log_probs.narrow(0, b, 1), chosen, p.top_logprobs).front();
    }
    row.stream->push(std::move(e));
    ++row.generated;
    row.seen.push_back(token);
    row.next_token = token;
    std::string reason;
    if (is_stop_token(p, token) || row.stream->finish_requested(row.index)) reason = "stop";
    else if (row.generated >= p.max_new_tokens) reason = "length";
    else if (row.stream->cancelled() || stopping_hard) reason = "abort";
    if (!reason.empty()) {
      finish(row, reason);
      going[static_cast<size_t>(b)] = false;
    }
  }
  return going;
}

}  // namespace

struct Scheduler::Impl {
  model::CausalLM model{nullptr};
  std::unique_ptr<BatchCache> cache;
  std::vector<Row> rows;
};

Scheduler::Scheduler(model::CausalLM model, SchedulerOptions options)
    : impl_(std::make_unique<Impl>()), options_(options) {
  impl_->model = std::move(model);
  impl_->cache = std::make_unique<BatchCache>(impl_->model->make_cache(1, 1), options_.headroom);
  options_.max_batch_size = std::max<int64_t>(1, options_.max_batch_size);
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() { shutdown(false); }

std::shared_ptr<RequestStream> Scheduler::submit(std::vector<SequenceSpec> sequences) {
  auto stream = std::make_shared<RequestStream>(sequences.size());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return nullptr;
    if (waiting_.size() + sequences.size() > options_.max_waiting) return nullptr;
    for (size_t i = 0; i < sequences.size(); ++i) waiting_.push_back({stream, i, std::move(sequences[i])});
    stats_.waiting = waiting_.size();
  }
  wake_.notify_all();
  return stream;
}

void Scheduler::shutdown(bool drain) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    drain_ = drain_ && drain;
  }
  wake_.notify_all();
  if (thread_.joinable() && std::this_thread::get_id() != thread_.get_id()) thread_.join();
}

bool Scheduler::accepting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !stopping_;
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void Scheduler::loop() {
  torch::NoGradGuard no_grad;
  auto& model = impl_->model;
  auto& cache = *impl_->cache;
  auto& rows = impl_->rows;
  const auto device = model->device();
  auto use_adapters = [&](std::vector<int64_t> ids) {
    if (options_.select_adapters) options_.select_adapters(ids);
  };
  while (true) {
    std::vector<Waiting> admitted;
    bool hard_stop = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !waiting_.empty() || !rows.empty(); });
      hard_stop = stopping_ && !drain_;
      if (stopping_ && rows.empty() && (waiting_.empty() || hard_stop)) {
        for (auto& w : waiting_) {  // never started: tell their owners
          SequenceEvent e;
          e.kind = SequenceEvent::Kind::kFinished;
          e.index = w.index;
          e.finish_reason = "abort";
          w.stream->push(std::move(e));
        }
        waiting_.clear();
        break;
      }
      while (!hard_stop && rows.size() + admitted.size() < static_cast<size_t>(options_.max_batch_size) &&
             !waiting_.empty()) {
        admitted.push_back(std::move(waiting_.front()));
        waiting_.pop_front();
      }
      stats_.waiting = waiting_.size();
    }

    // Prefill each newcomer alone (the model body only). Its first token is chosen below together with the
    // running rows' next tokens, so the vocabulary projection, often the largest matrix, is read once per step.
    std::vector<model::KVCache> new_caches;
    std::vector<Row> new_rows;
    std::vector<at::Tensor> new_hidden;  // each [C]: the prompt's last position
    for (auto& w : admitted) {
      Row row;
      row.stream = w.stream;
      row.index = w.index;
      row.spec = std::move(w.spec);
      if (row.stream->cancelled()) {
        finish(row, "abort");
        continue;
      }
      try {
        const auto& prompt = row.spec.prompt;
        const int64_t P = static_cast<int64_t>(prompt.size());
        row.rng = at::make_generator<at::CPUGeneratorImpl>(row.spec.params.seed);
        row.seen = prompt;
        model::KVCache kv = model->make_cache(1, P);
        model::ForwardArgs args;
        args.input_ids = at::tensor(prompt, at::kLong).view({1, P}).to(device);
        args.cache = &kv;
        use_adapters({row.spec.adapter});
        auto hidden = model->forward_hidden(args);  // [1, P, C]
        if (row.spec.prompt_logprobs >= 0) {
          SequenceEvent e;
          e.kind = SequenceEvent::Kind::kPromptLogprobs;
          e.index = row.index;
          if (P > 1) {
            use_adapters(std::vector<int64_t>(static_cast<size_t>(P - 1), row.spec.adapter));
            auto lp = model->logits(hidden[0].narrow(0, 0, P - 1)).to(at::kFloat).log_softmax(-1);  // [P-1, V]
            e.prompt_logprobs = model::describe_logprobs(lp, args.input_ids[0].narrow(0, 1, P - 1), row.spec.prompt_logprobs);
          }
          row.stream->push(std::move(e));
        }
        new_hidden.push_back(hidden[0][P - 1]);
        new_caches.push_back(std::move(kv));
        new_rows.push_back(std::move(row));
      } catch (const std::exception& ex) {
        log_warn("request failed in prefill: ", ex.what());
        finish(row, std::string("error: ") + ex.what());
      }
    }
    if (rows.empty() && new_rows.empty()) continue;

    // One decode step for every running row; then the next token of every row, old and new.
    const size_t running = rows.size();
    try {
      std::vector<at::Tensor> last = {};
      if (running > 0) {
        cache.reserve_step();
        std::vector<int64_t> next(running);
        for (size_t i = 0; i < running; ++i) next[i] = rows[i].next_token;
        model::ForwardArgs args;
        args.input_ids = at::tensor(next, at::kLong).view({-1, 1}).to(device);
        args.attention_mask = cache.step_mask();
        args.position_ids = cache.step_positions();
        args.cache = &cache.kv();
        std::vector<int64_t> ids;
        for (const auto& r : rows) ids.push_back(r.spec.adapter);
        use_adapters(ids);
        last.push_back(model->forward_hidden(args).select(1, 0));  // [B, C]
        cache.advance();
      }
      if (!new_hidden.empty()) last.push_back(at::stack(new_hidden));  // [k, C]
      std::vector<int64_t> ids;
      for (const auto& r : rows) ids.push_back(r.spec.adapter);
      for (const auto& r : new_rows) ids.push_back(r.spec.adapter);
      use_adapters(ids);
      auto logits = model->logits(last.size() == 1 ? last[0] : at::cat(last)).to(at::kFloat);  // [B + k, V]
      std::vector<Row*> pointers;
      for (auto& r : rows) pointers.push_back(&r);
      for (auto& r : new_rows) pointers.push_back(&r);
      const auto going = choose_and_report(pointers, logits, hard_stop);
      std::vector<int64_t> keep;
      std::vector<const model::KVCache*> joining;
      for (size_t i = 0; i < running; ++i)
        if (going[i]) keep.push_back(static_cast<int64_t>(i));
      for (size_t j = 0; j < new_rows.size(); ++j)
        if (going[running + j]) joining.push_back(&new_caches[j]);
      if (keep.size() != running || !joining.empty()) cache.relayout(keep, joining);
      std::vector<Row> still;  // moved only once the cache matches, so a failure above leaves every row intact
      for (auto i : keep) still.push_back(std::move(rows[static_cast<size_t>(i)]));
      for (size_t j = 0; j < new_rows.size(); ++j)
        if (going[running + j]) still.push_back(std::move(new_rows[j]));
      rows = std::move(still);
      std::lock_guard<std::mutex> lock(mutex_);
      if (running > 0) ++stats_.steps;
      stats_.largest_batch = std::max<int64_t>(stats_.largest_batch, static_cast<int64_t>(running));
      stats_.running = rows.size();
    } catch (const std::exception& ex) {
      // A failed step (e.g. out of memory) ends the sequences in it, not the server.
      log_warn("decode step failed: ", ex.what());
      for (auto& r : rows) finish(r, std::string("error: ") + ex.what());
      for (auto& r : new_rows) finish(r, std::string("error: ") + ex.what());
      rows.clear();
      cache.relayout({}, {});
    }
  }
}

}  // namespace swift::serve
