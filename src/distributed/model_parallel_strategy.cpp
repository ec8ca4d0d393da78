// Tensor, context, pipeline and data parallelism together (see model_parallel_strategy.h).
#include "swift/distributed/model_parallel_strategy.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>

#include "swift/core/bytes.h"
#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/distributed/context_parallel_batch.h"
#include "swift/distributed/gradient_norm.h"
#include "swift/distributed/model_parallel_parts.h"
#include "swift/distributed/pipeline_schedule.h"
#include "swift/distributed/zero.h"
#include "swift/io/model_parallel_files.h"
#include "swift/model/expert_parallel.h"
#include "swift/model/param_sharding.h"
#include "swift/model/parameter_layout.h"

namespace swift::distributed {
namespace {

// The model's view of a TP group.
class GroupComm : public model::TensorParallelComm {
 public:
  explicit GroupComm(ProcessGroup& group) : group_(group) {}
  int rank() const override { return group_.rank(); }
  int size() const override { return group_.world_size(); }
  void all_reduce_sum(at::Tensor& t) override { group_.all_reduce_sum(t); }
  void all_reduce_max(at::Tensor& t) override { group_.all_reduce_max(t); }
  at::Tensor all_gather(const at::Tensor& t, int64_t dim) override { return group_.all_gather(t, dim); }
  at::Tensor reduce_scatter_sum(const at::Tensor& t, int64_t dim) override { return group_.reduce_scatter_sum(t, dim); }

 private:
  ProcessGroup& group_;
};

// The model's view of the CP group. The ring's sends and receives are ordered even/odd, so that on NCCL (where a
// send may wait for its receive) neighbours never both wait in a send.
class ContextGroupComm : public model::ContextParallelComm {
 public:
  explicit ContextGroupComm(ProcessGroup& group) : group_(group) {}
  int rank() const override { return group_.rank(); }
  int size() const override { return group_.world_size(); }
  at::Tensor all_gather(const at::Tensor& t, int64_t dim) override { return group_.all_gather(t, dim); }
  at::Tensor all_to_all(const at::Tensor& t, int64_t scatter_dim, int64_t gather_dim) override {
    return group_.all_to_all(t, scatter_dim, gather_dim);
  }
  std::function<at::Tensor()> start_ring_shift(const at::Tensor& t, int channel) override {
    const int next = (rank() + 1) % size(), prev = (rank() + size() - 1) % size();
    at::Tensor sent = t.contiguous(), received = at::empty_like(sent);
    PendingCollective send, receive;
    if (rank() % 2 == 0) {
      send = group_.start_send(sent, next, channel);
      receive = group_.start_recv(received, prev, channel);
    } else {
      receive = group_.start_recv(received, prev, channel);
      send = group_.start_send(sent, next, channel);
    }
    return [send, receive, sent, received]() mutable {
      receive.wait();
      send.wait();
      return received;
    };
  }

 private:
  ProcessGroup& group_;
};

std::vector<int> ranks_from(int first, int count, int stride) {
  std::vector<int> out;
  for (int i = 0; i < count; ++i) out.push_back(first + i * stride);
  return out;
}

std::string layout_name(int a, int b) { return std::to_string(a) + "." + std::to_string(b); }

// Tensors between stages: a header (dtype, rank, sizes) and then the values, so the receiver needs to know nothing
// in advance. Sends are started and left running (the caller keeps the tensors and waits at the end of the step):
// a stage that waited for its send before receiving could wait for a neighbour that is itself sending.
constexpr int64_t kHeaderLength = 8;

void start_send_tensor(ProcessGroup& group, const at::Tensor& tensor, int dst, int tag,
                       std::vector<PendingCollective>& pending, std::vector<at::Tensor>& keep) {
  SWIFT_ASSERT(tensor.dim() <= kHeaderLength - 2, "a tensor sent between stages has at most 6 dimensions");
  std::vector<int64_t> header(kHeaderLength, 0);
  header[0] = static_cast<int64_t>(tensor.scalar_type());
  header[1] = tensor.dim();
  for (int64_t d = 0; d < tensor.dim(); ++d) header[static_cast<size_t>(d) + 2] = tensor.size(d);
  keep.push_back(at::tensor(header, at::kLong).to(tensor.device()));
  pending.push_back(group.start_send(keep.back(), dst, tag));
  keep.push_back(tensor.detach().contiguous());
  pending.push_back(group.start_send(keep.back(), dst, tag));
}

at::Tensor receive_tensor(ProcessGroup& group, int src, int tag, c10::Device device) {
  at::Tensor header = at::empty({kHeaderLength}, at::TensorOptions().dtype(at::kLong).device(device));
  group.start_recv(header, src, tag).wait();
  const auto h = header.to(c10::kCPU);
  const int64_t* v = h.data_ptr<int64_t>();
  SWIFT_ASSERT(v[1] >= 0 && v[1] <= kHeaderLength - 2, "a malformed tensor header from another stage");
  at::Tensor out = at::empty(std::vector<int64_t>(v + 2, v + 2 + v[1]),
                             at::TensorOptions().dtype(static_cast<c10::ScalarType>(v[0])).device(device));
  group.start_recv(out, src, tag).wait();
  return out;
}

void wait_all(std::vector<PendingCollective>& pending) {
  for (auto& p : pending) p.wait();
  pending.clear();
}

// The model's view of the EP group.
class ExpertGroupComm : public model::ExpertParallelComm {
 public:
  explicit ExpertGroupComm(ProcessGroup& group) : group_(group) {}
  int rank() const override { return group_.rank(); }
  int size() const override { return group_.world_size(); }
  at::Tensor all_to_all(const at::Tensor& rows, const std::vector<int64_t>& send_rows,
                        const std::vector<int64_t>& receive_rows) override {
    return group_.all_to_all_rows(rows, send_rows, receive_rows);
  }

