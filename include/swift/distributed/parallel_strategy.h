// How training is spread over ranks, as one object the trainer applies to the built model and calls at fixed points
// of every step (torchtitan's parallelize_* transforms; DeepSpeed's engine hooks). The trainer never asks which one
// is active: one process, data parallelism (DDP, ZeRO-1, ZeRO-2: data_parallel.h) and ZeRO-3 (zero3_strategy.h)
// each answer the same calls.
//
// The points of a step, in the order the trainer calls them:
//   run_micro_batches, by default for each micro-batch:
//       begin_micro_batch -> forward -> before_backward -> backward -> end_micro_batch
//       (or skip_micro_batch where this rank has no sample and computes nothing)
//   finish_gradients -> clip_gradients -> before_optimizer_step -> optimizer step -> after_optimizer_step
// and around forward-only passes (begin_/end_forward_only: evaluation, a reference model's passes) and checkpoint
// saves (begin_/end_save).
//
// Model parallelism fits the same points (docs/architecture.md): tensor parallelism shards the Linear layers in
// assign_ownership (the model names its layers and their shardable dimensions) and reduces activations inside the
// forward, its ranks taking the same samples (local_range) and summing metrics over the data-parallel group only
// (sum); context parallelism keeps a share of each row (local_sequences) and exchanges keys inside the forward;
// expert parallelism places experts in assign_ownership and exchanges tokens inside the forward; pipeline
// parallelism keeps its stage's layers in assign_ownership and runs its schedule in run_micro_batches. ModelParallel (model_parallel_strategy.h) composes
// TP, CP, PP and DP in Megatron's layout (TP innermost, PP outermost).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "swift/data/batch.h"
#include "swift/distributed/optimizer_relayout.h"
#include "swift/distributed/parallel_options.h"
#include "swift/distributed/process_group.h"
#include "swift/model/checkpoint.h"
#include "swift/model/decoder.h"

namespace swift::distributed {

class ModelParallel;

// One step's (or one evaluation round's) micro-batches as a strategy runs them (train/training_step.cpp and
// train/evaluation.cpp implement it). Every rank of a model-parallel group has the same micro-batches.
class MicroBatches {
 public:
  virtual ~MicroBatches() = default;
  virtual size_t size() const = 0;
  // Whether this rank computes micro-batch k: a short last batch can leave it none, and the strategy then lets it
  // sit out (computes_empty_slices() false) or the caller gave it a stand-in whose loss counts 0.
  virtual bool present(size_t k) const = 0;
  // Micro-batch k's loss through the model as this rank holds it, ready for backward (normalised and scaled for
  // the step); its metrics are kept by the caller. On a pipeline's last stage the model reads the previous stage's
  // output from its PipelineStage.
  virtual at::Tensor loss(size_t k) = 0;
  // Pipeline parallelism, on a stage before the last: micro-batch k through this stage's layers (its output, to
  // which any loss of the stage's own is attached so that the output's backward runs it; its metrics kept by the
  // caller).
  virtual at::Tensor stage_output(size_t k) = 0;
};

// What the memory estimate needs to know of the strategy (train/memory_estimate.h's vocabulary).
struct ParallelFootprint {
  int zero_stage = 0;  // 1: optimizer state sharded, 2: and gradients, 3: and parameters
  int world_size = 1;
  int64_t bucket_bytes = 25ll << 20;
  bool optimizer_offloaded = false;
  bool params_offloaded = false;
  // Parameter sharding: what is gathered whole at once, beyond each rank's share at rest.
  int64_t outer_weight_bytes = 0, layer_weight_bytes = 0;
  // Pipeline stages: only the parameters that hold values here count (the others are another stage's).
  bool held_parameters_only = false;
  // Context parallelism: the ranks each row is split over (each keeps the activations of its share of the tokens).
  int sequence_split = 1;
  // Tensor parallelism: the ranks the layers' widths and the vocabulary are split over; sequence parallelism cuts
  // the norm region's activations over them too.
  int tensor_split = 1;
  bool sequence_parallel = false;
  // Pipeline stages: whose activations this rank holds at once, in decoder layers (its chunks' layers times the
  // schedule's live passes, pipeline_activation_layers); 0: every layer of the model once.
  std::function<int64_t(int64_t micro_batches)> activation_layers;
};

class ParallelStrategy {
 public:
  virtual ~ParallelStrategy();
  ParallelStrategy(const ParallelStrategy&) = delete;
  ParallelStrategy& operator=(const ParallelStrategy&) = delete;

