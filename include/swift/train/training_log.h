// What a run writes besides its checkpoints, as ms-swift lays it out: the run folder (<output_dir>/v<N>-<time>),
// args.json, logging.jsonl, TensorBoard events under runs/, a console line per logged step and evaluation, and at
// the end a picture of every logged scalar in images/ (train_loss.png, train_learning_rate.png, eval_loss.png, ...;
// run_images.h). Rank 0 writes; every rank takes part in the reductions.
#pragma once

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "swift/distributed/parallel_strategy.h"
#include "swift/train/metric_window.h"
#include "swift/train/objective.h"
#include "swift/train/run_dir.h"
#include "swift/train/run_images.h"
#include "swift/train/tensorboard_writer.h"

namespace swift::train {

class TrainingLog {
 public:
  // Makes the run folder under `output_dir` (rank 0; every rank learns its path) and writes args.json there.
  TrainingLog(const std::filesystem::path& output_dir, bool add_version, const nlohmann::json& args,
              distributed::ParallelStrategy& parallel);
  const std::filesystem::path& run_dir() const { return run_dir_; }

  // Before the first step: where the run starts and ends (for speed, epochs and the time left), and the device
  // whose peak memory the rows report.
  void begin(int64_t start_step, int64_t total_steps, int64_t steps_per_epoch, c10::Device device);
  // After each step: its gradient norm joins the window.
  void add_step(double grad_norm);
  // A train row for step `done`: the window's metrics over the ranks (and those the objective derives from them),
  // the mean gradient norm, the learning rate, memory, speed and progress. Clears the window.
  void log_train(int64_t done, MetricWindow& window, const TrainingObjective& objective, double learning_rate);
  // An evaluation row for step `done`.
  void log_eval(int64_t done, const std::vector<std::pair<std::string, double>>& metrics);
  // A PNG per logged scalar in images/, as ms-swift draws them (rank 0).
  void finish();

 private:
  distributed::ParallelStrategy& parallel_;
  std::filesystem::path run_dir_;
  std::optional<JsonlLog> jsonl_;
  std::optional<TensorBoardWriter> tensorboard_;
  ScalarHistory scalars_;  // what went to TensorBoard, for the pictures
  std::chrono::steady_clock::time_point start_;
  c10::Device device_ = c10::Device(c10::kCPU);
  int64_t start_step_ = 0, total_steps_ = 0, steps_per_epoch_ = 1;
  double window_grad_norm_ = 0;
  int64_t window_steps_ = 0;
};

}  // namespace swift::train