 private:
  ProcessGroup& group_;
};

}  // namespace

std::shared_ptr<model::TensorParallelComm> tensor_parallel_comm(ProcessGroup& group) {
  return std::make_shared<GroupComm>(group);
}

ModelParallel::ModelParallel(std::unique_ptr<ProcessGroup> world, std::string device, ZeroConfig zero,
                             ModelParallelSizes sizes)
    : ParallelStrategy(std::move(world), std::move(device), std::move(zero)), sizes_(sizes) {
  const int tp = sizes_.tp, cp = sizes_.cp, stage = stage_ranks(), in_stage = rank() % stage;
  if (tp > 1) tp_group_ = group_->subgroup(ranks_from(rank() - tp_rank(), tp, 1), "tp/" + std::to_string(rank() / tp));
  if (cp > 1)
    cp_group_ = group_->subgroup(ranks_from(rank() - cp_rank() * tp, cp, tp),
                                 "cp/" + layout_name(rank() / (cp * tp), tp_rank()));
  if (data_group_size() > 1)
    data_group_ = group_->subgroup(ranks_from(pp_rank() * stage + tp_rank(), data_group_size(), tp),
                                   "dp/" + layout_name(pp_rank(), tp_rank()));
  if (sizes_.pp > 1) pp_group_ = group_->subgroup(ranks_from(in_stage, sizes_.pp, stage), "pp/" + std::to_string(in_stage));
  if (sizes_.ep > 1) {  // ep consecutive ranks of the stage; those at the same place in each hold the same experts
    const int ep = sizes_.ep, first_of_stage = pp_rank() * stage;
    const std::string place = std::to_string(pp_rank()) + ".";
    ep_group_ = group_->subgroup(ranks_from(first_of_stage + in_stage - ep_rank(), ep, 1),
                                 "ep/" + place + std::to_string(expert_data_group_rank()));
    if (expert_data_group_size() > 1)
      expert_data_group_ = group_->subgroup(ranks_from(first_of_stage + ep_rank(), expert_data_group_size(), ep),
                                            "edp/" + place + std::to_string(ep_rank()));
  }
  const std::string cp_size = cp > 1 ? " x cp " + std::to_string(cp) : "", cp_place = cp > 1 ? ", cp " + std::to_string(cp_rank()) : "";
  const std::string ep_size = sizes_.ep > 1 ? " (experts split over ep " + std::to_string(sizes_.ep) + " of them)" : "";
  const std::string ep_place = sizes_.ep > 1 ? ", ep " + std::to_string(ep_rank()) : "";
  log_info("model parallel: tp ", tp, cp_size, " x pp ", sizes_.pp, " x dp ", dp_size(), ep_size, "; this rank: tp ", tp_rank(),
           cp_place, ", pp ", pp_rank(), ", dp ", dp_rank(), ep_place);
}

ModelParallel::~ModelParallel() = default;

std::vector<double> ModelParallel::sum(const std::vector<double>& values) {
  return data_group_ ? data_group_->sum(values) : values;
}

data::Batch ModelParallel::local_sequences(const data::Batch& batch) const {
  // Sequence parallelism cuts each rank's rows again over the TP group: their length a multiple of tp.
  const int64_t sequence_multiple = sizes_.sequence_parallel ? sizes_.tp : 1;
  if (!cp_group_ && sequence_multiple == 1) return batch;
  return context_parallel_batch(batch, cp_rank(), sizes_.cp, sequence_multiple);
}

std::vector<double> ModelParallel::sum_metrics(const std::vector<double>& values) {
  std::vector<double> out = sum(values);
  if (!pp_group_) return out;
  // The last stage computes the loss; a stage before it reports only what its own layers give (the routers' figures
  // of its sparse layers: StageResult::metrics), (0, 0) elsewhere.
  return pp_group_->sum(out);
}

int ModelParallel::owner_stage(const std::string& name) const {
  return pipeline_stage_of(name, layer_begin_) % sizes_.pp;
}

bool ModelParallel::holds(const std::string& name) const {
  if (layer_begin_.empty()) return true;
  if (tied_embedding_ && last_stage() && model::parameter_place(name).side == model::ParameterPlace::Side::kInput)
    return true;
  return owner_stage(name) == pp_rank();
}

void ModelParallel::enter_chunk(int chunk) {
  const int virtual_stage = chunk * sizes_.pp + pp_rank();
  stage_->first_layer = layer_begin_[static_cast<size_t>(virtual_stage)];
  stage_->end_layer = layer_begin_[static_cast<size_t>(virtual_stage) + 1];
  stage_->first = virtual_stage == 0;
  stage_->last = virtual_stage == sizes_.pp * sizes_.virtual_stages - 1;
}

model::PlacementPlan ModelParallel::placement_plan(const std::vector<std::string>& removed) {
  (void)removed;
  return own_part_plan(/*frozen=*/false);
}

model::PlacementPlan ModelParallel::frozen_placement_plan() { return own_part_plan(/*frozen=*/true); }

void ModelParallel::check_fits_stages(int64_t layers, bool tied) const {
  SWIFT_CHECK(layers == layer_begin_.back() && tied == tied_embedding_, UsageError,
              "under --pp_size " + std::to_string(sizes_.pp) + " a reference model is split over the policy's stages, but it has " +
                  std::to_string(layers) + " layers" + (tied ? " and a tied head" : "") + " where the policy has " +
                  std::to_string(layer_begin_.back()) + (tied_embedding_ ? " and a tied head" : ""),
              "give a --ref_model of the policy's architecture, or train without --pp_size");
}

model::PlacementPlan ModelParallel::own_part_plan(bool frozen) {
  if (sizes_.pp == 1 && sizes_.tp == 1 && sizes_.ep == 1) return nullptr;
  // Each stage reads its own parameters; the others' stay shape-only (their shapes are the model's). With tensor
  // parallelism a stage's are read after the split (assign_ownership, split_frozen_model), each rank its slices
  // only; with expert parallelism its experts likewise.
  const auto own = [this](const std::string& name) {
    const bool split_later = sizes_.tp > 1 || (sizes_.ep > 1 && model::is_expert_parameter(name));
    return split_later ? model::Placement::kDeferred : model::Placement::kDevice;
  };
  return [this, own, frozen](const std::vector<model::ParameterInfo>& infos) {
    if (sizes_.pp > 1) {
      std::vector<std::string> names;
      for (const auto& info : infos) names.push_back(info.name);
      const int64_t layers = decoder_layers_among(names);
      const bool tied = std::none_of(names.begin(), names.end(),  // no LM head (or score head) of its own
                                     [](const std::string& n) { return model::parameter_place(n).output_layer; });
      if (!frozen) {  // the policy's checkpoint sets the split
        layer_begin_ = pipeline_layer_split(layers, sizes_.pp * sizes_.virtual_stages, sizes_.first_stage_layers,
                                            sizes_.last_stage_layers);
        tied_embedding_ = tied;
      }
      check_fits_stages(layers, tied);
    }
    std::vector<model::Placement> where;
    for (const auto& info : infos) where.push_back(holds(info.name) ? own(info.name) : model::Placement::kElsewhere);
    return where;
  };
}

void ModelParallel::read_own_slices(model::CausalLM& model, const std::vector<model::ShardedParameter>& tensor_split,
                                    const std::vector<model::ShardedParameter>& expert_split) {
  if (!model->deferred_weights()) return;  // loaded whole (DoRA's magnitudes need the whole weights), or initialised
  std::map<std::string, model::WeightSlice> slices;  // part `index` of `count` (keep_parameter_slice's)
  auto add = [&](const std::vector<model::ShardedParameter>& split, int index, int count) {
    for (const auto& s : split) slices[s.name] = {s.dim, index * (s.full_size / count), s.full_size / count};
  };
  add(tensor_split, tp_rank(), sizes_.tp);
  add(expert_split, ep_rank(), sizes_.ep);  // this rank's experts
  const int64_t bytes = model::read_deferred_weights(model, [&slices](const std::string& name) {
    const auto it = slices.find(name);
    return it == slices.end() ? std::nullopt : std::optional<model::WeightSlice>(it->second);
  });
  // With tensor parallelism every weight of the stage waits for the split; with expert parallelism alone only the
  // experts do (the others are read whole at load).
  if (sizes_.tp > 1)
    log_info("tensor parallel: read ", format_bytes(static_cast<double>(bytes)),
             " of weights from the files after the split (this rank's slices and its replicated weights)");
  else
    log_info("expert parallel: read ", format_bytes(static_cast<double>(bytes)),
             " of expert weights from the files after the split (this rank's experts only)");
}

void ModelParallel::split_experts(model::CausalLM& model) {
  expert_sharded_ = model::apply_expert_parallel(model, std::make_shared<ExpertGroupComm>(*ep_group_));
  const int64_t experts = model->config().moe.num_experts, here = experts / sizes_.ep;
  log_info("expert parallel: the experts of each sparse layer split over ", sizes_.ep, " ranks (this rank: experts ",
           ep_rank() * here, "-", (ep_rank() + 1) * here - 1, " of ", experts, "), tokens sent to them by all-to-all",
           expert_data_group_ ? "; their gradients summed over the " + std::to_string(expert_data_group_size()) +
                                    " ranks holding the same experts"
                              : std::string());
}

bool ModelParallel::is_expert(const at::Tensor& p) const {
  return std::any_of(expert_sharded_.begin(), expert_sharded_.end(),
                     [&](const model::ShardedParameter& s) { return s.parameter.is_same(p); });
}

void ModelParallel::keep_own_stage(model::CausalLM& model) {
  const auto& config = model->config();
  layer_begin_ = pipeline_layer_split(config.num_hidden_layers, sizes_.pp * sizes_.virtual_stages,
                                      sizes_.first_stage_layers, sizes_.last_stage_layers);
  tied_embedding_ = !model->lm_head && !model->score;
  at::NoGradGuard no_grad;
  int64_t dropped = 0;
  for (auto& item : model->named_parameters()) {
    if (holds(item.key())) continue;
    at::Tensor& p = item.value();
    if (p.requires_grad()) {
      trainable_on_other_stages_.insert(item.key());
      other_stages_trainable_bytes_ += static_cast<int64_t>(p.nbytes());
    }
    p.requires_grad_(false);
    if (model::holds_values(p)) {
      dropped += static_cast<int64_t>(p.nbytes());
      p.set_data(model::shape_only(p.sizes(), p.options()));
    }
  }
  stage_ = std::make_shared<model::PipelineStage>();
  enter_chunk(0);
  model->set_pipeline_stage(stage_);
  if (tied_embedding_ && (first_stage() || last_stage())) {
    const int first = rank() % stage_ranks(), last = first + (sizes_.pp - 1) * stage_ranks();
    embedding_group_ = group_->subgroup({first, last}, "embedding/" + std::to_string(first));
  }
  const int stages = sizes_.pp * sizes_.virtual_stages;
  std::string split, mine;
  for (int v = 0; v < stages; ++v) {
    const int64_t begin = layer_begin_[static_cast<size_t>(v)], end = layer_begin_[static_cast<size_t>(v) + 1];
    split += (v ? ", " : "") + std::to_string(end - begin);
    if (v % sizes_.pp == pp_rank()) mine += (mine.empty() ? "" : ", ") + std::to_string(begin) + "-" + std::to_string(end - 1);
  }
  log_info("pipeline: ", stages, sizes_.virtual_stages > 1 ? " virtual stages (" + std::to_string(sizes_.virtual_stages) +
                                                                 " per rank, interleaved)" : std::string(" stages"),
           " of ", split, " layers",
           tied_embedding_ ? " (the embedding is tied: the last stage keeps a copy as its head)" : "",
           "; this rank runs layers ", mine, first_stage() ? " after the embedding" : "", last_stage() ? " and the head" : "",
           dropped > 0 ? "; freed the other stages' " + format_bytes(static_cast<double>(dropped)) : std::string());
}

void ModelParallel::split_sequences(model::CausalLM& model) {
  auto cp = std::make_shared<model::ContextParallel>();
  cp->comm = std::make_shared<ContextGroupComm>(*cp_group_);
  // Ulysses gives each rank whole heads: those this rank computes (after tensor parallelism) must divide.
  const int64_t heads = model->config().num_attention_heads / sizes_.tp;
  const bool ulysses = sizes_.context_attention == model::ContextParallelAttention::kUlysses && heads % sizes_.cp == 0;
  cp->attention = ulysses ? model::ContextParallelAttention::kUlysses : model::ContextParallelAttention::kRing;
  if (sizes_.context_attention == model::ContextParallelAttention::kUlysses && !ulysses)
    log_info("sequence parallelism: ", heads, " attention heads per rank do not divide by ", sizes_.cp,
             " (Ulysses gives each rank whole heads); ring attention instead, with the same results");
  log_info("context parallelism: each row split over ", sizes_.cp, " ranks (this rank: chunks ", cp_rank(), " and ",
           2 * sizes_.cp - 1 - cp_rank(), " of ", 2 * sizes_.cp, "), attention by ",
           ulysses ? "Ulysses all-to-all (whole rows, " + std::to_string(heads / sizes_.cp) + " heads here)"
                   : std::string("ring (key/value blocks passed around the group)"));
  context_parallel_ = cp;
  model->set_context_parallel(std::move(cp));
}

void ModelParallel::split_frozen_model(model::CausalLM& model) {
  if (context_parallel_) {  // the same shares of the rows as the policy, over the same group
    std::shared_ptr<model::ContextParallel> cp = context_parallel_;
    const int64_t heads = model->config().num_attention_heads / sizes_.tp;
    if (cp->attention == model::ContextParallelAttention::kUlysses && heads % sizes_.cp != 0) {
      cp = std::make_shared<model::ContextParallel>(*context_parallel_);  // Ulysses gives each rank whole heads
      cp->attention = model::ContextParallelAttention::kRing;
      log_info("context parallelism: the reference's ", heads, " attention heads per rank do not divide by ", sizes_.cp,
               "; ring attention for it (the same results)");
    }
    model->set_context_parallel(std::move(cp));
  }
  if (stage_) {  // this stage's layers (the placement plan read no others), run through the policy's PipelineStage
    check_fits_stages(model->config().num_hidden_layers, !model->lm_head && !model->score);  // a quantized one: read whole
    at::NoGradGuard no_grad;
    for (auto& item : model->named_parameters())
      if (!holds(item.key()) && model::holds_values(item.value()))
        item.value().set_data(model::shape_only(item.value().sizes(), item.value().options()));
    model->set_pipeline_stage(stage_);
  }
  // Its attention and sparse layers exchange over the policy's groups, in the same order on every rank: each pass of
  // the frozen model runs on all of them alike (train::run_frozen_passes).
  std::vector<model::ShardedParameter> tensor_split, expert_split;
  if (tp_group_)
    tensor_split = model::apply_tensor_parallel(model, tensor_parallel_comm(*tp_group_), sizes_.sequence_parallel).sharded;
  if (ep_group_) expert_split = model::apply_expert_parallel(model, std::make_shared<ExpertGroupComm>(*ep_group_));
  if (tp_group_ || ep_group_) read_own_slices(model, tensor_split, expert_split);
}

void ModelParallel::assign_ownership(model::CausalLM& model) {
  if (sizes_.pp > 1) keep_own_stage(model);
  if (cp_group_) split_sequences(model);
  if (tp_group_) {
    model::TensorParallelSplit split =
        model::apply_tensor_parallel(model, tensor_parallel_comm(*tp_group_), sizes_.sequence_parallel);
    if (sizes_.sequence_parallel)
      log_info("sequence parallelism: the activations between the tensor-parallel layers cut along the sequence over ",
               sizes_.tp, " ranks (this rank: part ", tp_rank(), "; rows padded to a multiple of ", sizes_.tp,
               sizes_.cp > 1 ? " in each context-parallel share" : "", ")");
    sharded_ = std::move(split.sharded);
    partial_gradients_ = std::move(split.partial_gradients);
  }
  if (ep_group_) {
    split_experts(model);
    // Experts split over the EP group are summed over the ranks holding them (which span the TP group), not over TP.
    partial_gradients_.erase(std::remove_if(partial_gradients_.begin(), partial_gradients_.end(),
                                            [this](const at::Tensor& p) { return is_expert(p); }),
                             partial_gradients_.end());
  }
  if (tp_group_ || ep_group_) read_own_slices(model, sharded_, expert_sharded_);
  ParallelStrategy::assign_ownership(model);
  if (shards_optimizer_over_replicas()) partition_optimizer_state();
  elsewhere_.insert(trainable_on_other_stages_.begin(), trainable_on_other_stages_.end());
  // The norm counts the last stage's copy of a tied embedding once (the first stage's).
  const bool copy_of_tied = tied_embedding_ && last_stage() && !first_stage();
  for (size_t i = 0; i < trainable_.size(); ++i) {
    const at::Tensor& p = trainable_[i];
    if (copy_of_tied && model::parameter_place(trainable_names_[i]).side == model::ParameterPlace::Side::kInput) continue;
    const bool is_split = std::any_of(sharded_.begin(), sharded_.end(),
                                      [&](const model::ShardedParameter& s) { return s.parameter.is_same(p); });
    (is_split ? split_trainable_ : is_expert(p) ? expert_trainable_ : replicated_trainable_).push_back(p);
  }
  // What one rank would hold without any split (the held-memory log compares with it): the base class counted
  // every parameter at its size here (other stages' whole, as shapes) and this rank's trainable ones.
  int64_t held = 0, whole = 0;
  for (const auto* split : {&sharded_, &expert_sharded_})
    for (const auto& s : *split) {
      const auto sliced = static_cast<int64_t>(s.parameter.nbytes());
      const int64_t unsplit = sliced * s.full_size / s.parameter.size(s.dim);
      full_parameter_bytes_ += unsplit - sliced;
      if (s.parameter.requires_grad()) full_trainable_bytes_ += unsplit - sliced;
      if (!model::holds_values(s.parameter) || split == &expert_sharded_) continue;
      held += sliced;
      whole += unsplit;
    }
  full_trainable_bytes_ += other_stages_trainable_bytes_;
  if (tp_group_)
    log_info("tensor parallel: ", sharded_.size(), " parameters split, ", format_bytes(static_cast<double>(held)),
             " of their ", format_bytes(static_cast<double>(whole)), " on this rank");
}

void ModelParallel::partition_optimizer_state() {
  // Megatron's distributed optimizer (ZeRO-1 over the replicas): the experts' state over the ranks holding the same
  // experts, the rest over the data group.
  std::vector<int64_t> bytes, dense_bytes, expert_bytes;
  for (const auto& p : trainable_) {
    bytes.push_back(static_cast<int64_t>(p.nbytes()));
    (is_expert(p) ? expert_bytes : dense_bytes).push_back(bytes.back());
  }
  dp_owners_ = ParameterPartition(dense_bytes, data_group_size()).owners();
  const int expert_group_rank = expert_data_group_rank();
  expert_owners_ = ParameterPartition(expert_bytes, expert_data_group_size()).owners();
  std::vector<int> owner_ranks;  // as keep_owned reads them: this rank where its place in its group owns it
  std::vector<int> owner_in_data_group;  // for the log: the data-group rank of each parameter's owner
  size_t dense = 0, expert = 0;
  for (const auto& p : trainable_) {
    const bool mine = is_expert(p) ? expert_owners_[expert++] == expert_group_rank : dp_owners_[dense++] == data_group_rank();
    owner_ranks.push_back(mine ? rank() : -1);
    owner_in_data_group.push_back(mine ? data_group_rank() : -1);
  }
  keep_owned(owner_ranks);
  double here = 0, total = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (owner_in_data_group[i] >= 0) here += static_cast<double>(bytes[i]);
    total += static_cast<double>(bytes[i]);
  }
  log_info("distributed optimizer: the AdamW state of this rank's part of the model split over ", data_group_size(),
           sizes_.cp > 1 ? " ranks (data x context parallel)" : " replicas",
           sizes_.ep == 1 ? std::string()
           : expert_data_group_size() > 1 ? " (the experts' over the " + std::to_string(expert_data_group_size()) + " ranks holding the same)"
                                          : std::string(" (the experts' with their only rank)"),
           ", ", format_bytes(2.0 * here), " of ", format_bytes(2.0 * total), " here");
}

