// The run folder's logs (see training_log.h).
#include "swift/train/training_log.h"

#include "swift/core/atomic_write.h"
#include "swift/core/logging.h"
#include "swift/core/memory.h"
#include "swift/io/hf_config.h"

namespace fs = std::filesystem;

namespace swift::train {

namespace {

// A metric named "<list>/<i>" (expert_tokens/0, expert_tokens/1, ...) is entry i of the list <list>.
std::optional<std::pair<std::string, size_t>> list_entry(const std::string& name) {
  const auto slash = name.rfind('/');
  if (slash == std::string::npos || slash + 1 == name.size()) return std::nullopt;
  if (name.find_first_not_of("0123456789", slash + 1) != std::string::npos) return std::nullopt;
  return std::make_pair(name.substr(0, slash), static_cast<size_t>(std::stoul(name.substr(slash + 1))));
}

// Adds one metric to a logged row (under `key`) and to the TensorBoard scalars (under `tag`); a list's entry joins
// its list in the row.
void add_metric(nlohmann::ordered_json& row, std::vector<std::pair<std::string, double>>& scalars,
                const std::string& key, const std::string& tag, double v) {
  scalars.emplace_back(tag, v);
  const auto entry = list_entry(key);
  if (!entry) {
    row[key] = v;
    return;
  }
  nlohmann::ordered_json& list = row[entry->first];
  if (!list.is_array()) list = nlohmann::ordered_json::array();
  while (list.size() <= entry->second) list.push_back(0.0);
  list[entry->second] = v;
}

// The console line leaves the lists out (one number per expert is for logging.jsonl and TensorBoard).
std::string console_line(nlohmann::ordered_json row) {
  for (auto it = row.begin(); it != row.end();) it = it.value().is_array() ? row.erase(it) : std::next(it);
  return format_log_row(row);
}

}  // namespace

TrainingLog::TrainingLog(const fs::path& output_dir, bool add_version, const nlohmann::json& args,
                         distributed::ParallelStrategy& parallel)
    : parallel_(parallel) {
  if (parallel.main_rank()) run_dir_ = create_run_dir(output_dir, add_version);
  run_dir_ = parallel.share("run_dir", run_dir_.string());
  if (!parallel.main_rank()) return;
  // A run killed while saving left its temporary folder (a checkpoint's size) and files behind: not for good.
  if (const auto removed = remove_stale_temporaries(run_dir_); !removed.empty()) {
    std::string names;
    for (const auto& n : removed) names += (names.empty() ? "" : ", ") + n;
    log_info("removed what killed runs left in ", run_dir_.string(), ": ", names);
  }
  io::write_json_file(run_dir_ / "args.json", args);
  jsonl_.emplace(run_dir_ / "logging.jsonl");
  tensorboard_.emplace(run_dir_ / "runs");
}

void TrainingLog::begin(int64_t start_step, int64_t total_steps, int64_t steps_per_epoch, c10::Device device) {
  device_ = device;
  start_step_ = start_step;
  total_steps_ = total_steps;
  steps_per_epoch_ = steps_per_epoch;
  start_ = std::chrono::steady_clock::now();
}

void TrainingLog::add_step(double grad_norm) {
  window_grad_norm_ += grad_norm;
  ++window_steps_;
}

void TrainingLog::log_train(int64_t done, MetricWindow& window, const TrainingObjective& objective, double learning_rate) {
  window.reduce(parallel_);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  nlohmann::ordered_json row;
  std::vector<std::pair<std::string, double>> scalars;
  auto values = window.values(window_steps_);
  objective.derive_metrics(values);
  for (const auto& [name, v] : values) add_metric(row, scalars, name, "train/" + name, v);
  row["grad_norm"] = window_grad_norm_ / static_cast<double>(window_steps_);
  row["learning_rate"] = learning_rate;
  row["memory(GiB)"] = peak_memory_gib(device_.is_cuda() ? device_.index() : -1);
  row["train_speed(iter/s)"] = static_cast<double>(done - start_step_) / elapsed;
  row["epoch"] = static_cast<double>(done) / static_cast<double>(steps_per_epoch_);
  row["global_step/max_steps"] = std::to_string(done) + "/" + std::to_string(total_steps_);
  row["percentage"] = 100.0 * static_cast<double>(done) / static_cast<double>(total_steps_);
  row["elapsed_time"] = format_duration(elapsed);
  row["remaining_time"] = format_duration(elapsed / static_cast<double>(done - start_step_) * static_cast<double>(total_steps_ - done));
  if (jsonl_) jsonl_->write(row);
  log_info(console_line(row));
  scalars.emplace_back("train/grad_norm", row["grad_norm"].get<double>());
  scalars.emplace_back("train/learning_rate", row["learning_rate"].get<double>());
  if (tensorboard_) tensorboard_->add_scalars(scalars, done);
  for (const auto& [tag, v] : scalars)
    if (!list_entry(tag)) scalars_.add(tag, done, v);
  window.clear();
  window_grad_norm_ = 0;
  window_steps_ = 0;
}

void TrainingLog::log_eval(int64_t done, const std::vector<std::pair<std::string, double>>& metrics) {
  nlohmann::ordered_json row;
  std::vector<std::pair<std::string, double>> scalars;
  for (const auto& [name, v] : metrics) add_metric(row, scalars, "eval_" + name, "eval/" + name, v);
  row["global_step/max_steps"] = std::to_string(done) + "/" + std::to_string(total_steps_);
  if (jsonl_) jsonl_->write(row);
  log_info(console_line(row));
  if (tensorboard_) tensorboard_->add_scalars(scalars, done);
  for (const auto& [tag, v] : scalars)
    if (!list_entry(tag)) scalars_.add(tag, done, v);
}

void TrainingLog::finish() {
  if (!parallel_.main_rank()) return;
  write_run_images(run_dir_ / "images", scalars_);
}

}  // namespace swift::train
