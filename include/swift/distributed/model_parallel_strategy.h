// Megatron-LM's model parallelism: tensor parallelism (model/tensor_parallel.h) within groups of --tp_size
// consecutive ranks, context parallelism (model/context_parallel.h) over --cp_size ranks that each hold a share of
// every sequence, pipeline parallelism (pipeline_schedule.h) over --pp_size stages, and data parallelism (DDP)
// across the replicas, laid out as Megatron does (its order tp-cp-dp-pp: TP innermost, PP outermost):
//   rank = pp_rank * (dp_size * cp_size * tp_size) + dp_rank * (cp_size * tp_size) + cp_rank * tp_size + tp_rank
// so a TP group stays within a node and the stages of a pipeline are the farthest apart. The ranks of one replica
// (its TP x CP x PP ranks) train on the same samples; each holds a slice of every large weight of its stage's layers
// and (CP) its share of every row. Expert parallelism (--ep_size, model/expert_parallel.h) splits the experts of the
// mixture-of-experts layers over --ep_size consecutive ranks of a stage, across TP, CP and DP (Megatron's layout with
// expert tensor parallel size 1; under TP each rank routes its part of the sequence, model/tensor_parallel.h): they
// hold different tokens and send them to each other; the ranks holding the same experts (the expert data group,
// stage ranks / ep) sum those experts' gradients.
//   placement_plan / assign_ownership: each stage keeps its own layers (the first also the embedding, the last the
//     final norm and the head, and with tied embeddings its copy of the embedding); with TP they are read only
//     after the split, each rank its own slices (model::read_deferred_weights), so no rank holds a whole weight;
//     with EP likewise each rank reads only its own experts;
//   local_sequences: this rank's share of each row (context parallelism);
//   run_micro_batches: the 1F1B schedule, activations and their gradients sent between neighbouring stages;
//   local_range / sum: over the data group, the ranks holding the same part of the model (a replica is one
//     data-parallel rank; its CP ranks each count their own share of the tokens); the logged metrics come from the
//     last stage, which computes the loss;
//   finish_gradients: every gradient summed over the data group (DP x CP: Megatron's dp_cp group), the experts' over
//     the expert data group, the partial ones over TP (q_norm/k_norm, the norms under sequence parallelism, the
//     sparse layers under TP), the tied embedding's over its first and last stage;
//   clip_gradients: the norm of the whole model (split gradients' squares summed over TP and EP, then every stage's);
//   begin_save / end_save: the split parameters gathered whole within each stage, every stage's sent to rank 0;
//   save_model_part (--save_safetensors false): instead, each TP rank of each stage writes its own slices (not with
//     EP: its checkpoints are written whole);
//   optimizer state: a file per rank (its slices of its stage's parameters; with the distributed optimizer the
//     data group splits them: each rank updates its share, then sends the new values to the others).
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "swift/distributed/gradient_sync.h"
#include "swift/distributed/parallel_strategy.h"
#include "swift/model/context_parallel.h"
#include "swift/model/tensor_parallel.h"

namespace swift::distributed {

// The model's view of a tensor-parallel group (model/tensor_parallel.h): its collectives on `group`, which must
// outlive it.
std::shared_ptr<model::TensorParallelComm> tensor_parallel_comm(ProcessGroup& group);

struct ModelParallelSizes {
  int tp = 1, pp = 1, cp = 1;
  int ep = 1;  // consecutive ranks of a stage splitting the experts (across tp, cp and dp)
  bool sequence_parallel = false;  // Megatron's: activations between the TP-split layers cut along the sequence
  // How a context-parallel rank reaches the others' keys: ring attention, or Ulysses where the heads (after tensor
  // parallelism) divide by cp (ring otherwise).
  model::ContextParallelAttention context_attention = model::ContextParallelAttention::kRing;
  int virtual_stages = 1;  // per rank (--virtual_pipeline_model_parallel_size): interleaved 1F1B above 1
  bool distributed_optimizer = true;  // the AdamW state sharded over the data-parallel group (ZeRO-1)
  // Megatron's --decoder_first/last_pipeline_num_layers (0: an even split).
  int64_t first_stage_layers = 0, last_stage_layers = 0;
};

class ModelParallel : public ParallelStrategy {
 public:
  // `world`: every rank of the job; its size a multiple of tp x pp (checked by parallel_options).
  ModelParallel(std::unique_ptr<ProcessGroup> world, std::string device, ZeroConfig zero, ModelParallelSizes sizes);
  ~ModelParallel() override;