ParallelFootprint ModelParallel::footprint(model::CausalLM& model) const {
  ParallelFootprint f = ParallelStrategy::footprint(model);
  f.world_size = data_group_size();
  f.held_parameters_only = sizes_.pp > 1;
  f.sequence_split = sizes_.cp;
  f.tensor_split = sizes_.tp;
  f.sequence_parallel = sizes_.sequence_parallel;
  if (sizes_.pp > 1) {  // 1F1B keeps the activations of up to p - s micro-batches (interleaved: counted) per stage
    int64_t chunk_layers = 0;
    for (int c = 0; c < sizes_.virtual_stages; ++c) {
      const size_t v = static_cast<size_t>(c * sizes_.pp + pp_rank());
      chunk_layers = std::max(chunk_layers, layer_begin_[v + 1] - layer_begin_[v]);
    }
    const int stage = pp_rank(), stages = sizes_.pp, chunks = sizes_.virtual_stages;
    f.activation_layers = [=](int64_t micro_batches) {
      return chunk_layers * pipeline_peak_live_passes(stage, stages, chunks, micro_batches);
    };
  }
  if (shards_optimizer_over_replicas()) f.zero_stage = 1;
  return f;
}

void ModelParallel::begin_training(model::CausalLM& model) {
  (void)model;
  std::vector<at::Tensor> dense, experts;
  for (const auto& p : trainable_) (is_expert(p) ? experts : dense).push_back(p);
  if (data_group_) {
    data_sync_.emplace(*data_group_, dense, zero_.reduce_bucket_bytes);
    if (shards_optimizer_over_replicas()) data_sync_->set_owners(dp_owners_);
    data_sync_->broadcast_parameters();
  }
  // The ranks holding the same experts: across the data group, and with --tp_size above --ep_size within one replica
  // too (TP4 x EP2 on 4 ranks has no data group but two holders of each expert). None: each rank's are its own.
  if (!expert_data_group_) return;
  expert_sync_.emplace(*expert_data_group_, experts, zero_.reduce_bucket_bytes);
  if (shards_optimizer_over_replicas()) expert_sync_->set_owners(expert_owners_);
  expert_sync_->broadcast_parameters();
}