  // ---- The ranks.
  int rank() const { return group_ ? group_->rank() : 0; }
  int world_size() const { return group_ ? group_->world_size() : 1; }
  bool main_rank() const { return rank() == 0; }
  // Ranks on this machine (they share its CPU RAM).
  int local_world_size() const { return local_world_size_; }
  // The device this rank computes on (--device, or on CUDA the GPU of its LOCAL_RANK).
  const std::string& device() const { return device_; }
  // Numbers summed over the ranks that train on different samples (token counts, metric sums).
  virtual std::vector<double> sum(const std::vector<double>& values);
  // Logged metric sums, on every rank: sum(), and under pipeline parallelism over the stages too (the loss is the
  // last stage's, a stage's own layers' figures its own).
  virtual std::vector<double> sum_metrics(const std::vector<double>& values) { return sum(values); }
  // Rank `root`'s `value` on every rank (a run folder's path); `key` is used once.
  std::string share(const std::string& key, const std::string& value, int root = 0);
  void barrier();
  // This rank's items [begin, end) of a global micro-batch of n items: the slices of all ranks together are the
  // batch one process would train on, so 2 ranks x b equal 1 rank x 2b. A short last batch can leave a rank none.
  std::pair<size_t, size_t> local_range(size_t n) const;
  // The ranks that train on different samples, and this rank's place among them: every rank with data
  // parallelism alone; one per group when model parallelism splits a model over a group that shares its samples.
  virtual int data_parallel_rank() const { return rank(); }
  virtual int data_parallel_size() const { return world_size(); }
  // Whether a rank computes every micro-batch even when its slice is empty (collectives inside the forward need
  // every rank): with another rank's first sample whose loss counts 0, and in evaluation as many passes as the
  // rank with the most batches.
  virtual bool computes_empty_slices() const { return false; }
  // What this rank computes of a micro-batch's rows: all of them, or with context parallelism its share of every
  // row (context_parallel_batch.h).
  virtual data::Batch local_sequences(const data::Batch& batch) const { return batch; }

  // ---- Loading.
  // Which of the model's parameters this rank reads from the files (parameter sharding: only its own); empty: all.
  // `removed`: parameters the command drops right after loading, read by no rank.
  virtual model::PlacementPlan placement_plan(const std::vector<std::string>& removed);
  // The same for a frozen model loaded beside the policy and split by split_frozen_model (rlhf's reference).
  virtual model::PlacementPlan frozen_placement_plan() { return {}; }
  // After loading, with several ranks: each rank's memory high-water mark and how much loading raised it from
  // `memory_before` (bytes), for the log.
  void log_loaded(const model::CausalLM& model, double memory_before);
  virtual bool shards_parameters() const { return false; }

  // ---- Ownership and the optimizer (after the tuners made their parameters).
  // Decides which rank updates each trainable parameter and logs the shares.
  virtual void assign_ownership(model::CausalLM& model);
  // A frozen model beside the policy (rlhf's reference) split over the ranks as the policy is (model parallelism:
  // this rank's stage, slices and experts, the same shares of each row), so the two run side by side. Default: kept
  // whole.
  virtual void split_frozen_model(model::CausalLM& model) { (void)model; }
  // The trainable parameters this rank's optimizer updates, in model order (all of them unless sharded).
  const std::vector<std::pair<std::string, at::Tensor>>& optimizer_parameters() const { return owned_; }
  // Every trainable parameter, in model order (what gradients are clipped and unscaled over).
  const std::vector<at::Tensor>& trainable() const { return trainable_; }
  // Trainable parameters whose optimizer state another rank keeps (skipped when resuming a sharded state).
  const std::set<std::string>& trainable_elsewhere() const { return elsewhere_; }
  // ZeRO-Offload on a GPU: the optimizer state lives in CPU RAM.
  bool offloads_optimizer() const { return zero_.offload_optimizer; }
  virtual ParallelFootprint footprint(model::CausalLM& model) const;

  // ---- Training: the points of a step (see the top of this file).
  // Once, before the first step (after resuming): every rank starts from the same weights.
  virtual void begin_training(model::CausalLM& model) { (void)model; }
  // The forward (and with `backward`, backward) passes of a step's micro-batches. Default: one after the other,
  // at the points below (begin_micro_batch ... end_micro_batch); pipeline parallelism runs its schedule instead.
  virtual void run_micro_batches(MicroBatches& batches, bool backward);
  virtual void begin_micro_batch(bool last_of_step) { (void)last_of_step; }
  virtual void before_backward(bool last_of_step) { (void)last_of_step; }
  virtual void end_micro_batch(bool last_of_step) { (void)last_of_step; }
  virtual void skip_micro_batch(bool last_of_step) { (void)last_of_step; }
  // After the step's micro-batches: every rank's gradients are the global batch's (for what this rank updates).
  virtual void finish_gradients(bool first_step) { (void)first_step; }
  // The norm of all gradients over the ranks (before clipping), clipping them to max_norm when max_norm > 0.
  // `overflow` (fp16: this rank's gradients were not finite) becomes whether any rank's were.
  virtual double clip_gradients(double max_norm, bool& overflow);
  virtual void before_optimizer_step() {}
  // `stepped`: the optimizer updated (no overflow). `optimizer_state`: its tensors, for the first step's log.
  virtual void after_optimizer_step(bool stepped, bool first_step, const std::vector<at::Tensor>& optimizer_state) {
    (void)stepped, (void)first_step, (void)optimizer_state;
  }
  virtual void end_training() {}