  int tp_rank() const { return rank() % sizes_.tp; }
  int cp_rank() const { return (rank() / sizes_.tp) % sizes_.cp; }
  int dp_rank() const { return (rank() / (sizes_.tp * sizes_.cp)) % dp_size(); }
  int pp_rank() const { return rank() / stage_ranks(); }
  int dp_size() const { return world_size() / (sizes_.tp * sizes_.cp * sizes_.pp); }
  // The data group: the ranks holding the same part of the model (DP x CP), and this rank's place in it.
  int data_group_rank() const { return dp_rank() * sizes_.cp + cp_rank(); }
  int data_group_size() const { return dp_size() * sizes_.cp; }
  // This rank's place in its pipeline stage: tp_rank() + tp x data_group_rank().
  int stage_rank() const { return rank() % stage_ranks(); }
  // Expert parallelism (Megatron's, with --expert_tensor_parallel_size 1): ep consecutive ranks of a stage, across
  // tensor, context and data parallelism, split the experts. This rank's place in that group; the ranks holding the
  // same experts (one per group) and its place among them.
  int ep_rank() const { return stage_rank() % sizes_.ep; }
  int expert_data_group_rank() const { return stage_rank() / sizes_.ep; }
  int expert_data_group_size() const { return stage_ranks() / sizes_.ep; }

  int data_parallel_rank() const override { return dp_rank(); }
  int data_parallel_size() const override { return dp_size(); }
  std::vector<double> sum(const std::vector<double>& values) override;
  std::vector<double> sum_metrics(const std::vector<double>& values) override;
  bool computes_empty_slices() const override { return true; }
  data::Batch local_sequences(const data::Batch& batch) const override;
  model::PlacementPlan placement_plan(const std::vector<std::string>& removed) override;
  model::PlacementPlan frozen_placement_plan() override;
  void assign_ownership(model::CausalLM& model) override;
  void split_frozen_model(model::CausalLM& model) override;
  ParallelFootprint footprint(model::CausalLM& model) const override;
  void begin_training(model::CausalLM& model) override;
  void run_micro_batches(MicroBatches& batches, bool backward) override;
  void before_backward(bool last_of_step) override;
  void finish_gradients(bool first_step) override;
  double clip_gradients(double max_norm, bool& overflow) override;
  void after_optimizer_step(bool stepped, bool first_step, const std::vector<at::Tensor>& optimizer_state) override;
  void end_training() override;
  void begin_save(bool trainable_only) override;
  void end_save() override;
  bool shards_optimizer_state() const override { return true; }
  bool saves_model_parts() const override { return sizes_.ep == 1; }
  void save_model_part(const std::filesystem::path& dir, std::optional<c10::ScalarType> dtype) override;

 protected:
  std::vector<ParameterSlice> parameter_slices() const override;

