// What a training command trains for: how a micro-batch is collated, what its loss is a mean over, and which
// metrics it logs. sft/pt's causal LM loss and rlhf's preference objectives implement it; the trainer
// (train/trainer.h) runs any of them the same way.
#pragma once

#include <ATen/core/Tensor.h>

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "swift/data/batch.h"
#include "swift/model/decoder.h"

namespace swift::train {

struct MicroBatchResult {
  // Divided by the step's normaliser (the units() of all its micro-batches on all ranks) before backward.
  at::Tensor loss;
  // [n, 2] float64, detached, on any device: each of metric_names()' (sum, count) in order. A logged value is the
  // ratio of the two summed over the logging window and the ranks: the loss per token is (summed loss, tokens), a
  // per-micro-batch mean is (value, 1). A count of -1 marks a total: its sums are logged per optimizer step (for an
  // evaluation, over the whole evaluation), as the tokens each expert was routed. The trainer reads it in one copy
  // after queueing the backward.
  at::Tensor metrics;
  // Added to the loss after that division, as it is (the mixture-of-experts auxiliary loss, which transformers adds
  // to every micro-batch's loss unnormalised), and to the logged loss likewise; undefined: nothing.
  at::Tensor unnormalised_loss;
};

// Pipeline parallelism: what a stage before the last computes for a micro-batch.
struct StageResult {
  StageResult(at::Tensor out = {}) : output(std::move(out)) {}  // NOLINT(google-explicit-constructor): most give only this
  at::Tensor output;  // the hidden states it sends to the next stage
  // Undefined, or the loss its own layers add (Megatron's load-balancing loss of its sparse layers), to be divided by
  // the step's normaliser as MicroBatchResult::loss; its backward runs with the output's.
  at::Tensor loss;
  // Undefined, or [n, 2] as MicroBatchResult::metrics: the (sum, count) of what its layers report, (0, 0) in the
  // other rows. Every stage's are summed.
  at::Tensor metrics;
};

class TrainingObjective {
 public:
  virtual ~TrainingObjective() = default;
  // Examples -> one padded micro-batch.
  virtual data::Batch collate(const std::vector<const data::Example*>& items, int64_t pad_id) const = 0;
  // What the step's loss is a mean over, counted in this micro-batch: its label tokens (sft, a token mean over
  // the whole step), or 1 (preference losses: a mean over each micro-batch's pairs, then over micro-batches; 1/n
  // on each of the n context-parallel ranks sharing its rows).
  virtual double units(const data::Batch& batch) const = 0;
  // Everything compute() reports, in the order it is logged ("loss" first: the loss curve reads it).
  virtual std::vector<std::string> metric_names() const = 0;
  // For the memory estimate: sequences per example that keep activations for the backward (pairs: 2), and the
  // bytes of any other model the objective holds (a loaded reference model).
  virtual int64_t sequences_per_example() const { return 1; }
  virtual int64_t extra_weight_bytes() const { return 0; }
  // Values logged next to them that are computed from them (KTO's rewards/margins); appended in place.
  virtual void derive_metrics(std::vector<std::pair<std::string, double>>& values) const { (void)values; }
  // The forward pass(es) of one micro-batch and its loss; runs under the job's autocast, with or without grad.
  // Under pipeline parallelism only on the last stage, the model continuing from the previous stage's output.
  virtual MicroBatchResult compute(model::CausalLM& policy, const data::Batch& batch) = 0;
  // Pipeline parallelism, a stage before the last: what compute()'s forward with gradients runs through this stage's
  // layers (its inputs: the rows, masks and positions compute() gives the policy). Default: forward_args(batch).
  virtual StageResult stage_output(model::CausalLM& policy, const data::Batch& batch);

  // Forward passes without gradients whose results compute() reads (a reference model's log-probabilities, the
  // policy's on other rows): the job runs them over a step's (or an evaluation round's) micro-batches before
  // compute(), each pass as the strategy runs micro-batches, so that under pipeline parallelism they go through
  // every stage too (run_frozen_passes, below). 0: none.
  virtual int frozen_passes() const { return 0; }
  // Pass `pass` of one micro-batch through this rank's layers: the hidden states (on a stage before the last, what
  // it sends on).
  virtual at::Tensor frozen_hidden(int pass, model::CausalLM& policy, const data::Batch& batch) {
    (void)pass, (void)policy, (void)batch;
    return {};
  }
  // On the last stage: keeps what compute() will read of pass `pass` from its final hidden states, in order.
  virtual void keep_frozen(int pass, model::CausalLM& policy, const data::Batch& batch, const at::Tensor& hidden) {
    (void)pass, (void)policy, (void)batch, (void)hidden;
  }
};

}  // namespace swift::train

namespace swift::distributed {
class ParallelStrategy;
}

namespace swift::train {

// Runs `objective`'s frozen passes over `batches` (null: a micro-batch this rank sits out) as `parallel` runs
// micro-batches, without gradients and under `autocast`; each kept result is read by the compute() of its
// micro-batch, in the same order.
void run_frozen_passes(TrainingObjective& objective, model::CausalLM& policy, distributed::ParallelStrategy& parallel,
                       const std::vector<const data::Batch*>& batches, std::optional<c10::ScalarType> autocast);

}  // namespace swift::train
