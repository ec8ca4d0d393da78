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

void Zero3Sharding::gather(const std::vector<at::Tensor>& params) {
  c10::NoGradGuard no_grad;
  for (const auto& g : groups_of(params)) {
    const bool mine = g.owner == group_.rank();
    int64_t total = 0;
    for (size_t k : g.members) {
      const auto& shape = shapes_[index_.at(params[k].unsafeGetTensorImpl())];
      total += c10::multiply_integers(shape);
    }
    at::Tensor flat;
    if (mine) {
      std::vector<at::Tensor> parts;
      for (size_t k : g.members) parts.push_back(params[k].detach().reshape(-1));
      flat = at::cat(parts);
    } else {
      flat = at::empty({total}, params[g.members.front()].options());
    }
    group_.broadcast(flat, g.owner);
    if (mine) continue;
    int64_t offset = 0;
    for (size_t k : g.members) {
      const auto& shape = shapes_[index_.at(params[k].unsafeGetTensorImpl())];
      const int64_t n = c10::multiply_integers(shape);
      at::Tensor p = params[k];
      p.set_data(flat.narrow(0, offset, n).view(shape));
      offset += n;
    }
  }
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
      const auto& shape = shapes_[index_.at(params[k].unsafeGetTensorImpl())];
      parts.push_back(grads[k].defined() ? grads[k].reshape(-1)
                                         : at::zeros({c10::multiply_integers(shape)}, params[k].options()));
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
