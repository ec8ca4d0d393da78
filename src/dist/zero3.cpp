// ZeRO-3 parameter sharding (see the header).
#include "swift/dist/zero3.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <map>

#include "swift/core/error.h"
#include "swift/dist/process_group.h"

namespace swift::dist {

Zero3Sharding::Zero3Sharding(ProcessGroup& group, std::vector<at::Tensor> params, std::vector<int> owners)
    : group_(group), params_(std::move(params)), owners_(std::move(owners)) {
  SWIFT_ASSERT(params_.size() == owners_.size(), "one owner per parameter");
  for (size_t i = 0; i < params_.size(); ++i) {
    index_[params_[i].unsafeGetTensorImpl()] = i;
    shapes_.push_back(params_[i].sizes().vec());
  }
}

int Zero3Sharding::owner_of(const at::Tensor& p) const {
  const auto it = index_.find(p.unsafeGetTensorImpl());
  SWIFT_ASSERT(it != index_.end(), "a parameter ZeRO-3 does not know");
  return owners_[it->second];
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

int64_t Zero3Sharding::numel_of(const at::Tensor& p) const {
  return c10::multiply_integers(shapes_[index_.at(p.unsafeGetTensorImpl())]);
}

std::vector<const void*> Zero3Sharding::signature(const std::vector<at::Tensor>& params) {
  std::vector<const void*> out;
  out.reserve(params.size());
  for (const auto& p : params) out.push_back(p.unsafeGetTensorImpl());
  return out;
}

// Each (owner, dtype) group's values in one flat tensor, broadcast from the owner; the owner sends a copy.
Zero3Sharding::InFlight Zero3Sharding::start_gather(const std::vector<at::Tensor>& params) {
  c10::NoGradGuard no_grad;
  InFlight out{params, signature(params), groups_of(params), {}, {}};
  for (const auto& g : out.groups) {
    at::Tensor flat;
    if (g.owner == group_.rank()) {
      std::vector<at::Tensor> parts;
      for (size_t k : g.members) parts.push_back(params[k].detach().reshape(-1));
      flat = at::cat(parts);
    } else {
      int64_t total = 0;
      for (size_t k : g.members) total += numel_of(params[k]);
      flat = at::empty({total}, params[g.members.front()].options());
    }
    out.pending.push_back(group_.start_broadcast(flat, g.owner));
    out.flat.push_back(std::move(flat));
  }
  return out;
}

void Zero3Sharding::finish_gather(InFlight& in_flight) {
  c10::NoGradGuard no_grad;
  for (size_t i = 0; i < in_flight.groups.size(); ++i) {
    in_flight.pending[i].wait();
    const Group& g = in_flight.groups[i];
    if (g.owner == group_.rank()) continue;
    int64_t offset = 0;
    for (size_t k : g.members) {
      at::Tensor p = in_flight.params[k];
      const int64_t n = numel_of(p);
      p.set_data(in_flight.flat[i].narrow(0, offset, n).view(shapes_[index_.at(p.unsafeGetTensorImpl())]));
      offset += n;
    }
  }
}

// A prefetch nobody asked for still has to finish (its collectives are under way on every rank); then it is
// thrown away.
void Zero3Sharding::drop_prefetch() {
  if (!prefetch_) return;
  for (auto& pending : prefetch_->pending) pending.wait();
  prefetch_.reset();
}

void Zero3Sharding::gather(const std::vector<at::Tensor>& params) {
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
      if (cursor_ < trace_.size()) prefetch_ = start_gather(trace_[cursor_]);
    } else {
      trace_mode_ = Trace::kNone;  // off the recorded sequence: no more guesses this micro-batch
    }
  }
}

void Zero3Sharding::begin_micro_batch() {
  drop_prefetch();
  cursor_ = 0;
  trace_mode_ = trace_.empty() ? Trace::kRecording : Trace::kReplaying;
  if (trace_mode_ == Trace::kReplaying) prefetch_ = start_gather(trace_.front());
}

void Zero3Sharding::end_micro_batch() {
  drop_prefetch();
  trace_mode_ = Trace::kNone;
}

void Zero3Sharding::release(const std::vector<at::Tensor>& params) {
  c10::NoGradGuard no_grad;
  for (const auto& p : params) {
    if (owner_of(p) == group_.rank()) continue;
    at::Tensor t = p;
    t.set_data(at::empty({0}, p.options()));
  }
}

std::vector<at::Tensor> Zero3Sharding::reduce_gradients(const std::vector<at::Tensor>& params,
                                                        const std::vector<at::Tensor>& grads) {
  c10::NoGradGuard no_grad;
  std::vector<at::Tensor> out(params.size());
  for (const auto& g : groups_of(params)) {
    std::vector<at::Tensor> parts;
    for (size_t k : g.members) {
      parts.push_back(grads[k].defined() ? grads[k].reshape(-1) : at::zeros({numel_of(params[k])}, params[k].options()));
    }
    at::Tensor flat = at::cat(parts);
    group_.reduce_sum(flat, g.owner);
    if (g.owner != group_.rank()) continue;
    int64_t offset = 0;
    for (size_t k : g.members) {
      const auto& shape = shapes_[index_.at(params[k].unsafeGetTensorImpl())];
      const int64_t n = c10::multiply_integers(shape);
      out[k] = flat.narrow(0, offset, n).view(shape).clone();
      offset += n;
    }
  }
  return out;
}

int64_t Zero3Sharding::held_parameter_bytes() const {
  int64_t bytes = 0;
  for (const auto& p : params_) bytes += p.numel() * static_cast<int64_t>(p.element_size());
  return bytes;
}

}  // namespace swift::dist
