// ZeRO-3 as a strategy (see zero3_strategy.h).
#include "swift/distributed/zero3_strategy.h"

#include <torch/cuda.h>

#include <algorithm>
#include <set>

#include "swift/core/bytes.h"
#include "swift/core/logging.h"
#include "swift/model/param_sharding.h"
#include "swift/model/parameter_layout.h"

namespace swift::distributed {

namespace {

bool contains(const std::vector<at::Tensor>& list, const at::Tensor& t) {
  return std::any_of(list.begin(), list.end(), [&](const at::Tensor& u) { return u.is_same(t); });
}

// The decoder layer of each parameter (its index into layout.layers), -1 for those outside the layers.
std::vector<int> layer_of(const model::ParameterLayout& layout) {
  std::vector<int> out(layout.names.size(), -1);
  for (size_t l = 0; l < layout.layers.size(); ++l)
    for (size_t i : layout.layers[l]) out[i] = static_cast<int>(l);
  return out;
}

}  // namespace

model::PlacementPlan Zero3Owners::plan(int rank, bool offload_param, std::vector<std::string> removed) {
  return [this, rank, offload_param, removed](const std::vector<model::ParameterInfo>& infos) {
    auto is_removed = [&](const std::string& name) { return std::find(removed.begin(), removed.end(), name) != removed.end(); };
    std::vector<int64_t> bytes;
    for (const auto& info : infos) bytes.push_back(is_removed(info.name) ? 0 : info.bytes);
    const ParameterPartition loaded(bytes, partition_.world_size());  // largest first, as ZeRO-1/2
    std::vector<model::Placement> where;
    for (size_t i = 0; i < infos.size(); ++i) {
      if (is_removed(infos[i].name)) {
        where.push_back(model::Placement::kElsewhere);
        continue;
      }
      const int owner = loaded.owner(i);
      partition_.charge(owner, infos[i].bytes);
      loaded_[infos[i].name] = {owner, infos[i].bytes};
      where.push_back(owner != rank     ? model::Placement::kElsewhere
                      : offload_param   ? model::Placement::kHost
                                        : model::Placement::kDevice);
    }
    return where;
  };
}

std::vector<int> Zero3Owners::owners(const std::vector<std::string>& names, const std::vector<int64_t>& bytes) {
  if (loaded_.empty()) return ParameterPartition(bytes, partition_.world_size()).owners();
  const std::set<std::string> present(names.begin(), names.end());
  for (const auto& [name, owner_bytes] : loaded_)
    if (!present.count(name)) partition_.charge(owner_bytes.first, -owner_bytes.second);
  std::vector<int> out;
  for (size_t i = 0; i < names.size(); ++i) {
    const auto it = loaded_.find(names[i]);
    out.push_back(it != loaded_.end() ? it->second.first : partition_.assign(bytes[i]));
  }
  return out;
}

Zero3Strategy::Zero3Strategy(std::unique_ptr<ProcessGroup> group, std::string device, ZeroConfig zero)
    : ParallelStrategy(std::move(group), std::move(device), std::move(zero)), owners_by_name_(world_size()) {}

Zero3Strategy::~Zero3Strategy() {
  if (sharding_ && model::param_sharding() == sharding_.get()) model::set_param_sharding(nullptr);
}

// Each rank reads only the parameters it owns, so none ever holds the whole model.
model::PlacementPlan Zero3Strategy::placement_plan(const std::vector<std::string>& removed) {
  return owners_by_name_.plan(rank(), zero_.offload_param, removed);
}

// ZeRO-3 partitions every parameter (frozen ones are held by one rank too): its owner alone keeps the values, and
// the AdamW state of the trainable ones.
void Zero3Strategy::assign_ownership(model::CausalLM& model) {
  ParallelStrategy::assign_ownership(model);
  std::vector<std::string> names;
  std::vector<int64_t> bytes;
  for (const auto& item : model->named_parameters()) {
    names.push_back(item.key());
    bytes.push_back(static_cast<int64_t>(item.value().nbytes()));
  }
  owners_ = owners_by_name_.owners(names, bytes);  // as the loader read, and new ones
  std::map<std::string, int> owner_of;
  for (size_t i = 0; i < names.size(); ++i) owner_of[names[i]] = owners_[i];
  std::vector<int> trainable_owners;
  for (const auto& name : trainable_names_) trainable_owners.push_back(owner_of.at(name));
  keep_owned(trainable_owners);
  const std::vector<double> per_rank = bytes_per_owner(bytes, owners_);
  const double total = static_cast<double>(full_parameter_bytes_);
  log_info("ZeRO-3 (", zero_.source, "): parameter values per rank ", bytes_per_rank(per_rank, 0, per_rank.size()),
           " (without ZeRO ", format_bytes(total), " on every rank); each owner keeps the AdamW state of its trainable ones");
}

// What ZeRO-3 gathers whole: a layer at a time, the embedding or the head around each of their uses, the other
// outer parameters per micro-batch.
ParallelFootprint Zero3Strategy::footprint(model::CausalLM& model) const {
  ParallelFootprint f = ParallelStrategy::footprint(model);
  const auto layout = model::parameter_layout(model);
  const auto around_use = model::gathered_around_use(model);
  for (const auto& layer : layout.layers) {
    int64_t bytes = 0;
    for (size_t i : layer) bytes += static_cast<int64_t>(layout.tensors[i].nbytes());
    f.layer_weight_bytes = std::max(f.layer_weight_bytes, bytes);
  }
  int64_t per_use = 0;
  for (size_t i : layout.outer) {
    if (contains(around_use, layout.tensors[i])) per_use = std::max(per_use, static_cast<int64_t>(layout.tensors[i].nbytes()));
    else f.outer_weight_bytes += static_cast<int64_t>(layout.tensors[i].nbytes());
  }
  f.outer_weight_bytes += per_use;
  return f;
}

// The model gathers the decoder layers, and the embedding and head where gathered_around_use says so, around each of
// their operations, and reduces their gradients inside the backward; this strategy gathers the rest for each
// micro-batch and reduces their gradients after it.
void Zero3Strategy::begin_training(model::CausalLM& model) {
  const auto layout = model::parameter_layout(model);
  const auto per_use = model::gathered_around_use(model);
  const auto layer = layer_of(layout);
  std::vector<at::Tensor> outer_trainable;
  std::vector<int> outer_owners;
  for (size_t i = 0; i < layout.names.size(); ++i) {
    if (layer[i] >= 0 || contains(per_use, layout.tensors[i])) continue;
    outer_params_.push_back(layout.tensors[i]);
    if (layout.tensors[i].requires_grad()) {
      outer_trainable.push_back(layout.tensors[i]);
      outer_owners.push_back(owners_[i]);
    }
  }
  Zero3Options options;
  options.device = model->device();
  options.offload_param = zero_.offload_param;
  model->set_compute_device(options.device);  // whatever rests in CPU RAM
  sharding_ = std::make_unique<Zero3Sharding>(*group_, layout.tensors, owners_, options);
  sharding_->gather_around_use(per_use);
  model::set_param_sharding(sharding_.get());
  // The outer gradients' exchange buckets by shape and device, so it is built while those parameters are whole on
  // the device on every rank. No start-up broadcast: every use gathers the owners' values.
  sharding_->gather(outer_params_);
  sync_.emplace(*group_, outer_trainable, zero_.reduce_bucket_bytes);
  sync_->set_owners(outer_owners);
  sharding_->release_all();
  log_info("data parallel: ", world_size(), " ranks, gradients reduced to their owners after each micro-batch in ",
           sync_->buckets(), " bucket(s) per step, ZeRO-3 (the decoder layers', embedding's and head's parameters "
           "gathered around each use, their gradients reduced in the backward)");
}

void Zero3Strategy::begin_micro_batch(bool last_of_step) {
  (void)last_of_step;
  sharding_->begin_micro_batch();
  sharding_->gather(outer_params_);
}

void Zero3Strategy::end_micro_batch(bool last_of_step) {
  (void)last_of_step;
  sync_->reduce_gradients_to_owners();
  sharding_->release(outer_params_);
  sharding_->end_micro_batch();
}

double Zero3Strategy::clip_gradients(double max_norm, bool& overflow) { return clip_sharded_gradients(max_norm, overflow); }

// offload_param: the optimizer writes the homes in pinned RAM that gathers copy from asynchronously; every copy
// queued on the GPU has finished before it does.
void Zero3Strategy::before_optimizer_step() {
  const c10::Device device = model_->device();
  if (zero_.offload_param && device.is_cuda()) torch::cuda::synchronize(device.index());
}

void Zero3Strategy::after_optimizer_step(bool stepped, bool first_step, const std::vector<at::Tensor>& optimizer_state) {
  (void)stepped;  // the new values reach the others when they are next gathered
  if (first_step) log_held_memory("ZeRO-3", model_, optimizer_state);
}

void Zero3Strategy::end_training() {
  std::vector<double> peaks(static_cast<size_t>(world_size()), 0.0);
  peaks[static_cast<size_t>(rank())] = static_cast<double>(sharding_->peak_gathered_bytes());
  peaks = group_->sum(peaks);
  log_info("ZeRO-3: ", sharding_->prefetched_gathers(), " of ", sharding_->gathers(),
           " parameter gathers were prefetched while the previous layer computed; parameters gathered at once, at "
           "most, per rank: ", bytes_per_rank(peaks, 0, peaks.size()));
}

void Zero3Strategy::begin_forward_only() { sharding_->gather(outer_params_); }
void Zero3Strategy::end_forward_only() { sharding_->release(outer_params_); }

// Rank 0's copy in RAM, one decoder layer (or one outer parameter) at a time: every parameter of a full model, the
// trainable ones (the adapter, --modules_to_save) for LoRA.
void Zero3Strategy::begin_save(bool trainable_only) {
  const auto layout = model::parameter_layout(model_);
  const auto layer = layer_of(layout);
  save_chunks_.clear();
  int current = -2;  // the layer of the chunk being filled; outer parameters get a chunk each
  for (size_t i = 0; i < layout.names.size(); ++i) {
    if (trainable_only && !layout.tensors[i].requires_grad()) continue;
    if (save_chunks_.empty() || layer[i] < 0 || layer[i] != current) save_chunks_.emplace_back();
    current = layer[i];
    save_chunks_.back().push_back(layout.tensors[i]);
  }
  sharding_->gather_to_host(save_chunks_, 0);
}

void Zero3Strategy::end_save() {
  for (const auto& chunk : save_chunks_) sharding_->release(chunk);
  save_chunks_.clear();
}

}  // namespace swift::distributed
