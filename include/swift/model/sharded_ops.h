// ZeRO-3 for the parameters used outside the decoder layers' own gathers: the token embedding and the LM head
// (for a 150k-token vocabulary the largest tensors of the model) are gathered around each of their operations
// instead of for a whole micro-batch, and their gradients go into the owners' .grad inside the backward, as a
// checkpointed layer's do. The model calls these where ParamSharding::gathers_around_use says so.
#pragma once

#include <ATen/core/Tensor.h>

#include "swift/model/param_sharding.h"

namespace swift::model {

// weight [V, C], ids [...] -> [..., C]. The weight is gathered for the lookup only: its gradient (a scatter of
// the output's) needs none of its values.
at::Tensor sharded_embedding(const at::Tensor& weight, const at::Tensor& ids, ParamSharding& sharding,
                             int64_t padding_idx = -1);

// x [..., in] -> x W^T + b [..., out], W [out, in], b [out] or undefined. With a graph the weight stays gathered
// from the forward until its backward (the loss between them keeps the logits alive anyway) and is released
// there; without one it is released at once. Under autocast the backward computes in the dtype the forward did,
// as autograd through autocast's casts would.
at::Tensor sharded_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, ParamSharding& sharding);

}  // namespace swift::model
