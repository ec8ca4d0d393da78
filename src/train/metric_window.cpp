// Logged metrics summed over a window (see metric_window.h).
#include "swift/train/metric_window.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace swift::train {

MetricWindow::MetricWindow(std::vector<std::string> names) : names_(std::move(names)), sums_(2 * names_.size(), 0.0) {}

void MetricWindow::add(const at::Tensor& metrics) {
  const at::Tensor host = metrics.to(at::kCPU, at::kDouble).contiguous();
  TORCH_CHECK(host.numel() == static_cast<int64_t>(sums_.size()), "an objective reported ", host.numel() / 2,
              " metrics for ", names_.size(), " metric_names()");
  const double* v = host.data_ptr<double>();
  for (size_t i = 0; i < sums_.size(); ++i) sums_[i] += v[i];
}

void MetricWindow::reduce(distributed::ParallelStrategy& parallel) { sums_ = parallel.sum_metrics(sums_); }

std::vector<std::pair<std::string, double>> MetricWindow::values(int64_t steps) const {
  std::vector<std::pair<std::string, double>> out;
  for (size_t i = 0; i < names_.size(); ++i) {
    const double sum = sums_[2 * i], count = sums_[2 * i + 1];
    if (count < 0) out.emplace_back(names_[i], sum / static_cast<double>(std::max<int64_t>(steps, 1)));
    else if (count != 0 || names_[i] == "loss") out.emplace_back(names_[i], count != 0 ? sum / count : 0.0);
  }
  return out;
}

void MetricWindow::clear() { std::fill(sums_.begin(), sums_.end(), 0.0); }

}  // namespace swift::train
