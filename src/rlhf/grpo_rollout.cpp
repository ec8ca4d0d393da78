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
#include <numeric>

#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/data/batch.h"
#include "swift/distributed/parallel_strategy.h"
#include "swift/model/autocast.h"
#include "swift/rlhf/rollout_generation.h"
#include "swift/rlhf/reward_model_scorer.h"
#include "swift/template/template.h"
#include "swift/tokenizer/tokenizer.h"
#include "swift/train/run_dir.h"
#include "swift/tuners/lora.h"

namespace swift::rlhf {

std::vector<std::string> rollout_figure_names(const std::vector<std::string>& reward_names, bool kl_in_reward) {
  std::vector<std::string> names{"reward", "reward_std", "frac_reward_zero_std"};
  if (kl_in_reward) names.emplace_back("kl");
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
    for (const auto& spec : o.reward_models) rewards_.push_back(reward_model_scorer(spec, s_.reward_model_load, s_.per_device_batch));
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
    in_memory_ = in_memory;
    if (o.dynamic_sample) resample_.emplace(in_memory->size(), prompts_per_round_, s_.seed + 1);
    gather_completions_ = world_ > 1 && (o.dynamic_sample || o.log_completions);
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
    nlohmann::json state = {{"kind", "grpo_rollouts"}, {"prompts", pending_.empty() ? prompts_->state() : anchor_state_},
                            {"skip", pending_.empty() ? 0 : anchor_skip_}, {"round", round_}, {"position", position_}};
    if (resample_) state["resample"] = {{"epoch", resample_->epoch()}, {"position", resample_->position()}};
    return state;
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
    if (resample_ && state.contains("resample"))
      resample_->set_position(state["resample"].at("epoch").get<int64_t>(), state["resample"].at("position").get<size_t>());
  }

 private:
  // One generation batch's completions, every rank's (each rank holds them all): groups of num_generations rows,
  // row i answering prompts[i / num_generations].
  struct Candidates {
    std::vector<data::Example> prompts;             // one per group
    // Each row's tokens, its stop token kept: this rank's rows, and every rank's when gather_completions_.
    std::vector<std::vector<int64_t>> completions;
    std::vector<int64_t> lengths;                   // each row's completion tokens
    std::vector<float> rewards;                     // [rows x functions], NaN where a function gave none
  };

  // One generation batch: generated, scored, (dynamic sampling) its equal-reward groups replaced, the advantages,
  // and this rank's share in the buffer.
  void generate() {
    seconds_[0] = seconds_[1] = 0;
    Candidates batch = sample(draw_prompts(), 0);
    if (s_.options.dynamic_sample) batch = keep_varied_groups(std::move(batch));
    train_on(batch);
    ++round_;
  }