 private:
  int stage_ranks() const { return world_size() / sizes_.pp; }  // dp x cp x tp
  bool first_stage() const { return pp_rank() == 0; }
  bool shards_optimizer_over_replicas() const { return sizes_.distributed_optimizer && data_group_ != nullptr; }
  bool last_stage() const { return pp_rank() == sizes_.pp - 1; }
  // Whether this rank keeps `name` (its stage's, or the last stage's copy of a tied embedding).
  bool holds(const std::string& name) const;
  // The rank of the pipeline group that owns `name` (the embedding: the first stage).
  int owner_stage(const std::string& name) const;
  // Which parameters of a checkpoint this rank reads now, later (after a split) or not at all. The policy's (frozen
  // false) sets the pipeline's layer split; a frozen model beside it (rlhf's reference) must fit that split.
  model::PlacementPlan own_part_plan(bool frozen);
  // A frozen model with `layers` decoder layers (tied: no head of its own) runs through the policy's stages: a
  // UsageError unless the policy's are the same.
  void check_fits_stages(int64_t layers, bool tied) const;
  // The model's PipelineStage set to this rank's chunk `chunk` (virtual stage chunk x pp + pp_rank).
  void enter_chunk(int chunk);
  // This stage's part: other stages' parameters become shape-only and frozen here.
  void keep_own_stage(model::CausalLM& model);
  void run_pipeline(MicroBatches& batches, bool backward);
  void collect_stages_on_rank0(bool trainable_only);
  // Tensor and expert parallelism: this rank's slices of `model` and its whole replicated weights, read from the
  // files now that the splits cut their shapes; logged.
  void read_own_slices(model::CausalLM& model, const std::vector<model::ShardedParameter>& tensor_split,
                       const std::vector<model::ShardedParameter>& expert_split);
  // Expert parallelism: this rank keeps its experts; the sparse layers send tokens over the group.
  void split_experts(model::CausalLM& model);
  // The distributed optimizer: which rank of its group updates each trainable parameter (the experts' over the
  // expert data group, the others over the data group); logged.
  void partition_optimizer_state();
  bool is_expert(const at::Tensor& p) const;
  // Context parallelism: the model's attention reaches the other ranks' keys (ring, or Ulysses where heads divide).
  void split_sequences(model::CausalLM& model);
  // The replicated parameters whose gradient each TP rank has in part, summed over the group.
  void sum_partial_gradients();

  ModelParallelSizes sizes_;
  // Null where of one rank. data_group_: DP x CP, the ranks whose gradients are summed (and the optimizer sharded).
  std::unique_ptr<ProcessGroup> tp_group_, cp_group_, data_group_, pp_group_, embedding_group_;
  // Null where of one rank. ep_group_: the ranks splitting the experts; expert_data_group_: those holding the same.
  std::unique_ptr<ProcessGroup> ep_group_, expert_data_group_;
  std::vector<int64_t> layer_begin_;  // pipeline_layer_split over pp x virtual_stages
  bool tied_embedding_ = false;
  std::shared_ptr<model::PipelineStage> stage_;
  std::shared_ptr<model::ContextParallel> context_parallel_;  // the policy's (split_sequences), for a frozen model too
  std::vector<model::ShardedParameter> sharded_;         // by tensor parallelism
  std::vector<model::ShardedParameter> expert_sharded_;  // by expert parallelism (dim 0: the experts)
  std::vector<at::Tensor> partial_gradients_;
  // trainable_, by whether TP splits them, EP splits them (the experts) or neither
  std::vector<at::Tensor> split_trainable_, expert_trainable_, replicated_trainable_;
  std::set<std::string> trainable_on_other_stages_;
  int64_t other_stages_trainable_bytes_ = 0;  // their whole size
  std::vector<std::pair<at::Tensor, at::Tensor>> held_while_saving_;  // (parameter, its data) between begin_/end_save
  std::optional<GradientSync> data_sync_, expert_sync_;  // over data_group_ (all but the experts), expert_data_group_
  // Distributed optimizer: the rank in its group updating each parameter of data_sync_ / expert_sync_.
  std::vector<int> dp_owners_, expert_owners_;
  // The training schedule's wall time and the part of it spent waiting on the neighbouring stages (the bubble).
  double schedule_seconds_ = 0, waiting_seconds_ = 0;
  int64_t micro_batches_ = 0;
};

}  // namespace swift::distributed
