// Sums of the logged metrics over a window of micro-batches (between two log lines, or over an evaluation), the
// same names on every rank so that every rank reduces the same values, even one that had no micro-batch.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

#include "swift/distributed/parallel_strategy.h"

namespace swift::train {

class MetricWindow {
 public:
  explicit MetricWindow(std::vector<std::string> names);
  // One micro-batch's [n, 2] metrics (MicroBatchResult::metrics): one copy to the host.
  void add(const at::Tensor& metrics);
  // Summed over the ranks that train on different samples.
  void reduce(distributed::ParallelStrategy& parallel);
  // name -> sum / count, in order; a metric nothing was counted for is left out (as TRL's KTO log leaves out a
  // side without replies), except the loss. A total (counted -1 per micro-batch, MicroBatchResult::metrics) is its
  // sum / `steps`: per optimizer step over the `steps` the window spans (1: the whole window).
  std::vector<std::pair<std::string, double>> values(int64_t steps = 1) const;
  void clear();

 private:
  std::vector<std::string> names_;
  std::vector<double> sums_;  // (sum, count) per name
};

}  // namespace swift::train
