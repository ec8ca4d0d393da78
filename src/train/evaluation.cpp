// Evaluation over the validation examples (see evaluation.h).
#include "swift/train/evaluation.h"

#include <ATen/core/grad_mode.h>

#include <algorithm>

#include "swift/model/autocast.h"
#include "swift/train/metric_window.h"

namespace swift::train {

std::vector<std::pair<std::string, double>> evaluate(model::CausalLM& model, TrainingObjective& objective,
                                                     distributed::ParallelStrategy& parallel,
                                                     const std::vector<data::Example>& examples, int64_t batch_size,
                                                     int64_t pad_id, std::optional<c10::ScalarType> autocast) {
  at::NoGradGuard no_grad;
  model->eval();
  MetricWindow window(objective.metric_names());
  const size_t bs = static_cast<size_t>(batch_size), world = static_cast<size_t>(parallel.data_parallel_size());
  const size_t batches = (examples.size() + bs - 1) / bs;
  const size_t rounds = parallel.computes_empty_slices() ? (batches + world - 1) / world : 0;
  // Each round is one micro-batch per rank, run as the strategy runs them (a pipeline passes it through its stages).
  class EvaluationBatch : public distributed::MicroBatches {
   public:
    EvaluationBatch(model::CausalLM& model, TrainingObjective& objective, const data::Batch& batch,
                    std::optional<c10::ScalarType> autocast)
        : model_(model), objective_(objective), batch_(batch), autocast_(autocast) {}
    size_t size() const override { return 1; }
    bool present(size_t) const override { return true; }
    at::Tensor loss(size_t) override {
      model::AutocastScope scope(model_->device().type(), autocast_);
      auto result = objective_.compute(model_, batch_);
      add(result.metrics);
      return result.loss;
    }
    at::Tensor stage_output(size_t) override {
      model::AutocastScope scope(model_->device().type(), autocast_);
      StageResult stage = objective_.stage_output(model_, batch_);
      add(stage.metrics);
      return stage.output;
    }
    // Under interleaved pipeline parallelism a rank runs a stage before the last and the last: both report.
    void add(const at::Tensor& m) {
      if (m.defined()) metrics = metrics.defined() ? metrics + m.to(metrics.device()) : m;
    }
    at::Tensor metrics;  // undefined on a pipeline stage before the last whose layers report nothing

   private:
    model::CausalLM& model_;
    TrainingObjective& objective_;
    const data::Batch& batch_;
    std::optional<c10::ScalarType> autocast_;
  };
  parallel.begin_forward_only();
  for (size_t round = 0, b = static_cast<size_t>(parallel.data_parallel_rank()); b < batches || round < rounds; ++round, b += world) {
    const bool stand_in = b >= batches;
    const size_t start = stand_in ? 0 : b * bs;
    std::vector<const data::Example*> items;
    for (size_t i = start; i < std::min(examples.size(), start + bs); ++i) items.push_back(&examples[i]);
    const auto batch = parallel.local_sequences(objective.collate(items, pad_id));
    run_frozen_passes(objective, model, parallel, {&batch}, autocast);
    EvaluationBatch one(model, objective, batch, autocast);
    parallel.run_micro_batches(one, /*backward=*/false);
    if (!stand_in && one.metrics.defined()) window.add(one.metrics);
  }
  parallel.end_forward_only();
  model->train();
  window.reduce(parallel);
  auto values = window.values();
  objective.derive_metrics(values);
  return values;
}

}  // namespace swift::train