void ModelParallel::run_micro_batches(MicroBatches& batches, bool backward) {
  if (pp_group_) run_pipeline(batches, backward);
  else ParallelStrategy::run_micro_batches(batches, backward);
}

void ModelParallel::run_pipeline(MicroBatches& batches, bool backward) {
  const int64_t m = static_cast<int64_t>(batches.size());
  const int chunks = sizes_.virtual_stages, last_virtual_stage = sizes_.pp * chunks - 1;
  // Neighbours: the previous and next virtual stages run on the previous and next ranks (around the ring: with
  // interleaving the last rank's chunk c feeds the first rank's chunk c + 1).
  const int prev = (pp_rank() + sizes_.pp - 1) % sizes_.pp, next = (pp_rank() + 1) % sizes_.pp;
  constexpr int kActivations = 0, kGradients = 1;  // separate channels between the same two ranks
  const c10::Device device = model_->device();
  std::vector<PipelinePass> passes;
  if (backward || (chunks > 1 && m % sizes_.pp == 0)) {
    passes = interleaved_one_forward_one_backward(pp_rank(), sizes_.pp, chunks, m);
    // Forward only (a reference's passes over a step): the schedule's forwards, in the same overlapping order.
    if (!backward)
      passes.erase(std::remove_if(passes.begin(), passes.end(), [](const PipelinePass& p) { return !p.forward; }),
                   passes.end());
  } else {  // forward only (an evaluation round's one micro-batch): each micro-batch through every chunk in turn
    for (int64_t k = 0; k < m; ++k)
      for (int c = 0; c < chunks; ++c) passes.push_back({true, k, c});
  }
  const auto last_backward = std::find_if(passes.rbegin(), passes.rend(), [](const PipelinePass& p) { return !p.forward; });
  // Per (micro-batch, chunk) between its forward and its backward: the input (to send its gradient back) and output.
  std::vector<at::Tensor> inputs(static_cast<size_t>(m * chunks)), outputs(static_cast<size_t>(m * chunks));
  std::vector<PendingCollective> sends;
  std::vector<at::Tensor> in_flight;
  const auto started = std::chrono::steady_clock::now();
  double waited = 0;  // seconds blocked on a neighbour's activations or gradients: the bubble and any imbalance
  auto receive = [&](int src, int tag) {
    const auto t = std::chrono::steady_clock::now();
    at::Tensor out = receive_tensor(*pp_group_, src, tag, device);
    waited += std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    return out;
  };
  for (const PipelinePass& pass : passes) {
    const auto k = static_cast<size_t>(pass.micro_batch);
    const size_t slot = k * static_cast<size_t>(chunks) + static_cast<size_t>(pass.chunk);
    const int virtual_stage = pass.chunk * sizes_.pp + pp_rank();
    SWIFT_ASSERT(batches.present(k), "every stage of a pipeline runs every micro-batch");
    if (pass.forward) {
      enter_chunk(pass.chunk);
      if (virtual_stage > 0) {
        stage_->input = receive(prev, kActivations);
        if (backward) stage_->input.requires_grad_(true);
        inputs[slot] = stage_->input;
      }
      outputs[slot] = virtual_stage == last_virtual_stage ? batches.loss(k) : batches.stage_output(k);
      stage_->input = at::Tensor();
      if (virtual_stage < last_virtual_stage) start_send_tensor(*pp_group_, outputs[slot], next, kActivations, sends, in_flight);
      if (!backward) outputs[slot] = inputs[slot] = at::Tensor();
      continue;
    }
    // The data-parallel exchange overlaps the step's last backward when it completes every gradient (one chunk).
    if (&pass == &*last_backward && chunks == 1) before_backward(/*last_of_step=*/true);
    at::Tensor output_grad;
    if (virtual_stage < last_virtual_stage) output_grad = receive(next, kGradients);
    // A first stage whose layers train nothing (a frozen embedding, adapters only later) has no graph to run.
    if (outputs[slot].requires_grad()) outputs[slot].backward(output_grad);
    if (virtual_stage > 0) {
      const at::Tensor grad = inputs[slot].grad();
      start_send_tensor(*pp_group_, grad.defined() ? grad : at::zeros_like(inputs[slot]), prev, kGradients, sends, in_flight);
    }
    outputs[slot] = inputs[slot] = at::Tensor();
  }
  enter_chunk(0);
  wait_all(sends);
  if (backward) {
    schedule_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    waiting_seconds_ += waited;
    micro_batches_ = m;
  }
}

