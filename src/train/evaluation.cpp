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
  parallel.begin_evaluation();
  for (size_t round = 0, b = static_cast<size_t>(parallel.data_parallel_rank()); b < batches || round < rounds; ++round, b += world) {
    const bool stand_in = b >= batches;
    const size_t start = stand_in ? 0 : b * bs;
    std::vector<const data::Example*> items;
    for (size_t i = start; i < std::min(examples.size(), start + bs); ++i) items.push_back(&examples[i]);
    const auto batch = objective.collate(items, pad_id);
    model::AutocastScope scope(model->device().type(), autocast);
    auto result = objective.compute(model, batch);
    if (!stand_in) window.add(result.metrics);
  }
  parallel.end_evaluation();
  model->train();
  window.reduce(parallel);
  auto values = window.values();
  objective.derive_metrics(values);
  return values;
}

}  // namespace swift::train
