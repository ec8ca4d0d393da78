// ZeRO-3's parameter sharding over the ranks: each parameter's values live on its owner only (the others hold an
// empty tensor); gather() broadcasts them from their owners into whole tensors for a use, release() frees them
// again, and gradients computed in backward are reduced into their owners at once. The model calls it through
// model::ParamSharding around each decoder layer; the training loop around the embeddings, norm and LM head, and
// around evaluation and checkpoint saves.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "swift/model/param_sharding.h"

namespace swift::dist {

class ProcessGroup;

class Zero3Sharding : public model::ParamSharding {
 public:
  // params: every parameter of the model (trainable or not) in the same order on every rank; owners[i] owns
  // params[i] (ParameterPartition over their bytes).
  Zero3Sharding(ProcessGroup& group, std::vector<at::Tensor> params, std::vector<int> owners);

  void gather(const std::vector<at::Tensor>& params) override;
  void release(const std::vector<at::Tensor>& params) override;
  std::vector<at::Tensor> reduce_gradients(const std::vector<at::Tensor>& params,
                                           const std::vector<at::Tensor>& grads) override;
  void gather_all() { gather(params_); }
  void release_all() { release(params_); }

  // Bytes of parameter values this rank holds now (whole parameters it owns plus whatever is gathered).
  int64_t held_parameter_bytes() const;

 private:
  struct Group {  // the parameters of one call with one owner and one dtype: one collective
    int owner;
    std::vector<size_t> members;  // positions in the call's list
  };
  std::vector<Group> groups_of(const std::vector<at::Tensor>& params) const;
  int owner_of(const at::Tensor& p) const;

  ProcessGroup& group_;
  std::vector<at::Tensor> params_;
  std::vector<int> owners_;
  std::vector<std::vector<int64_t>> shapes_;
  std::unordered_map<const void*, size_t> index_;  // TensorImpl -> position in params_
};

}  // namespace swift::dist