  // This rank's completions of `prompts` (attempt: 0, or a resampling's count), scored; every rank's gathered.
  Candidates sample(std::vector<data::Example> prompts, int64_t attempt) {
    const GrpoOptions& o = s_.options;
    // This rank's completions: global rows [rank x local, (rank + 1) x local), row i answering prompt i / G.
    const int64_t first = rank_ * local_;
    std::vector<std::vector<int64_t>> inputs;
    for (int64_t i = first; i < first + local_; ++i) inputs.push_back(prompts[static_cast<size_t>(i / o.num_generations)].input_ids);
    model::SamplingParams params = rollout_sampling(o, s_.stop_token_ids);
    // Each completion its own seed, from its place in the whole generation batch (and the resampling it belongs
    // to): the same completions whatever ranks share the batch.
    const uint64_t seed = s_.seed + 0x632be59bd9b4e019ULL * static_cast<uint64_t>(attempt);
    for (int64_t i = first; i < first + local_; ++i) params.row_seeds.push_back(generation_seed(seed, round_, i));
    const auto started = std::chrono::steady_clock::now();
    std::vector<GeneratedCompletion> generated_rows = generate_completions(s_.policy, inputs, params, s_.autocast);
    const auto generated = std::chrono::steady_clock::now();
    // Score: decoded text without the stop token (as ms-swift decodes), token count with it.
    std::vector<std::vector<int64_t>> completions(inputs.size());
    std::vector<ScoredCompletion> scored(inputs.size());
    for (size_t j = 0; j < inputs.size(); ++j) {
      const auto& prompt = prompts[static_cast<size_t>((first + static_cast<int64_t>(j)) / o.num_generations)];
      scored[j] = {s_.tokenizer->decode(generated_rows[j].text_tokens()), static_cast<int64_t>(generated_rows[j].tokens.size()),
                   prompt.columns.get()};
      completions[j] = std::move(generated_rows[j].tokens);
    }
    const auto F = static_cast<int64_t>(rewards_.size()), N = local_ * world_;
    const int64_t L = gather_completions_ ? o.max_completion_length : 0;
    // Every rank's rewards, lengths and (when needed) completions in one sum:
    // [N x F rewards | N lengths | N x L tokens + 1 (0: none) | failures].
    std::vector<double> gathered(static_cast<size_t>(N * (F + 1 + L) + 1), 0.0);
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
      const auto& tokens = completions[static_cast<size_t>(j)];
      gathered[static_cast<size_t>(N * F + first + j)] = static_cast<double>(tokens.size());
      if (L == 0) continue;
      for (size_t t = 0; t < tokens.size(); ++t)
        gathered[static_cast<size_t>(N * (F + 1) + (first + j) * L) + t] = static_cast<double>(tokens[t] + 1);
    }
    seconds_[0] += std::chrono::duration<double>(generated - started).count();
    seconds_[1] += std::chrono::duration<double>(std::chrono::steady_clock::now() - generated).count();
    if (world_ > 1) gathered = s_.parallel->sum(gathered);  // NaN + 0 stays NaN: a missing reward stays missing
    if (failure) std::rethrow_exception(failure);
    SWIFT_CHECK(gathered.back() == 0, DataError, "a reward function failed on another rank (its log says why)",
                "fix what that rank reports; this rank stops with it");
    Candidates out;
    out.prompts = std::move(prompts);
    out.rewards.assign(gathered.begin(), gathered.begin() + N * F);
    for (int64_t i = 0; i < N; ++i) out.lengths.push_back(static_cast<int64_t>(gathered[static_cast<size_t>(N * F + i)]));
    out.completions.resize(static_cast<size_t>(N));
    for (int64_t j = 0; j < local_; ++j) out.completions[static_cast<size_t>(first + j)] = std::move(completions[static_cast<size_t>(j)]);
    for (int64_t i = 0; i < N && L > 0; ++i) {
      if (i >= first && i < first + local_) continue;
      for (int64_t t = 0; t < L; ++t) {
        const double v = gathered[static_cast<size_t>(N * (F + 1) + i * L + t)];
        if (v == 0) break;
        out.completions[static_cast<size_t>(i)].push_back(static_cast<int64_t>(v) - 1);
      }
    }
    return out;
  }

  // DAPO's dynamic sampling (ms-swift's _dynamic_sampling): the groups whose weighted rewards differ are kept, and
  // generation batches of other prompts (a stream of their own, seeded --seed + 1 as ms-swift's) fill the batch, at
  // most --max_resample_times of them. Short of a full batch, the first one trains as it is.
  Candidates keep_varied_groups(Candidates first) {
    const GrpoOptions& o = s_.options;
    const auto G = static_cast<size_t>(o.num_generations), F = rewards_.size();
    Candidates kept;
    const auto keep_varied = [&](const Candidates& c) {
      for (size_t g = 0; g < c.prompts.size() && static_cast<int64_t>(kept.prompts.size()) < prompts_per_round_; ++g) {
        std::vector<double> sums(G, 0.0);
        for (size_t i = 0; i < G; ++i)
          for (size_t f = 0; f < F; ++f) {
            const float v = c.rewards[(g * G + i) * F + f];
            if (!std::isnan(v)) sums[i] += static_cast<double>(v) * o.reward_weights[f];
          }
        if (std::all_of(sums.begin(), sums.end(), [&](double v) { return v == sums.front(); })) continue;
        kept.prompts.push_back(c.prompts[g]);
        for (size_t i = 0; i < G; ++i) {
          kept.completions.push_back(c.completions[g * G + i]);
          kept.lengths.push_back(c.lengths[g * G + i]);
        }
        kept.rewards.insert(kept.rewards.end(), c.rewards.begin() + static_cast<std::ptrdiff_t>(g * G * F),
                            c.rewards.begin() + static_cast<std::ptrdiff_t>((g + 1) * G * F));
      }
    };
    keep_varied(first);
    int64_t attempts = 0;
    while (static_cast<int64_t>(kept.prompts.size()) < prompts_per_round_ && attempts < o.max_resample_times)
      keep_varied(sample(draw_resample_prompts(), ++attempts));
    if (static_cast<int64_t>(kept.prompts.size()) == prompts_per_round_) {
      if (attempts > 0)
        log_info("grpo --dynamic_sample: generation batch ", round_ + 1, " filled with ", attempts, " resampling",
                 attempts == 1 ? "" : "s", " (groups with equal rewards replaced)");
      return kept;
    }
    log_warn("grpo --dynamic_sample: ", kept.prompts.size(), " of the ", prompts_per_round_, " groups have differing rewards after ",
             attempts, " resampling", attempts == 1 ? "" : "s", " (--max_resample_times); this generation batch trains as first generated");
    return first;
  }

  // The buffer this rank trains on: its share of `batch` with the advantages (and, where asked, the log-
  // probabilities at generation and the KL to the reference).
  void train_on(const Candidates& batch) {
    const GrpoOptions& o = s_.options;
    const auto N = static_cast<int64_t>(batch.lengths.size()), F = static_cast<int64_t>(rewards_.size());
    const int64_t first = rank_ * local_;
    std::vector<float> reward_values = batch.rewards;
    const at::Tensor rewards = at::from_blob(reward_values.data(), {N, F}, at::kFloat).clone();
    std::vector<double> lengths(static_cast<size_t>(N)), truncated(static_cast<size_t>(N));
    for (int64_t i = 0; i < N; ++i) {
      // Truncated (ms-swift's finish_reason "length") when the completion, its stop token counted, reached the limit.
      lengths[static_cast<size_t>(i)] = static_cast<double>(batch.lengths[static_cast<size_t>(i)]);
      truncated[static_cast<size_t>(i)] = lengths[static_cast<size_t>(i)] >= static_cast<double>(o.max_completion_length) ? 1.0 : 0.0;
    }
    // The buffer: prompt + completion, labels on the completion (its stop token included).
    buffer_.assign(static_cast<size_t>(local_), data::Example{});
    for (int64_t j = 0; j < local_; ++j) {
      data::Example& e = buffer_[static_cast<size_t>(j)];
      const auto& prompt = batch.prompts[static_cast<size_t>((first + j) / o.num_generations)].input_ids;
      const auto& completion = batch.completions[static_cast<size_t>(first + j)];
      e.input_ids = prompt;
      e.input_ids.insert(e.input_ids.end(), completion.begin(), completion.end());
      e.labels.assign(prompt.size(), -100);
      e.labels.insert(e.labels.end(), completion.begin(), completion.end());
      e.truncated = truncated[static_cast<size_t>(first + j)] > 0;
      e.rollout_round = round_;
      // dapo/cispo divide a step's token sums by the whole generation batch's completion tokens (ms-swift's
      // num_items_in_batch): each row carries its share, so that a step's rows on every rank add up to them.
      e.loss_units = std::accumulate(lengths.begin(), lengths.end(), 0.0) / static_cast<double>(s_.accumulation * world_ * s_.per_device_batch);
    }
    std::vector<double> kl;  // --kl_in_reward: each completion's summed log-ratio to the reference, every rank's
    if (keep_old_logps_ || o.kl_in_reward) {
      const std::vector<double> mine = score_at_generation();
      if (o.kl_in_reward) {
        kl.assign(static_cast<size_t>(N), 0.0);
        std::copy(mine.begin(), mine.end(), kl.begin() + first);
        if (world_ > 1) kl = s_.parallel->sum(kl);
      }
    }
    const at::Tensor kl_penalty = kl.empty() ? at::Tensor() : o.loss.beta * at::tensor(kl, at::kDouble).to(at::kFloat);
    const GroupAdvantages advantages =
        group_advantages(rewards, o.reward_weights, o.num_generations, o.advantage_estimator, o.scale_rewards, kl_penalty);
    const std::vector<double> advantage_values = host_values(advantages.advantages);
    for (int64_t j = 0; j < local_; ++j) buffer_[static_cast<size_t>(j)].advantage = advantage_values[static_cast<size_t>(first + j)];
    record_figures(advantages, rewards, lengths, truncated, kl);
    if (o.log_completions) log_completions(batch, advantage_values);
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
  // --dynamic_sample's prompts: prompts_per_round from their own shuffled stream over the dataset.
  std::vector<data::Example> draw_resample_prompts() {
    std::vector<data::Example> out;
    while (static_cast<int64_t>(out.size()) < prompts_per_round_)
      for (const size_t i : resample_->next())
        if (static_cast<int64_t>(out.size()) < prompts_per_round_) out.push_back(in_memory_->example(i));
    return out;
  }

  // The policy's log-probabilities of each completion as it was generated, kept for the updates that come after
  // the weights have moved (num_iterations > 1, or more micro-batches than one step takes); with --kl_in_reward,
  // each completion's KL to the reference (ms-swift's: the log-ratio summed over the completion), returned.
  std::vector<double> score_at_generation() {
    torch::NoGradGuard no_grad;
    model::AutocastScope autocast(s_.policy->device().type(), s_.autocast);  // as the training pass scores them
    const double temperature = s_.options.temperature;
    const auto pd = static_cast<size_t>(s_.per_device_batch);
    std::vector<double> kl;
    for (size_t start = 0; start < buffer_.size(); start += pd) {
      std::vector<const data::Example*> rows;
      for (size_t i = start; i < std::min(buffer_.size(), start + pd); ++i) rows.push_back(&buffer_[i]);
      const data::Batch b = data::collate(rows, 0);
      model::ForwardArgs args;
      args.input_ids = b.input_ids.to(s_.policy->device());
      const at::Tensor hidden = s_.policy->forward_hidden(args);
      const at::Tensor logps =
          token_logps_from_hidden(hidden, b.labels, [&](const at::Tensor& h) { return s_.policy->logits(h); }, temperature);
      if (keep_old_logps_) {
        const at::Tensor host = logps.to(at::kCPU).contiguous();
        for (size_t r = 0; r < rows.size(); ++r) {
          data::Example& e = buffer_[start + r];
          const auto n = static_cast<int64_t>(e.input_ids.size()) - 1;
          const float* row = host[static_cast<int64_t>(r)].data_ptr<float>();
          e.old_logps.assign(row, row + n);
        }
      }
      if (!s_.options.kl_in_reward) continue;
      SWIFT_ASSERT(s_.reference, "--kl_in_reward needs the reference (set when the objective is made)");
      at::Tensor ref_logps;
      if (*s_.reference) {
        model::CausalLM& reference = *s_.reference;
        const at::Tensor h = reference->forward_hidden(args);
        ref_logps = token_logps_from_hidden(h, b.labels, [&](const at::Tensor& x) { return reference->logits(x); }, temperature);
      } else {
        tuners::AdaptersDisabled base(s_.policy);  // LoRA: the base model is the reference
        const at::Tensor h = s_.policy->forward_hidden(args);
        ref_logps = token_logps_from_hidden(h, b.labels, [&](const at::Tensor& x) { return s_.policy->logits(x); }, temperature);
      }
      const at::Tensor mask = completion_mask(b.labels).to(logps.device());
      const std::vector<double> sums = host_values(((logps - ref_logps) * mask).sum(1));
      kl.insert(kl.end(), sums.begin(), sums.end());
    }
    return kl;
  }

  // ms-swift's figures of the generation batch; kl: every completion's (--kl_in_reward), else empty.
  void record_figures(const GroupAdvantages& batch, const at::Tensor& rewards, const std::vector<double>& lengths,
                      const std::vector<double>& truncated, const std::vector<double>& kl) {
    std::vector<std::string> reward_names;
    for (const auto& r : rewards_) reward_names.push_back(r->name());
    RolloutFigures& fig = *s_.figures;
    fig.names = rollout_figure_names(reward_names, s_.options.kl_in_reward);
    std::vector<double>& values = fig.by_round[round_];
    values.assign(fig.names.size(), std::numeric_limits<double>::quiet_NaN());
    // A step's micro-batches are all drawn before any is trained on: keep every generation batch a step can span.
    const auto kept = static_cast<size_t>(s_.accumulation / steps_per_generation_ + 4);
    while (fig.by_round.size() > kept) fig.by_round.erase(fig.by_round.begin());
    const auto set = [&](const std::string& name, double v) {
      const auto it = std::find(fig.names.begin(), fig.names.end(), name);
      if (it != fig.names.end()) values[static_cast<size_t>(it - fig.names.begin())] = v;
    };
    for (const auto& [name, v] : reward_metrics(batch, rewards, reward_names, s_.options.num_generations, s_.options.scale_rewards))
      set(name, v);
    const auto n = static_cast<double>(lengths.size());
    set("completions/mean_length", std::accumulate(lengths.begin(), lengths.end(), 0.0) / n);
    set("completions/min_length", *std::min_element(lengths.begin(), lengths.end()));
    set("completions/max_length", *std::max_element(lengths.begin(), lengths.end()));
    set("completions/clipped_ratio", std::accumulate(truncated.begin(), truncated.end(), 0.0) / n);
    if (!kl.empty()) set("kl", std::accumulate(kl.begin(), kl.end(), 0.0) / static_cast<double>(kl.size()));
    set("time/generation", seconds_[0]);
    set("time/scoring", seconds_[1]);
  }

  // completions.jsonl (--log_completions), written by rank 0 (gather_completions_: it holds them all): one line per
  // generation batch, ms-swift's columns (each a list over the batch's completions): step, prompt, completion, each
  // reward under its function's name, advantages, and the rows' solution when every row has one.
  void log_completions(const Candidates& batch, const std::vector<double>& advantages) {
    if (!s_.parallel->main_rank() || !s_.run_dir || s_.run_dir->empty()) return;
    const auto N = batch.completions.size(), G = static_cast<size_t>(s_.options.num_generations);
    nlohmann::ordered_json line;
    nlohmann::json prompt_texts = nlohmann::json::array(), texts = nlohmann::json::array(), solutions = nlohmann::json::array();
    bool every_solution = true;
    for (size_t i = 0; i < N; ++i) {
      const data::Example& prompt = batch.prompts[i / G];
      std::vector<int64_t> completion = batch.completions[i];
      const auto& stops = s_.stop_token_ids;
      if (!completion.empty() && std::find(stops.begin(), stops.end(), completion.back()) != stops.end())
        completion.pop_back();  // decoded without its stop token, as it was scored
      prompt_texts.push_back(s_.tokenizer->decode(prompt.input_ids));
      texts.push_back(s_.tokenizer->decode(completion));
      const nlohmann::json* columns = prompt.columns.get();
      const bool solved = columns && columns->contains("solution");
      solutions.push_back(solved ? (*columns)["solution"] : nlohmann::json(nullptr));
      every_solution = every_solution && solved;
    }
    line["step"] = std::vector<std::string>(N, std::to_string(round_ + 1));
    line["prompt"] = prompt_texts;
    line["completion"] = texts;
    for (size_t f = 0; f < rewards_.size(); ++f) {
      nlohmann::json column = nlohmann::json::array();
      for (size_t i = 0; i < N; ++i) {
        const float v = batch.rewards[i * rewards_.size() + f];  // the float the advantages came from
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
  const data::InMemoryData* in_memory_ = nullptr;  // the prompts, for --dynamic_sample's own stream over them
  std::optional<data::BatchSampler> resample_;     // --dynamic_sample's stream
  double seconds_[2] = {0, 0};                     // this generation batch's time generating and scoring (this rank)
  // Every rank holds every completion's tokens (dynamic sampling regroups them; rank 0 logs them all).
  bool gather_completions_ = false;
};

}  // namespace

std::unique_ptr<data::TrainData> rollout_data(std::unique_ptr<data::TrainData> prompts, RolloutSetup setup) {
  return std::make_unique<RolloutData>(std::move(prompts), std::move(setup));
}

}  // namespace swift::rlhf
