// ZeRO-3 parameter sharding (see the header).
#include "swift/distributed/zero3.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <map>

#include "swift/core/error.h"
#include "swift/distributed/process_group.h"
#include "swift/model/param_sharding.h"

namespace swift::distributed {

Zero3Sharding::Zero3Sharding(ProcessGroup& group, std::vector<at::Tensor> params, std::vector<int> owners,
                             Zero3Options options)
    : group_(group), options_(options), params_(std::move(params)), owners_(std::move(owners)) {
  SWIFT_ASSERT(params_.size() == owners_.size(), "one owner per parameter");
  c10::NoGradGuard no_grad;
  home_.resize(params_.size());
  around_use_.assign(params_.size(), false);
  whole_.assign(params_.size(), false);
  std::vector<size_t> to_host;  // owned, offloaded, not in (pinned) CPU RAM yet
  for (size_t i = 0; i < params_.size(); ++i) {
    index_[params_[i].unsafeGetTensorImpl()] = i;
    shapes_.push_back(params_[i].sizes().vec());
    if (owners_[i] != group_.rank()) continue;
    const at::Tensor& p = params_[i];
    SWIFT_ASSERT(model::holds_values(p), "ZeRO-3: this rank owns a parameter it did not load");
    // Already where it rests (as a ZeRO-3 load places it)? Then the parameter's own storage is its home.
    const bool in_place = options_.offload_param ? p.device().is_cpu() && (!options_.device.is_cuda() || p.is_pinned())
                                                 : p.device() == options_.device;
    if (in_place) home_[i] = p.detach();
    else if (options_.offload_param) to_host.push_back(i);
    else home_[i] = p.detach().to(options_.device);
  }
  std::vector<at::Tensor> like;
  for (size_t i : to_host) like.push_back(params_[i]);
  const auto homes = model::packed_like(like, at::TensorOptions().device(c10::kCPU).pinned_memory(options_.device.is_cuda()));
  for (size_t k = 0; k < to_host.size(); ++k) home_[to_host[k]] = homes[k].copy_(params_[to_host[k]].detach());
}

size_t Zero3Sharding::index_of(const at::Tensor& p) const {
  const auto it = index_.find(p.unsafeGetTensorImpl());
  SWIFT_ASSERT(it != index_.end(), "a parameter ZeRO-3 does not know");
  return it->second;
}

// Grouped by (owner, dtype), in that order: the same sequence of collectives on every rank.
std::vector<Zero3Sharding::Group> Zero3Sharding::groups_of(const std::vector<at::Tensor>& params) const {
  std::map<std::pair<int, int>, std::vector<size_t>> by_key;
  for (size_t k = 0; k < params.size(); ++k)
    by_key[{owner_of(params[k]), static_cast<int>(params[k].scalar_type())}].push_back(k);
  std::vector<Group> out;
  for (auto& [key, members] : by_key) out.push_back({key.first, std::move(members)});
  return out;
}

int64_t Zero3Sharding::numel_of(const at::Tensor& p) const { return c10::multiply_integers(shapes_[index_of(p)]); }

std::vector<const void*> Zero3Sharding::signature(const std::vector<at::Tensor>& params) {
  std::vector<const void*> out;
  out.reserve(params.size());
  for (const auto& p : params) out.push_back(p.unsafeGetTensorImpl());
  return out;
}

// Each (owner, dtype) group's values in one flat tensor on the device, broadcast from the owner, which copies
// them in from its homes (from pinned CPU RAM without blocking: the copy and the collective follow each other
// on the device's stream).
Zero3Sharding::InFlight Zero3Sharding::start_gather(const std::vector<at::Tensor>& params) {
  c10::NoGradGuard no_grad;
  InFlight out{params, signature(params), groups_of(params), {}, {}};
  for (const auto& g : out.groups) {
    int64_t total = 0;
    for (size_t k : g.members) total += numel_of(params[k]);
    at::Tensor flat = at::empty({total}, params[g.members.front()].options().device(options_.device));
    if (g.owner == group_.rank()) {
      int64_t offset = 0;
      for (size_t k : g.members) {
        const at::Tensor& home = home_[index_of(params[k])];
        flat.narrow(0, offset, home.numel()).copy_(home.reshape(-1), /*non_blocking=*/true);
        offset += home.numel();
      }
    }
    out.pending.push_back(group_.start_broadcast(flat, g.owner));
    out.bytes += flat.numel() * static_cast<int64_t>(flat.element_size());
    out.flat.push_back(std::move(flat));
  }
  count_gathered(out.bytes);
  return out;
}

// Every rank's parameters become views of the broadcast values, except an owner's whose home is on the device:
// it computes on its home. (With offload_param the owner takes the view even on a CPU run, the GPU's path.)
void Zero3Sharding::finish_gather(InFlight& in_flight) {
  c10::NoGradGuard no_grad;
  int64_t now_in_params = 0;  // the buffers' bytes now held by parameters (the rest: an owner's sent copy, freed)
  for (size_t i = 0; i < in_flight.groups.size(); ++i) {
    in_flight.pending[i].wait();
    const Group& g = in_flight.groups[i];
    const bool computes_on_home = g.owner == group_.rank() && !options_.offload_param;
    int64_t offset = 0;
    for (size_t k : g.members) {
      at::Tensor p = in_flight.params[k];
      const size_t index = index_of(p);
      const auto& shape = shapes_[index];
      const int64_t n = c10::multiply_integers(shape);
      if (!computes_on_home) {
        p.set_data(in_flight.flat[i].narrow(0, offset, n).view(shape));
        if (!whole_[index]) now_in_params += bytes_of(index);
      }
      whole_[index] = true;
      offset += n;
    }
  }
  count_gathered(now_in_params - in_flight.bytes);
  in_flight.bytes = 0;
}

// A prefetch nobody asked for still has to finish (its collectives are under way on every rank); then it is
// thrown away.
void Zero3Sharding::drop_prefetch() {
  if (!prefetch_) return;
  for (auto& pending : prefetch_->pending) pending.wait();
  count_gathered(-prefetch_->bytes);
  prefetch_.reset();
}

void Zero3Sharding::gather(const std::vector<at::Tensor>& params) {
  // Whole already (the same on every rank, which makes the same calls): nothing to move.
  if (std::all_of(params.begin(), params.end(), [&](const at::Tensor& p) { return whole_[index_of(p)]; })) return;
  ++gathers_;
  const auto wanted = signature(params);
  if (prefetch_ && prefetch_->signature == wanted) {
    finish_gather(*prefetch_);
    prefetch_.reset();
    ++prefetched_gathers_;
  } else {
    drop_prefetch();
    InFlight now = start_gather(params);
    finish_gather(now);
  }
  if (trace_mode_ == Trace::kRecording) {
    trace_.push_back(params);
    trace_signatures_.push_back(wanted);
  } else if (trace_mode_ == Trace::kReplaying) {
    if (cursor_ < trace_.size() && trace_signatures_[cursor_] == wanted) {
      ++cursor_;
      // Not the same parameters again (the head's gather for its backward right after its forward's): that
      // would hold a second copy of what is in use.
      if (cursor_ < trace_.size() && trace_signatures_[cursor_] != wanted) prefetch_ = start_gather(trace_[cursor_]);
    } else {
      trace_mode_ = Trace::kNone;  // off the recorded sequence: no more guesses this micro-batch
    }
  }
}

void Zero3Sharding::begin_micro_batch() {
  drop_prefetch();
  in_micro_batch_ = true;
  cursor_ = 0;
  trace_mode_ = trace_.empty() ? Trace::kRecording : Trace::kReplaying;
  if (trace_mode_ == Trace::kReplaying) prefetch_ = start_gather(trace_.front());
}

void Zero3Sharding::end_micro_batch() {
  drop_prefetch();
  trace_mode_ = Trace::kNone;
  in_micro_batch_ = false;
  std::vector<at::Tensor> still_whole;  // held for a backward that did not come (a forward without a loss)
  for (size_t i = 0; i < params_.size(); ++i)
    if (whole_[i]) still_whole.push_back(params_[i]);
  release(still_whole);
}

void Zero3Sharding::count_gathered(int64_t bytes) {
  gathered_now_ += bytes;
  if (in_micro_batch_) gathered_peak_ = std::max(gathered_peak_, gathered_now_);
}

bool Zero3Sharding::holds_copy(size_t index) const {
  return owners_[index] != group_.rank() || options_.offload_param;
}

int64_t Zero3Sharding::bytes_of(size_t index) const {
  return c10::multiply_integers(shapes_[index]) * static_cast<int64_t>(params_[index].element_size());
}

// Owners go back to their homes (which the optimizer updates between uses); the others hold nothing.
void Zero3Sharding::release(const std::vector<at::Tensor>& params) {
  c10::NoGradGuard no_grad;
  for (const auto& p : params) {
    const size_t i = index_of(p);
    at::Tensor t = p;
    if (whole_[i] && holds_copy(i)) count_gathered(-bytes_of(i));
    whole_[i] = false;
    if (owners_[i] == group_.rank()) {
      if (p.data_ptr() != home_[i].data_ptr() || p.device() != home_[i].device()) t.set_data(home_[i]);
    } else {
      t.set_data(at::empty({0}, p.options().device(options_.device)));
    }
  }
}

void Zero3Sharding::gather_to_host(const std::vector<std::vector<at::Tensor>>& chunks, int root) {
  c10::NoGradGuard no_grad;
  for (const auto& chunk : chunks) {
    if (chunk.empty()) continue;
    gather(chunk);
    if (group_.rank() != root) {
      release(chunk);
      continue;
    }
    for (const auto& p : chunk) {
      const at::Tensor& home = home_[index_of(p)];
      at::Tensor t = p;
      if (home.defined() && home.device().is_cpu()) t.set_data(home);  // an offloaded owner's values are in RAM
      else if (!p.device().is_cpu()) t.set_data(p.detach().to(c10::kCPU));
    }
  }
}

void Zero3Sharding::reduce_gradients(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads) {
  c10::NoGradGuard no_grad;
  for (const auto& g : groups_of(params)) {
    std::vector<at::Tensor> parts;
    for (size_t k : g.members) {
      parts.push_back(grads[k].defined() ? grads[k].reshape(-1) : at::zeros({numel_of(params[k])}, params[k].options().device(options_.device)));
    }
    at::Tensor flat = at::cat(parts);  // our own copy: the reduce writes into it
    parts.clear();
    group_.reduce_sum(flat, g.owner);
    if (g.owner != group_.rank()) continue;
    int64_t offset = 0;
    for (size_t k : g.members) {
      const auto& shape = shapes_[index_of(params[k])];
      const int64_t n = c10::multiply_integers(shape);
      const at::Tensor summed = flat.narrow(0, offset, n).view(shape);
      at::Tensor p = params[k];
      if (p.grad().defined()) p.mutable_grad().add_(summed);  // gradient accumulation over micro-batches
      else p.mutable_grad() = summed;  // a view of the flat sums, which only these gradients hold
      offset += n;
    }
  }
}

void Zero3Sharding::gather_around_use(const std::vector<at::Tensor>& params) {
  for (const auto& p : params) around_use_[index_of(p)] = true;
}

bool Zero3Sharding::gathers_around_use(const at::Tensor& p) const {
  const auto it = index_.find(p.unsafeGetTensorImpl());
  return it != index_.end() && around_use_[it->second];
}

Zero3Sharding::Held Zero3Sharding::held_parameter_bytes() const {
  Held held;
  for (const auto& p : params_) {
    const int64_t bytes = p.numel() * static_cast<int64_t>(p.element_size());
    (p.device() == options_.device ? held.device : held.host) += bytes;
  }
  return held;
}

}  // namespace swift::distributed
