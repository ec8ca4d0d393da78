// The run folder's pictures (see run_images.h).
#include "swift/train/run_images.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace swift::train {

std::vector<double> tensorboard_smoothing(const std::vector<double>& values, double weight) {
  std::vector<double> out;
  out.reserve(values.size());
  double x = 0, norm = 0;
  for (double v : values) {
    x = x * weight + v;
    norm = norm * weight + 1;
    out.push_back(x / norm);
  }
  return out;
}

namespace {

// tensorboard_smoothing over the finite values only, as TensorBoard's own charts smooth: one NaN loss gaps the
// smoothed curve there instead of turning the rest of it into NaN.
std::vector<double> smooth_finite(const std::vector<double>& values) {
  std::vector<double> finite;
  for (double v : values)
    if (std::isfinite(v)) finite.push_back(v);
  const std::vector<double> smoothed = tensorboard_smoothing(finite, kSmoothingWeight);
  std::vector<double> out(values.size(), std::numeric_limits<double>::quiet_NaN());
  for (size_t i = 0, k = 0; i < values.size(); ++i)
    if (std::isfinite(values[i])) out[i] = smoothed[k++];
  return out;
}

}  // namespace

void ScalarHistory::add(const std::string& tag, int64_t step, double value) {
  auto [it, added] = index_.try_emplace(tag, series_.size());
  if (added) series_.push_back({tag, {}, {}});
  auto& s = series_[it->second];
  s.steps.push_back(static_cast<double>(step));
  s.values.push_back(value);
}

std::string image_file_name(const std::string& tag) {
  std::string name = tag;
  std::replace(name.begin(), name.end(), '/', '_');
  std::replace(name.begin(), name.end(), '.', '_');
  return name + ".png";
}

MetricPlot metric_plot_for(const ScalarHistory::Series& series, bool smoothed) {
  MetricPlot plot;
  plot.title = series.tag;
  const auto slash = series.tag.find('/');
  plot.y_label = slash == std::string::npos ? series.tag : series.tag.substr(slash + 1);
  if (smoothed && series.values.size() > 1) {
    plot.curves.push_back({"original", series.steps, series.values, kRawCurveColor});
    plot.curves.push_back({"smoothed", series.steps, smooth_finite(series.values), kCurveColor});
  } else {
    plot.curves.push_back({"", series.steps, series.values, kCurveColor});
  }
  return plot;
}

std::vector<std::filesystem::path> write_run_images(const std::filesystem::path& images_dir,
                                                    const ScalarHistory& history) {
  std::vector<std::filesystem::path> written;
  for (const auto& s : history.series()) {
    if (s.values.empty()) continue;
    const bool smoothed = std::find(kSmoothedTags.begin(), kSmoothedTags.end(), s.tag) != kSmoothedTags.end();
    written.push_back(images_dir / image_file_name(s.tag));
    write_metric_plot(written.back(), metric_plot_for(s, smoothed));
  }
  return written;
}

}  // namespace swift::train