  // ---- Forward-only passes (evaluation, a preference objective's reference passes) and checkpoints.
  virtual void begin_forward_only() {}
  virtual void end_forward_only() {}
  // Around writing a checkpoint: what rank 0 saves (every parameter, or the trainable ones: an adapter) is whole in
  // its RAM between the two.
  virtual void begin_save(bool trainable_only) { (void)trainable_only; }
  virtual void end_save() {}
  // --save_safetensors false: whether the model's weights are written as each rank's part (a model-parallel
  // checkpoint, io/model_parallel_files.h) instead of whole by rank 0, which sends nothing between ranks.
  virtual bool saves_model_parts() const { return false; }
  // Writes this rank's part into `dir` (ranks holding a copy of another's part write nothing) and, on the main
  // rank, the index; every rank calls it.
  virtual void save_model_part(const std::filesystem::path& dir, std::optional<c10::ScalarType> dtype) {
    (void)dir;
    (void)dtype;
  }
  // Whether each rank writes its own part of the optimizer state (else rank 0 writes all of it).
  virtual bool shards_optimizer_state() const { return false; }
  // This rank's optimizer state file in a checkpoint folder.
  std::string optimizer_state_file() const;
  // Resuming: when the checkpoint's optimizer state was written at another tensor-parallel layout (or is split
  // over TP ranks), a file in the temp folder holding it in this rank's layout, which the caller loads and then
  // removes (optimizer_relayout.h); nullopt: load `files` as they are.
  std::optional<std::filesystem::path> relayout_optimizer_state(const std::vector<std::filesystem::path>& files) const;
  // On rank 0 after the barrier: every rank's optimizer state file reached `dir` (DataError otherwise).
  void check_optimizer_state(const std::filesystem::path& dir) const;

 protected:
  // `zero`: --deepspeed as it applies here (stage 0 for one process; offloading only where it does something).
  ParallelStrategy(std::unique_ptr<ProcessGroup> group, std::string device, ZeroConfig zero);
  // After a partition: this rank's optimizer updates the trainable parameters `owner_of` gives it (one owner per
  // trainable parameter, in trainable() order); the others' state is elsewhere.
  void keep_owned(const std::vector<int>& owner_of);
  // The bytes each rank owns under `owners` (one per entry of `bytes`).
  std::vector<double> bytes_per_owner(const std::vector<int64_t>& bytes, const std::vector<int>& owners) const;
  // "31.3 MiB, 32.4 MiB": per_rank[first, first + n).
  static std::string bytes_per_rank(const std::vector<double>& per_rank, size_t first, size_t n);
  // After the first step of a sharded run: the parameter, gradient and optimizer bytes each rank holds, measured
  // on the tensors, next to what every rank would hold without sharding.
  // `what`: the sharding ("ZeRO-2", "tensor parallelism").
  void log_held_memory(const std::string& what, model::CausalLM& model, const std::vector<at::Tensor>& optimizer_state);
  // The trainable parameters as this rank holds them (whole, unless a strategy splits them).
  virtual std::vector<ParameterSlice> parameter_slices() const;
  // At the end of training: each rank's wall time in the collectives of `groups` (what overlap did not hide), logged.
  void log_time_in_collectives(const std::vector<const ProcessGroup*>& groups);
  // clip_gradients when each rank holds only its own parameters' gradients: the overflow of any rank counts for
  // all, and the norm adds every rank's squares.
  double clip_sharded_gradients(double max_norm, bool& overflow);

  friend class ModelParallel;
  friend std::unique_ptr<ParallelStrategy> make_parallel_strategy(const ParallelOptions&, const std::string&,
                                                                  const std::string&);
  std::unique_ptr<ProcessGroup> group_;  // null: one process
  int local_world_size_ = 1;
  std::string device_;
  ZeroConfig zero_;
  std::vector<std::string> trainable_names_;
  std::vector<at::Tensor> trainable_;
  std::vector<std::pair<std::string, at::Tensor>> owned_;
  std::set<std::string> elsewhere_;
  int64_t full_parameter_bytes_ = 0, full_trainable_bytes_ = 0;  // before any sharding
  model::CausalLM model_{nullptr};
};

// Connects the ranks of `options.env` (a rendezvous problem shows before minutes of loading; on CUDA each rank
// takes the GPU of its LOCAL_RANK) and returns the strategy the options ask for: one process, data parallelism
// (ZeRO-0/1/2), ZeRO-3, or model parallelism (TP/PP with DP across). Logs what an option changes or does not do here (offloading on a CPU run, ZeRO in one
// process). `device`: --device; `log_level`: to start the ranks' logging.
std::unique_ptr<ParallelStrategy> make_parallel_strategy(const ParallelOptions& options, const std::string& device,
                                                         const std::string& log_level);

}  // namespace swift::distributed