void ModelParallel::before_backward(bool last_of_step) {
  if (!last_of_step) return;
  for (auto* sync : {&data_sync_, &expert_sync_})
    if (*sync) (*sync)->overlap_next_backward(GradientSync::Exchange::kAllReduce);
}

void ModelParallel::finish_gradients(bool first_step) {
  (void)first_step;
  // After the data-parallel exchange, which writes its sums back into the gradients when it completes.
  for (auto* sync : {&data_sync_, &expert_sync_})
    if (*sync) (*sync)->all_reduce_gradients();
  sum_partial_gradients();
  if (embedding_group_) {  // the tied embedding's two uses, on the first and the last stage
    at::Tensor& embedding = model_->model->embed_tokens->weight;
    if (embedding.requires_grad() && embedding.grad().defined()) embedding_group_->all_reduce_sum(embedding.mutable_grad());
  }
}

// One exchange for all of them (under sequence parallelism every norm of the stage is here).
void ModelParallel::sum_partial_gradients() {
  std::vector<at::Tensor> grads;
  for (auto& p : partial_gradients_)
    if (p.requires_grad() && p.grad().defined()) grads.push_back(p.mutable_grad());
  if (grads.empty()) return;
  std::vector<at::Tensor> flat;
  for (const auto& g : grads) flat.push_back(g.reshape(-1));
  at::Tensor buffer = at::cat(flat);
  tp_group_->all_reduce_sum(buffer);
  int64_t offset = 0;
  at::NoGradGuard no_grad;
  for (auto& g : grads) {
    g.copy_(buffer.narrow(0, offset, g.numel()).view_as(g));
    offset += g.numel();
  }
}

