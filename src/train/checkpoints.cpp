// Checkpoints and resume (see checkpoints.h).
#include "swift/train/checkpoints.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/serialize.h>

#include <mutex>

#include "swift/core/atomic_write.h"
#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/io/hf_config.h"
#include "swift/model/checkpoint.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace swift::train {

Checkpoints::Checkpoints(fs::path run_dir, const LoopOptions& loop, distributed::ParallelStrategy& parallel)
    : run_dir_(std::move(run_dir)), loop_(loop), parallel_(parallel) {}

std::optional<fs::path> Checkpoints::last() const {
  if (saved_.empty()) return std::nullopt;
  return saved_.back();
}

// Rank 0's part: the weights, args.json and, with the training state, the optimizer (unless each rank writes its
// own part), the RNG state and trainer_state.json.
void Checkpoints::write_rank0_files(int64_t step, const CheckpointSource& s, const fs::path& out) const {
  model::CausalLM m = s.model;  // a handle: the same module
  if (s.adapter) {
    tuners::save_adapter(m, *s.adapter, out);
  } else {
    model::SaveOptions save;
    save.dtype = s.save_dtype;
    model::save_model(m, out, save, s.model_dir);
  }
  io::write_json_file(out / "args.json", s.args);
  if (loop_.save_only_model) return;
  if (!parallel_.shards_optimizer_state()) s.optimizer.save(out / parallel_.optimizer_state_file());
  // Dropout draws from the default CPU generator: its state makes the continuation bit-exact.
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  at::Tensor rng_state;
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    rng_state = generator.get_state();
  }
  torch::save(rng_state, (out / "rng_state.pt").string());
  const json data_state = s.data.state();  // "epoch"/"data_position" stay for readers of older checkpoints
  json state = {{"global_step", step}, {"epoch", s.data.epoch()}, {"data_position", data_state.value("position", uint64_t{0})},
                {"data_state", data_state}, {"global_micro_batch", s.global_micro_batch}};
  if (s.scaler) {
    state["loss_scale"] = s.scaler->current_scale();
    state["loss_scale_growth_tracker"] = s.scaler->growth_tracker().item<int>();
  }
  io::write_json_file(out / "trainer_state.json", state);
}

void Checkpoints::save(int64_t step, const CheckpointSource& s) {
  const fs::path dir = run_dir_ / ("checkpoint-" + std::to_string(step));
  const bool with_state = !loop_.save_only_model, sharded = parallel_.shards_optimizer_state();
  std::optional<AtomicDir> out;
  fs::path tmp;
  if (parallel_.main_rank()) {
    out.emplace(dir);
    tmp = out->path();
  }
  parallel_.begin_save(/*trainable_only=*/s.adapter != nullptr);
  if (parallel_.main_rank()) write_rank0_files(step, s, tmp);
  if (sharded && with_state) {  // after rank 0's files: saving the model replaces the folder it writes into
    tmp = parallel_.share("checkpoint-" + std::to_string(step), tmp.string());
    s.optimizer.save(tmp / parallel_.optimizer_state_file());
  }
  parallel_.barrier();  // every shard is written, and no rank runs ahead of a save
  parallel_.end_save();
  if (!parallel_.main_rank()) return;
  if (with_state) parallel_.check_optimizer_state(tmp);
  out->commit();
  saved_.push_back(dir);
  while (loop_.save_total_limit > 0 && static_cast<int64_t>(saved_.size()) > loop_.save_total_limit) {
    fs::remove_all(saved_.front());
    saved_.pop_front();
  }
  log_info("saved ", dir.string());
}

int64_t resume_training(const LoopOptions& loop, int64_t total_steps, int64_t global_micro_batch, AdamW& optimizer,
                        data::TrainData& data, GradScaler* scaler, const std::set<std::string>& elsewhere) {
  const fs::path& resume = loop.resume_from_checkpoint;
  if (resume.empty() || loop.resume_only_model) return 0;
  const fs::path state_path = resume / "trainer_state.json";
  const auto optimizer_files = distributed::optimizer_state_files(resume);
  SWIFT_CHECK(fs::exists(state_path) && !optimizer_files.empty(), DataError,
              resume.string() + " has no trainer state (saved with --save_only_model?)",
              "pass --resume_only_model true to start from its weights at step 0");
  const json state = io::read_json_file(state_path);
  const int64_t start_step = state.at("global_step").get<int64_t>();
  SWIFT_CHECK(start_step < total_steps, UsageError,
              "the checkpoint is at step " + std::to_string(start_step) + " of " + std::to_string(total_steps),
              "raise --max_steps / --num_train_epochs to train further");
  // Any layout loads: one file (1 rank, DDP) or a shard per rank (ZeRO), at this world size or another.
  optimizer.load(optimizer_files, elsewhere);
  if (scaler && state.contains("loss_scale"))
    scaler->restore(at::tensor(state.at("loss_scale").get<double>(), at::kFloat),
                    at::tensor(state.at("loss_scale_growth_tracker").get<int>(), at::kInt));
  if (fs::exists(resume / "rng_state.pt")) {
    at::Tensor rng;
    torch::load(rng, (resume / "rng_state.pt").string());
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(rng);
  }
  if (state.contains("global_micro_batch") && state["global_micro_batch"].get<int64_t>() != global_micro_batch)
    log_warn("the checkpoint was trained with ", state["global_micro_batch"].get<int64_t>(),
             " samples per micro-step (per-device batch x ranks), this run uses ", global_micro_batch,
             ": the data continues from the same sample, but epochs and steps no longer line up with the run that "
             "wrote it");
  if (!loop.ignore_data_skip) data.restore(data::data_state_of(state));
  log_info("resumed from ", resume.string(), " at step ", start_step);
  return start_step;
}

}  // namespace swift::train
