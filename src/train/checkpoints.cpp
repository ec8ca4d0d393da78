// Checkpoints and resume (see checkpoints.h).
#include "swift/train/checkpoints.h"
#include "swift/train/merged_checkpoint.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/serialize.h>

#include <cmath>
#include <mutex>

#include "swift/core/atomic_write.h"
#include "swift/core/device.h"
#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/io/hf_config.h"
#include "swift/io/safetensors_folder.h"
#include "swift/model/checkpoint.h"
#include "swift/model/param_sharding.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace swift::train {
namespace {

// Beside rng_state.pt (the CPU generator's): the GPU's, whose generator draws the dropout of a run on CUDA.
constexpr const char* kCudaRngStateFile = "rng_state_cuda.pt";

at::Tensor generator_state(c10::Device device) {
  at::Generator generator = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

}  // namespace

Checkpoints::Checkpoints(fs::path run_dir, const LoopOptions& loop, distributed::ParallelStrategy& parallel)
    : run_dir_(std::move(run_dir)), loop_(loop), parallel_(parallel) {}

std::optional<fs::path> Checkpoints::last() const {
  if (saved_.empty()) return std::nullopt;
  return saved_.back();
}

// Rank 0's part: the weights (or, when every rank writes its part of them, config.json and the model's other
// files), args.json and, with the training state, the optimizer (unless each rank writes its own part), the RNG
// state and trainer_state.json.
void Checkpoints::write_rank0_files(int64_t step, const CheckpointSource& s, const fs::path& out, bool model_in_parts) const {
  model::CausalLM m = s.model;  // a handle: the same module
  model::SaveOptions save;
  save.dtype = s.save_dtype;
  if (s.adapter)
    tuners::save_adapter(m, *s.adapter, out);
  else if (model_in_parts)
    model::save_model_description(m, out, save, s.model_dir);
  else
    model::save_model(m, out, save, s.model_dir);
  io::write_json_file(out / "args.json", s.args);
  if (loop_.save_only_model) return;
  if (!parallel_.shards_optimizer_state()) s.optimizer.save(out / parallel_.optimizer_state_file());
  // Dropout draws from the generator of the device it runs on: its state makes the continuation bit-exact.
  torch::save(generator_state(c10::Device(c10::kCPU)), (out / "rng_state.pt").string());
  const c10::Device device = m->device();
  if (device.is_cuda()) torch::save(generator_state(device), (out / kCudaRngStateFile).string());
  const json data_state = s.data.state();  // "epoch"/"data_position" stay for readers of older checkpoints
  json state = {{"global_step", step}, {"epoch", s.data.epoch()}, {"data_position", data_state.value("position", uint64_t{0})},
                {"data_state", data_state}, {"global_micro_batch", s.global_micro_batch}};
  if (s.scaler) {
    state["loss_scale"] = s.scaler->current_scale();
    state["loss_scale_growth_tracker"] = s.scaler->growth_tracker().item<int>();
  }
  io::write_json_file(out / "trainer_state.json", state);
}

void Checkpoints::require_finite_weights(int64_t step, const model::CausalLM& model) const {
  at::NoGradGuard no_grad;
  double bad = 0;
  std::string example;
  for (const auto& item : model->named_parameters()) {
    const at::Tensor& p = item.value();
    if (p.numel() == 0 || !model::holds_values(p)) continue;  // a quantized layer's weight; another rank's share
    if (!at::isfinite(p).all().item<bool>()) {
      bad += 1;
      if (example.empty()) example = item.key();
    }
  }
  bad = parallel_.sum({bad})[0];
  const auto good = last();
  SWIFT_CHECK(bad == 0, DataError,
              "step " + std::to_string(step) + ": " + std::to_string(static_cast<int64_t>(bad)) +
                  " weight tensor(s) are not finite (NaN or inf" + (example.empty() ? "" : ", e.g. " + example) +
                  "): no checkpoint is written (last good checkpoint: " + (good ? good->string() : std::string("none")) + ")",
              "lower --learning_rate, or check the data and the model's weights");
}

void Checkpoints::save(int64_t step, const CheckpointSource& s, bool last_of_run) {
  // Checked before anything is written, so such a checkpoint never pushes a good one out of --save_total_limit.
  require_finite_weights(step, s.model);
  const fs::path dir = run_dir_ / ("checkpoint-" + std::to_string(step));
  const bool with_state = !loop_.save_only_model, sharded = parallel_.shards_optimizer_state();
  // --save_safetensors false: each rank writes its own part of the weights (an adapter is small: written whole),
  // except at the end of the run, whose checkpoint is the Hugging Face folder the run is for.
  const bool in_parts = loop_.save_model_parts && !last_of_run && !s.adapter && parallel_.saves_model_parts();
  if (loop_.save_model_parts && last_of_run && !s.adapter)
    log_info("the run's last checkpoint is written whole, as a Hugging Face folder (--save_safetensors false writes "
             "the others as each rank's part)");
  std::optional<AtomicDir> out;
  fs::path tmp;
  if (parallel_.main_rank()) {
    out.emplace(dir);
    tmp = out->path();
  }
  if (!in_parts) parallel_.begin_save(/*trainable_only=*/s.adapter != nullptr);
  if (parallel_.main_rank()) write_rank0_files(step, s, tmp, in_parts);
  // After rank 0's files: saving the model whole replaces the folder it writes into.
  if (in_parts || (sharded && with_state)) tmp = parallel_.share("checkpoint-" + std::to_string(step), tmp.string());
  if (in_parts) parallel_.save_model_part(tmp, s.save_dtype);
  if (sharded && with_state) s.optimizer.save(tmp / parallel_.optimizer_state_file());
  parallel_.barrier();  // every shard is written, and no rank runs ahead of a save
  if (!in_parts) parallel_.end_save();
  if (!parallel_.main_rank()) return;
  // Every part is there and fits the others before the folder counts as a checkpoint.
  if (in_parts) io::SafetensorsFolder::open(tmp);
  if (with_state) parallel_.check_optimizer_state(tmp);
  out->commit();
  saved_.push_back(dir);
  if (loop_.merge_lora && s.adapter) write_merged_checkpoint(dir, s.model_dir, s.base_quantization, s.merged_dtype, merged_checkpoint_dir(dir));
  while (loop_.save_total_limit > 0 && static_cast<int64_t>(saved_.size()) > loop_.save_total_limit) {
    fs::remove_all(saved_.front());
    fs::remove_all(merged_checkpoint_dir(saved_.front()));  // --merge_lora's copy goes with its checkpoint
    saved_.pop_front();
  }
  log_info("saved ", dir.string(), in_parts ? " (each rank's part of the weights: swift export --to_hf true --mcore_model DIR "
                                              "writes them as a Hugging Face folder)" : "");
}

namespace {

// trainer_state.json's "global_step": a count of steps.
int64_t read_global_step(const json& state, const fs::path& path) {
  const json step = state.is_object() ? state.value("global_step", json()) : json();
  SWIFT_CHECK(step.is_number_integer() && step.get<int64_t>() >= 0, DataError,
              path.string() + ": \"global_step\" must be a step count (a whole number >= 0), got " +
                  (step.is_null() ? std::string("nothing") : step.dump()),
              "the checkpoint is damaged; resume from another one, or with --resume_only_model true");
  return step.get<int64_t>();
}

// Dropout draws from the generator of the device it runs on (the CPU's, or on CUDA the GPU's): its saved state
// makes the continuation bit-exact. Without the file the run continues, but says it is not exact; a damaged file is
// a DataError.
void restore_rng_state(const fs::path& path, c10::Device device) {
  if (!fs::exists(path)) {
    log_warn(path.parent_path().string(), " has no ", path.filename().string(), ": the run continues from another "
             "random state, so it is not an exact continuation (dropout draws differ)");
    return;
  }
  at::Tensor rng;
  try {
    torch::load(rng, path.string());
    at::Generator generator = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(rng);
  } catch (const std::exception& e) {  // the file's reader and the generator say what is wrong in their own words
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    throw DataError(path.string() + " cannot be read as a random generator state: " +
                        (c10_error ? c10_error->what_without_backtrace() : e.what()),
                    "the checkpoint is damaged; resume from another one, or delete " + path.filename().string() + " to resume without an "
                    "exact continuation");
  }
}

}  // namespace

int64_t resume_training(const LoopOptions& loop, int64_t total_steps, int64_t global_micro_batch, Optimizer& optimizer,
                        data::TrainData& data, GradScaler* scaler, const distributed::ParallelStrategy& parallel) {
  const fs::path& resume = loop.resume_from_checkpoint;
  if (resume.empty() || loop.resume_only_model) return 0;
  const fs::path state_path = resume / "trainer_state.json";
  const auto optimizer_files = distributed::optimizer_state_files(resume);
  SWIFT_CHECK(fs::exists(state_path) && !optimizer_files.empty(), DataError,
              resume.string() + " has no trainer state (saved with --save_only_model?)",
              "pass --resume_only_model true to start from its weights at step 0");
  const json state = io::read_json_file(state_path);
  const int64_t start_step = read_global_step(state, state_path);
  SWIFT_CHECK(start_step < total_steps, UsageError,
              "the checkpoint is at step " + std::to_string(start_step) + " of " + std::to_string(total_steps),
              "raise --max_steps / --num_train_epochs to train further");
  // Any layout loads: one file (1 rank, DDP) or a shard per rank (ZeRO), at this world size or another; state
  // split over tensor-parallel ranks is put together and cut for this rank first.
  if (const auto relaid = parallel.relayout_optimizer_state(optimizer_files)) {
    const auto remove = [&] { std::error_code ignored; fs::remove(*relaid, ignored); };
    try {
      optimizer.load({*relaid}, parallel.trainable_elsewhere());
    } catch (...) {
      remove();
      throw;
    }
    remove();
  } else {
    optimizer.load(optimizer_files, parallel.trainable_elsewhere());
  }
  if (scaler && state.contains("loss_scale")) {
    const auto& scale = state["loss_scale"];
    const auto& tracker = state.value("loss_scale_growth_tracker", json(0));
    SWIFT_CHECK(scale.is_number() && std::isfinite(scale.get<double>()) && scale.get<double>() > 0 &&
                    tracker.is_number_integer() && tracker.get<int64_t>() >= 0,
                DataError, state_path.string() + ": \"loss_scale\" must be a positive number (and the growth tracker a "
                                                 "count), got " + scale.dump(),
                "the checkpoint is damaged; resume from another one");
    scaler->restore(at::tensor(scale.get<double>(), at::kFloat), at::tensor(tracker.get<int>(), at::kInt));
  }
  restore_rng_state(resume / "rng_state.pt", c10::Device(c10::kCPU));
  const c10::Device device = parse_device(parallel.device());
  if (device.is_cuda()) restore_rng_state(resume / kCudaRngStateFile, device);
  if (state.contains("global_micro_batch") && state["global_micro_batch"].is_number_integer() &&
      state["global_micro_batch"].get<int64_t>() != global_micro_batch)
    log_warn("the checkpoint was trained with ", state["global_micro_batch"].get<int64_t>(),
             " samples per micro-step (per-device batch x ranks), this run uses ", global_micro_batch,
             ": the data continues from the same sample, but epochs and steps no longer line up with the run that "
             "wrote it");
  if (!loop.ignore_data_skip) {
    try {
      data.restore(data::data_state_of(state));
    } catch (const json::exception& e) {
      throw DataError(state_path.string() + ": the data position cannot be read (" + e.what() + ")",
                      "the checkpoint is damaged; resume from another one, or pass --ignore_data_skip true");
    }
  }
  log_info("resumed from ", resume.string(), " at step ", start_step);
  return start_step;
}

}  // namespace swift::train