double ModelParallel::clip_gradients(double max_norm, bool& overflow) {
  overflow = group_->sum({overflow ? 1.0 : 0.0})[0] > 0;
  const double split_norm = gradient_norm(split_trainable_), replicated_norm = gradient_norm(replicated_trainable_);
  double squares = split_norm * split_norm;
  if (tp_group_) squares = tp_group_->sum({squares})[0];
  squares += replicated_norm * replicated_norm;
  if (ep_group_) {  // each rank of the EP group has its own experts' gradients
    const double experts = gradient_norm(expert_trainable_);
    squares += ep_group_->sum({experts * experts})[0];
  }
  if (pp_group_) squares = pp_group_->sum({squares})[0];
  const double norm = std::sqrt(squares);
  const double coefficient = max_norm / (norm + 1e-6);  // as clip_grad_norm_
  if (max_norm > 0 && coefficient < 1.0) scale_gradients(trainable_, coefficient);
  return norm;
}

void ModelParallel::after_optimizer_step(bool stepped, bool first_step, const std::vector<at::Tensor>& optimizer_state) {
  if (stepped && shards_optimizer_over_replicas())  // the owners' new values
    for (auto* sync : {&data_sync_, &expert_sync_})
      if (*sync) (*sync)->broadcast_from_owners();
  if (first_step) {
    std::vector<std::string> kinds;
    if (sizes_.tp > 1) kinds.push_back("tensor");
    if (sizes_.cp > 1) kinds.push_back("context");
    if (sizes_.pp > 1) kinds.push_back("pipeline");
    if (sizes_.ep > 1) kinds.push_back("expert");
    std::string what;
    for (size_t i = 0; i < kinds.size(); ++i) what += (i == 0 ? "" : i + 1 == kinds.size() ? " and " : ", ") + kinds[i];
    log_held_memory(what + " parallelism", model_, optimizer_state);
  }
}

