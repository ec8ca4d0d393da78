// The run folder's images/: one PNG per scalar the run logged to TensorBoard, as ms-swift's plot_images
// (swift.utils.tb_utils, called after training with smooth_key ['train/loss'] and 0.9) draws them:
// images/train_loss.png (smoothed over the pale raw curve), train_learning_rate.png, train_grad_norm.png,
// train_token_acc.png, eval_loss.png, train_rewards_chosen.png, ...
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "swift/train/metric_plot.h"

namespace swift::train {

// The tags ms-swift's sft pipeline smooths, and with which weight.
inline const std::vector<std::string> kSmoothedTags = {"train/loss"};
inline constexpr double kSmoothingWeight = 0.9;

// TensorBoard/ms-swift smoothing (swift.utils.tb_utils.tensorboard_smoothing): debiased EMA with `weight`.
std::vector<double> tensorboard_smoothing(const std::vector<double>& values, double weight);

// Every logged scalar, per tag in the order the tags first appeared.
class ScalarHistory {
 public:
  struct Series {
    std::string tag;  // "train/loss", "eval/token_acc", "train/rewards/chosen"
    std::vector<double> steps;
    std::vector<double> values;
  };
  void add(const std::string& tag, int64_t step, double value);
  const std::vector<Series>& series() const { return series_; }

 private:
  std::vector<Series> series_;
  std::unordered_map<std::string, size_t> index_;
};

// ms-swift's file name: '/' and '.' become '_', matplotlib adds ".png" ("train/loss" -> "train_loss.png").
std::string image_file_name(const std::string& tag);

// One tag's picture: titled with the tag, the y axis named by the tag without its "train/"/"eval/" prefix. A
// smoothed tag with two or more points is drawn raw in ms-swift's pale colour ("original") under its smoothing
// ("smoothed"); any other series in ms-swift's orange (one point: a dot).
MetricPlot metric_plot_for(const ScalarHistory::Series& series, bool smoothed);

// Writes images_dir/<image_file_name(tag)> for every tag with values; returns the files written.
std::vector<std::filesystem::path> write_run_images(const std::filesystem::path& images_dir,
                                                    const ScalarHistory& history);

}  // namespace swift::train
