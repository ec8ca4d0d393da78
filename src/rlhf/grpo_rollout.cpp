// GRPO's rollouts (see grpo_rollout.h): generate -> score -> advantages -> the buffer the loop trains on.
#include "swift/rlhf/grpo_rollout.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <exception>
#include <limits>

#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/data/batch.h"
#include "swift/distributed/parallel_strategy.h"
#include "swift/model/autocast.h"
#include "swift/model/generator.h"
#include "swift/template/template.h"
#include "swift/tokenizer/tokenizer.h"
#include "swift/train/run_dir.h"

namespace swift::rlhf {

std::vector<std::string> rollout_figure_names(const std::vector<std::string>& reward_names) {
  std::vector<std::string> names{"reward", "reward_std", "frac_reward_zero_std"};
  for (const auto& n : reward_names) {
    names.push_back("rewards/" + n + "/mean");
    names.push_back("rewards/" + n + "/std");
  }
  for (const char* n : {"completions/mean_length", "completions/min_length", "completions/max_length", "completions/clipped_ratio",
                        "time/generation", "time/scoring"})
    names.emplace_back(n);
  return names;
}

namespace {

// A completion's sampling seed: the run's, the generation batch's index and the completion's place in it, mixed
// (splitmix64's finaliser), so that a resumed run, or another layout of ranks, draws the same completions.
uint64_t generation_seed(uint64_t seed, int64_t round, int64_t row) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(round + 1) + 0xbf58476d1ce4e5b9ULL * static_cast<uint64_t>(row + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A CPU tensor's values, read in one copy (not an .item() per element).
std::vector<double> host_values(const at::Tensor& t) {
  const at::Tensor values = t.to(at::kCPU, at::kDouble).contiguous();
  return {values.data_ptr<double>(), values.data_ptr<double>() + values.numel()};
}

class RolloutData : public data::TrainData {
 public:
  RolloutData(std::unique_ptr<data::TrainData> prompts, RolloutSetup setup) : prompts_(std::move(prompts)), s_(std::move(setup)) {
    const GrpoOptions& o = s_.options;
    for (const auto& name : o.reward_funcs) rewards_.push_back(reward_function(name, o.rewards));
    steps_per_generation_ = o.steps_per_generation > 0 ? o.steps_per_generation : s_.accumulation;
    world_ = s_.parallel->data_parallel_size();
    rank_ = s_.parallel->data_parallel_rank();
    local_ = s_.per_device_batch * steps_per_generation_;
    const int64_t completions = local_ * world_;
    SWIFT_CHECK(completions % o.num_generations == 0, UsageError,
                "a GRPO generation batch holds --per_device_train_batch_size x steps_per_generation x ranks = " +
                    std::to_string(s_.per_device_batch) + " x " + std::to_string(steps_per_generation_) + " x " +
                    std::to_string(world_) + " = " + std::to_string(completions) +
                    " completions, not a multiple of --num_generations " + std::to_string(o.num_generations),
                "make it one, e.g. --per_device_train_batch_size " + std::to_string(o.num_generations) +
                    " (ms-swift asks the same)");
    prompts_per_round_ = completions / o.num_generations;
    // The loop's micro-batches per pass over the prompts: each generation batch is trained on num_iterations times.
    const auto* in_memory = dynamic_cast<const data::InMemoryData*>(prompts_.get());
    SWIFT_CHECK(in_memory, UsageError, "GRPO encodes its prompts up front (its epochs count generation batches)",
                "drop --lazy_tokenize / --streaming");
    {
      const auto rounds = static_cast<int64_t>(in_memory->size()) / prompts_per_round_;
      SWIFT_CHECK(rounds > 0, DataError,
                  "the dataset has " + std::to_string(in_memory->size()) + " prompts; one GRPO generation batch needs " +
                      std::to_string(prompts_per_round_),
                  "give more prompts, or lower --per_device_train_batch_size / --gradient_accumulation_steps");
      batches_per_epoch_ = rounds * steps_per_generation_ * o.num_iterations;
    }
    const bool off_policy = o.num_iterations > 1 || steps_per_generation_ > s_.accumulation;
    keep_old_logps_ = off_policy;
    const int64_t per_round = steps_per_generation_ * o.num_iterations;
    if (s_.save_steps > 0 && (s_.save_steps * s_.accumulation) % per_round != 0)
      log_warn("grpo: --save_steps ", s_.save_steps, " x ", s_.accumulation, " micro-batches is not a multiple of a generation "
               "batch's ", per_round, " (steps_per_generation x num_iterations): checkpoints inside a generation batch "
               "cannot be resumed from");
    log_info("grpo: each generation batch: ", prompts_per_round_, " prompts x ", o.num_generations, " completions (",
             local_, " on each of ", world_, " rank", world_ > 1 ? "s" : "", "), trained on ", steps_per_generation_,
             " micro-batches x ", o.num_iterations, " iteration", o.num_iterations > 1 ? "s" : "",
             off_policy ? "; the ratio is taken against the log-probabilities at generation" : "");
  }

  std::vector<const data::Example*> next_micro_batch() override {
    const int64_t per_round = steps_per_generation_ * s_.options.num_iterations;
    if (position_ % per_round == 0) generate();
    const int64_t k = position_ % steps_per_generation_;
    ++position_;
    // The global micro-batch: this rank's completions where the strategy's local_range takes them (the other
    // ranks' places hold this rank's too; no rank reads another's).
    const auto pd = static_cast<size_t>(s_.per_device_batch);
    std::vector<const data::Example*> global(pd * static_cast<size_t>(world_));
    for (size_t i = 0; i < global.size(); ++i) global[i] = &buffer_[static_cast<size_t>(k) * pd + i % pd];
    return global;
  }
  std::optional<int64_t> batches_per_epoch() const override { return batches_per_epoch_; }
  int64_t epoch() const override { return prompts_->epoch(); }
  nlohmann::json state() const override {
    // At a generation batch's start: where the prompts stood before the pull whose prompts are still pending (or the
    // next pull), how many of that stream were used since, and the batch's index (its seed).
    return {{"kind", "grpo_rollouts"}, {"prompts", pending_.empty() ? prompts_->state() : anchor_state_},
            {"skip", pending_.empty() ? 0 : anchor_skip_}, {"round", round_}, {"position", position_}};
  }
  void restore(const nlohmann::json& state) override {
    SWIFT_CHECK(state.value("kind", "") == "grpo_rollouts", DataError,
                "the checkpoint's data state is not a GRPO run's (" + state.dump() + ")",
                "resume a GRPO run from a checkpoint of a GRPO run");
    const int64_t per_round = steps_per_generation_ * s_.options.num_iterations;
    const int64_t position = state.at("position").get<int64_t>();
    SWIFT_CHECK(position % per_round == 0, DataError,
                "the checkpoint was saved inside a GRPO generation batch (micro-batch " + std::to_string(position % per_round) +
                    " of " + std::to_string(per_round) + "); its completions came from weights it no longer has",
                "resume from a checkpoint saved at a generation batch's end (with --steps_per_generation unset and "
                "--num_iterations 1, every checkpoint is one)");
    prompts_->restore(state.at("prompts"));
    pending_.clear();
    for (int64_t skip = state.at("skip").get<int64_t>(); skip > 0;) {  // the prompts used since, drawn again
      pull();
      const int64_t n = std::min<int64_t>(skip, static_cast<int64_t>(pending_.size()));
      consume(n);
      skip -= n;
    }
    round_ = state.at("round").get<int64_t>();
    position_ = position;
  }

 private:
  // One generation batch: this rank's completions generated, every rank's rewards summed, the advantages.
  void generate() {
    const GrpoOptions& o = s_.options;
    std::vector<data::Example> prompts = draw_prompts();
    // This rank's completions: global rows [rank x local, (rank + 1) x local), row i answering prompt i / G.
    const int64_t first = rank_ * local_;
    std::vector<std::vector<int64_t>> inputs;
    for (int64_t i = first; i < first + local_; ++i) inputs.push_back(prompts[static_cast<size_t>(i / o.num_generations)].input_ids);
    model::SamplingParams params;
    params.max_new_tokens = o.max_completion_length;
    params.temperature = o.temperature;
    params.top_p = o.top_p;
    params.top_k = o.top_k;
    params.min_p = o.min_p;
    params.repetition_penalty = o.repetition_penalty;
    params.stop_token_ids = s_.stop_token_ids;
    // Each completion its own seed, from its place in the whole generation batch: the same completions whatever
    // ranks share the batch.
    for (int64_t i = first; i < first + local_; ++i) params.row_seeds.push_back(generation_seed(s_.seed, round_, i));
    std::vector<int64_t> stop_token(inputs.size(), -1);
    const auto started = std::chrono::steady_clock::now();
    const bool was_training = s_.policy->is_training();
    s_.policy->eval();
    model::Generator generator(s_.policy);
    std::vector<model::GenerationResult> results;
    {
      model::AutocastScope autocast(s_.policy->device().type(), s_.autocast);  // as the training pass computes
      results = generator.generate(inputs, params, [&](size_t row, int64_t token, bool is_stop) {
        if (is_stop) stop_token[row] = token;
      });
    }
    if (was_training) s_.policy->train();

    const auto generated = std::chrono::steady_clock::now();
    // Score: decoded text without the stop token (as ms-swift decodes), token count with it.
    std::vector<std::vector<int64_t>> completions(inputs.size());
    std::vector<ScoredCompletion> scored(inputs.size());
    for (size_t j = 0; j < inputs.size(); ++j) {
      completions[j] = results[j].tokens;
      if (stop_token[j] >= 0) completions[j].push_back(stop_token[j]);
      const auto& prompt = prompts[static_cast<size_t>((first + static_cast<int64_t>(j)) / o.num_generations)];
      scored[j] = {s_.tokenizer->decode(results[j].tokens), static_cast<int64_t>(completions[j].size()), prompt.columns.get()};
    }
    const auto F = static_cast<int64_t>(rewards_.size()), N = local_ * world_;
    // Every rank's rewards, lengths and truncation in one sum: [N x F rewards | N lengths | N truncated | failures].
    std::vector<double> gathered(static_cast<size_t>(N * (F + 2) + 1), 0.0);
    std::exception_ptr failure;  // a reward function's error: every rank stops, not only this one (the others would wait)
    try {
      for (int64_t f = 0; f < F; ++f) {
        const auto values = rewards_[static_cast<size_t>(f)]->score(scored);
        for (int64_t j = 0; j < local_; ++j) {
          const auto& v = values[static_cast<size_t>(j)];
          gathered[static_cast<size_t>((first + j) * F + f)] = v ? *v : std::numeric_limits<double>::quiet_NaN();
        }
      }
    } catch (...) {
      failure = std::current_exception();
      gathered.back() = 1;
    }
    for (int64_t j = 0; j < local_; ++j) {
      // Truncated (ms-swift's finish_reason "length") when the completion, its stop token counted, reached the limit.
      const auto length = static_cast<int64_t>(completions[static_cast<size_t>(j)].size());
      gathered[static_cast<size_t>(N * F + first + j)] = static_cast<double>(length);
      gathered[static_cast<size_t>(N * (F + 1) + first + j)] = length >= o.max_completion_length ? 1.0 : 0.0;
    }
    const double seconds[2] = {std::chrono::duration<double>(generated - started).count(),
                               std::chrono::duration<double>(std::chrono::steady_clock::now() - generated).count()};
    if (world_ > 1) gathered = s_.parallel->sum(gathered);  // NaN + 0 stays NaN: a missing reward stays missing
    if (failure) std::rethrow_exception(failure);
    SWIFT_CHECK(gathered.back() == 0, DataError, "a reward function failed on another rank (its log says why)",
                "fix what that rank reports; this rank stops with it");
    const at::Tensor all = at::tensor(gathered, at::kDouble);
    const at::Tensor rewards = all.narrow(0, 0, N * F).view({N, F}).to(at::kFloat);
    const at::Tensor lengths = all.narrow(0, N * F, N), truncated = all.narrow(0, N * (F + 1), N);
    const GroupAdvantages batch = group_advantages(rewards, o.reward_weights, o.num_generations, o.advantage_estimator, o.scale_rewards);
    record_figures(batch, rewards, lengths, truncated, seconds);

    // The buffer: prompt + completion, labels on the completion (its stop token included).
    const double tokens = lengths.sum().item<double>();
    const std::vector<double> advantages = host_values(batch.advantages);
    buffer_.assign(static_cast<size_t>(local_), data::Example{});
    for (int64_t j = 0; j < local_; ++j) {
      data::Example& e = buffer_[static_cast<size_t>(j)];
      const auto& prompt = inputs[static_cast<size_t>(j)];
      const auto& completion = completions[static_cast<size_t>(j)];
      e.input_ids = prompt;
      e.input_ids.insert(e.input_ids.end(), completion.begin(), completion.end());
      e.labels.assign(prompt.size(), -100);
      e.labels.insert(e.labels.end(), completion.begin(), completion.end());
      e.advantage = advantages[static_cast<size_t>(first + j)];
      e.truncated = gathered[static_cast<size_t>(N * (F + 1) + first + j)] > 0;
      e.rollout_round = round_;
      // dapo/cispo divide a step's token sums by the whole generation batch's completion tokens (ms-swift's
      // num_items_in_batch): each row carries its share, so that a step's rows on every rank add up to them.
      e.loss_units = tokens / static_cast<double>(s_.accumulation * world_ * s_.per_device_batch);
    }
    if (keep_old_logps_) score_at_generation();
    if (o.log_completions) log_completions(prompts, scored, host_values(rewards), advantages);
    ++round_;
  }

  // The next prompts_per_round prompts, in the data's (shuffled, seeded) order.
  std::vector<data::Example> draw_prompts() {
    while (static_cast<int64_t>(pending_.size()) < prompts_per_round_) pull();
    std::vector<data::Example> out(pending_.begin(), pending_.begin() + prompts_per_round_);
    consume(prompts_per_round_);
    return out;
  }
  // One micro-batch of prompts from the data into pending_; the data's state before it anchors a resume while any
  // of its prompts (or a later pull's) are pending.
  void pull() {
    if (pending_.empty()) {
      anchor_state_ = prompts_->state();
      anchor_skip_ = 0;
    }
    for (const data::Example* e : prompts_->next_micro_batch()) pending_.push_back(*e);
  }
  void consume(int64_t n) {
    pending_.erase(pending_.begin(), pending_.begin() + n);
    anchor_skip_ += n;
  }

  // The policy's log-probabilities of each completion as it was generated, for the updates that come after the
  // weights have moved (num_iterations > 1, or more micro-batches than one step takes).
  void score_at_generation() {
    torch::NoGradGuard no_grad;
    model::AutocastScope autocast(s_.policy->device().type(), s_.autocast);  // as the training pass scores them
    const auto pd = static_cast<size_t>(s_.per_device_batch);
    for (size_t start = 0; start < buffer_.size(); start += pd) {
      std::vector<const data::Example*> rows;
      for (size_t i = start; i < std::min(buffer_.size(), start + pd); ++i) rows.push_back(&buffer_[i]);
      const data::Batch b = data::collate(rows, 0);
      model::ForwardArgs args;
      args.input_ids = b.input_ids.to(s_.policy->device());
      const at::Tensor hidden = s_.policy->forward_hidden(args);
      const at::Tensor logps =
          token_logps_from_hidden(hidden, b.labels, [&](const at::Tensor& h) { return s_.policy->logits(h); }, s_.options.temperature)
              .to(at::kCPU)
              .contiguous();
      for (size_t r = 0; r < rows.size(); ++r) {
        data::Example& e = buffer_[start + r];
        const auto n = static_cast<int64_t>(e.input_ids.size()) - 1;
        const float* row = logps[static_cast<int64_t>(r)].data_ptr<float>();
        e.old_logps.assign(row, row + n);
      }
    }
  }

  // seconds: this rank's time generating and scoring the batch.
  void record_figures(const GroupAdvantages& batch, const at::Tensor& rewards, const at::Tensor& lengths, const at::Tensor& truncated,
                      const double (&seconds)[2]) {
    std::vector<std::string> reward_names;
    for (const auto& r : rewards_) reward_names.push_back(r->name());
    RolloutFigures& fig = *s_.figures;
    fig.names = rollout_figure_names(reward_names);
    std::vector<double>& values = fig.by_round[round_];
    values.assign(fig.names.size(), std::numeric_limits<double>::quiet_NaN());
    while (fig.by_round.size() > 4) fig.by_round.erase(fig.by_round.begin());  // a step spans at most a few
    const auto set = [&](const std::string& name, double v) {
      const auto it = std::find(fig.names.begin(), fig.names.end(), name);
      if (it != fig.names.end()) values[static_cast<size_t>(it - fig.names.begin())] = v;
    };
    for (const auto& [name, v] : reward_metrics(batch, rewards, reward_names, s_.options.num_generations, s_.options.scale_rewards))
      set(name, v);
    set("completions/mean_length", lengths.mean().item<double>());
    set("completions/min_length", lengths.min().item<double>());
    set("completions/max_length", lengths.max().item<double>());
    set("completions/clipped_ratio", truncated.mean().item<double>());
    set("time/generation", seconds[0]);
    set("time/scoring", seconds[1]);
  }

  // completions.jsonl (--log_completions): one line per generation batch, ms-swift's columns (each a list over the
  // batch's completions): step, prompt, completion, each reward under its function's name, advantages, and the
  // rows' solution when every row has one. Every rank's share goes to rank 0.
  // rewards: [N x F] row-major; advantages: [N].
  void log_completions(const std::vector<data::Example>& prompts, const std::vector<ScoredCompletion>& scored,
                       const std::vector<double>& rewards, const std::vector<double>& advantages) {
    nlohmann::json mine = nlohmann::json::array();
    for (int64_t j = 0; j < local_; ++j) {
      const auto& prompt = prompts[static_cast<size_t>((rank_ * local_ + j) / s_.options.num_generations)];
      const nlohmann::json* columns = prompt.columns.get();
      mine.push_back({s_.tokenizer->decode(prompt.input_ids), scored[static_cast<size_t>(j)].text,
                      columns && columns->contains("solution") ? (*columns)["solution"] : nlohmann::json(nullptr)});
    }
    std::vector<nlohmann::json> shares{mine};
    if (world_ > 1) {
      shares.clear();
      for (int r = 0; r < world_; ++r)
        shares.push_back(nlohmann::json::parse(
            s_.parallel->share("grpo/completions/" + std::to_string(round_) + "/" + std::to_string(r), mine.dump(), r)));
    }
    if (!s_.parallel->main_rank() || !s_.run_dir || s_.run_dir->empty()) return;
    nlohmann::ordered_json line;
    nlohmann::json prompt_texts = nlohmann::json::array(), texts = nlohmann::json::array(), solutions = nlohmann::json::array();
    bool every_solution = true;
    for (const auto& share : shares)
      for (const auto& row : share) {
        prompt_texts.push_back(row[0]);
        texts.push_back(row[1]);
        solutions.push_back(row[2]);
        every_solution = every_solution && !row[2].is_null();
      }
    const auto N = static_cast<int64_t>(texts.size());
    line["step"] = std::vector<std::string>(static_cast<size_t>(N), std::to_string(round_ + 1));
    line["prompt"] = prompt_texts;
    line["completion"] = texts;
    for (size_t f = 0; f < rewards_.size(); ++f) {
      nlohmann::json column = nlohmann::json::array();
      for (size_t i = 0; i < static_cast<size_t>(N); ++i) {
        const auto v = static_cast<float>(rewards[i * rewards_.size() + f]);  // the float the advantages came from
        column.push_back(std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v));
      }
      line[rewards_[f]->name()] = column;
    }
    line["advantages"] = advantages;
    if (every_solution) line["solution"] = solutions;
    if (!completions_log_) completions_log_.emplace(*s_.run_dir / "completions.jsonl");
    completions_log_->write(line);
  }

  std::unique_ptr<data::TrainData> prompts_;
  RolloutSetup s_;
  std::vector<std::unique_ptr<RewardFunction>> rewards_;
  int64_t steps_per_generation_ = 1, local_ = 1, prompts_per_round_ = 1;
  int world_ = 1, rank_ = 0;
  bool keep_old_logps_ = false;
  std::optional<int64_t> batches_per_epoch_;
  std::deque<data::Example> pending_;  // prompts drawn from the data, not yet generated for
  std::vector<data::Example> buffer_;  // this rank's completions of the current generation batch
  int64_t round_ = 0, position_ = 0;   // generation batches made; micro-batches served
  nlohmann::json anchor_state_;        // the prompts' state before the pull of pending_'s first prompt
  int64_t anchor_skip_ = 0;            // prompts used since that pull
  std::optional<train::JsonlLog> completions_log_;
};

}  // namespace

std::unique_ptr<data::TrainData> rollout_data(std::unique_ptr<data::TrainData> prompts, RolloutSetup setup) {
  return std::make_unique<RolloutData>(std::move(prompts), std::move(setup));
}

}  // namespace swift::rlhf