std::vector<ParameterSlice> ModelParallel::parameter_slices() const {
  std::vector<ParameterSlice> out = ParallelStrategy::parameter_slices();
  for (auto& slice : out) {
    for (const auto& s : sharded_) {
      if (s.name != slice.name) continue;
      slice.whole_shape[static_cast<size_t>(s.dim)] = s.full_size;
      slice.dim = s.dim;
      slice.index = tp_rank();
      slice.count = sizes_.tp;
    }
    for (const auto& s : expert_sharded_) {
      if (s.name != slice.name) continue;
      slice.whole_shape[0] = s.full_size;
      slice.dim = 0;
      slice.index = ep_rank();
      slice.count = sizes_.ep;
    }
  }
  return out;
}

void ModelParallel::end_training() {
  log_time_in_collectives({group_.get(), tp_group_.get(), cp_group_.get(), data_group_.get(), pp_group_.get(),
                           embedding_group_.get(), ep_group_.get(), expert_data_group_.get()});
  if (!pp_group_) return;
  // Each rank's share of the training schedule spent waiting for its neighbours, next to 1F1B's theoretical bubble.
  std::vector<double> share(static_cast<size_t>(world_size()), 0.0);
  share[static_cast<size_t>(rank())] = waiting_seconds_ / std::max(schedule_seconds_, 1e-9);
  share = group_->sum(share);
  std::string text;
  for (size_t r = 0; r < share.size(); ++r) text += (r ? ", " : "") + std::to_string(static_cast<int>(std::lround(100 * share[r]))) + "%";
  log_info("pipeline: share of the schedule waiting for the neighbouring stages per rank: ", text, "; the schedule's bubble (p - 1) / (v m + p - 1) at p = ",
           sizes_.pp, ", v = ", sizes_.virtual_stages, ", m = ", micro_batches_, ": ",
           static_cast<int>(std::lround(100 * pipeline_bubble_fraction(sizes_.pp, micro_batches_, sizes_.virtual_stages))), "%");
}

void ModelParallel::begin_save(bool trainable_only) {
  at::NoGradGuard no_grad;
  held_while_saving_.clear();
  // TP's slices from the TP group, every expert from the EP group.
  for (auto [split, group] : {std::pair{&sharded_, tp_group_.get()}, std::pair{&expert_sharded_, ep_group_.get()}})
    for (auto& s : *split) {
      // An adapter checkpoint leaves the frozen base split; other stages' parameters are not here to gather.
      if ((trainable_only && !s.parameter.requires_grad()) || !model::holds_values(s.parameter)) continue;
      held_while_saving_.emplace_back(s.parameter, s.parameter.data());
      s.parameter.set_data(group->all_gather(s.parameter.data(), s.dim));
    }
  if (pp_group_) collect_stages_on_rank0(trainable_only);
}

void ModelParallel::collect_stages_on_rank0(bool trainable_only) {
  if (rank() % stage_ranks() != 0) return;  // rank 0 writes; its pipeline's other stages send it their part
  std::vector<PendingCollective> sends;
  std::vector<at::Tensor> in_flight;
  for (auto& item : model_->named_parameters()) {
    const std::string& name = item.key();
    const bool trainable = item.value().requires_grad() || trainable_on_other_stages_.count(name) > 0;
    if (trainable_only && !trainable) continue;
    const int owner = owner_stage(name);
    if (owner == 0) continue;
    if (pp_rank() == owner) start_send_tensor(*pp_group_, item.value(), 0, 0, sends, in_flight);
    if (!first_stage()) continue;
    at::Tensor& p = item.value();
    held_while_saving_.emplace_back(p, p.data());
    p.set_data(receive_tensor(*pp_group_, owner, 0, p.device()));
  }
  wait_all(sends);
}

void ModelParallel::save_model_part(const std::filesystem::path& dir, std::optional<c10::ScalarType> dtype) {
  if (main_rank()) io::write_model_parallel_index(dir, sizes_.tp, sizes_.pp);
  if (data_group_rank() != 0) return;  // a replica (or context-parallel peer) of the part the first one writes
  std::map<std::string, const model::ShardedParameter*> split;
  for (const auto& s : sharded_) split[s.name] = &s;
  save_model_part_of_rank(
      model_, dir, tp_rank(), pp_rank(),
      // Another stage's, or the last stage's copy of a tied embedding (the first stage writes it): not here.
      [&](const std::string& name, const at::Tensor& value) {
        return model::holds_values(value) && (layer_begin_.empty() || owner_stage(name) == pp_rank());
      },
      [&](const std::string& name, const at::Tensor& value) -> std::optional<std::pair<at::Tensor, io::TensorPart>> {
        const auto s = split.find(name);
        if (s == split.end()) return std::nullopt;
        const int64_t size = value.size(s->second->dim);
        return std::pair{value, io::TensorPart{s->second->dim, tp_rank() * size, s->second->full_size}};
      },
      dtype);
}

void ModelParallel::end_save() {
  at::NoGradGuard no_grad;
  for (auto it = held_while_saving_.rbegin(); it != held_while_saving_.rend(); ++it) it->first.set_data(it->second);
  held_while_saving_.clear();
}

}  // namespace swift::distributed
