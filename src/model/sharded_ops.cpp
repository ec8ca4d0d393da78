// The embedding and the LM head under ZeRO-3 (see sharded_ops.h): torch::autograd::Functions whose backward
// reduces the weight's gradient into its owner instead of leaving it to autograd, which would accumulate it
// after the weight was released.
#include "swift/model/sharded_ops.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <optional>
#include <vector>

#include "swift/model/autocast.h"

namespace swift::model {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// What a backward needs besides the saved activations: the parameters (to gather and reduce into) and, for the
// head, the autocast dtype the forward ran under (backward runs outside the forward's autocast scope).
struct ShardedState : torch::CustomClassHolder {
  ParamSharding* sharding = nullptr;
  at::Tensor weight, bias;
  std::optional<c10::ScalarType> autocast;
};

std::vector<at::Tensor> defined(std::initializer_list<at::Tensor> tensors) {
  std::vector<at::Tensor> out;
  for (const auto& t : tensors)
    if (t.defined()) out.push_back(t);
  return out;
}

class ShardedEmbedding : public torch::autograd::Function<ShardedEmbedding> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& weight, const at::Tensor& ids,
                            const c10::intrusive_ptr<ShardedState>& state, int64_t padding_idx) {
    ctx->save_for_backward({ids});
    ctx->saved_data["state"] = c10::IValue::make_capsule(state);
    ctx->saved_data["rows"] = weight.size(0);
    ctx->saved_data["padding_idx"] = padding_idx;
    return at::embedding(weight, ids, padding_idx);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto state = c10::static_intrusive_pointer_cast<ShardedState>(ctx->saved_data["state"].toCapsule());
    const at::Tensor& grad = grad_outputs.at(0);
    if (grad.defined()) {
      const at::Tensor ids = ctx->get_saved_variables().at(0);
      const at::Tensor grad_weight = at::embedding_dense_backward(grad, ids, ctx->saved_data["rows"].toInt(),
                                                                  ctx->saved_data["padding_idx"].toInt(),
                                                                  /*scale_grad_by_freq=*/false);
      state->sharding->reduce_gradients({state->weight}, {grad_weight.to(state->weight.scalar_type())});
    }
    return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class ShardedLinear : public torch::autograd::Function<ShardedLinear> {
 public:
  // params: the weight and the bias if there is one (a list: a Function's tensor inputs must be defined), inputs
  // only so that autograd routes this node's backward; the state names them.
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, at::TensorList params,
                            const c10::intrusive_ptr<ShardedState>& state) {
    state->autocast = AutocastScope::current(x.device().type());
    ctx->save_for_backward({x});
    ctx->saved_data["state"] = c10::IValue::make_capsule(state);
    ctx->saved_data["params"] = static_cast<int64_t>(params.size());
    return at::linear(x, state->weight, state->bias);
  }

  // grads of (x, params..., state).
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto state = c10::static_intrusive_pointer_cast<ShardedState>(ctx->saved_data["state"].toCapsule());
    variable_list result(static_cast<size_t>(ctx->saved_data["params"].toInt()) + 2);
    const at::Tensor& grad = grad_outputs.at(0);
    if (!grad.defined()) return result;
    const at::Tensor x = ctx->get_saved_variables().at(0);
    const at::Tensor& weight = state->weight;
    const at::Tensor& bias = state->bias;
    // What autograd asks for (not just what requires grad: a grad() call for x alone must not touch .grad).
    const bool train_weight = ctx->needs_input_grad(1), train_bias = bias.defined() && ctx->needs_input_grad(2);
    const auto params = defined({weight, bias});
    state->sharding->gather(params);  // still whole since the forward, unless another pass released it
    const c10::ScalarType compute = state->autocast.value_or(grad.scalar_type());  // what linear computed in
    const at::Tensor gc = grad.to(compute);                                       // [..., out]
    const at::Tensor g = gc.reshape({-1, grad.size(-1)});                          // [N, out]
    if (ctx->needs_input_grad(0)) result[0] = at::matmul(gc, weight.to(compute)).to(x.scalar_type());
    if (train_weight || train_bias) {
      std::vector<at::Tensor> trained, grads;
      if (train_weight) {
        trained.push_back(weight);
        grads.push_back(g.t().mm(x.to(compute).reshape({-1, x.size(-1)})).to(weight.scalar_type()));  // [out, in]
      }
      if (train_bias) {
        trained.push_back(bias);
        grads.push_back(g.sum(0).to(bias.scalar_type()));
      }
      state->sharding->reduce_gradients(trained, grads);
    }
    state->sharding->release(params);
    return result;
  }
};

}  // namespace

at::Tensor sharded_embedding(const at::Tensor& weight, const at::Tensor& ids, ParamSharding& sharding,
                             int64_t padding_idx) {
  sharding.gather({weight});
  at::Tensor out;
  if (at::GradMode::is_enabled() && weight.requires_grad()) {
    // Gathered before apply: apply creates the weight's gradient accumulator, which remembers its shape.
    auto state = c10::make_intrusive<ShardedState>();
    state->sharding = &sharding;
    state->weight = weight;
    out = ShardedEmbedding::apply(weight, ids, state, padding_idx);
  } else {
    out = at::embedding(weight, ids, padding_idx);
  }
  sharding.release({weight});
  return out;
}

at::Tensor sharded_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, ParamSharding& sharding) {
  const auto params = defined({weight, bias});
  sharding.gather(params);
  at::Tensor out;
  const bool needs_grad = x.requires_grad() || weight.requires_grad() || (bias.defined() && bias.requires_grad());
  if (at::GradMode::is_enabled() && needs_grad) {
    // Kept whole until the backward, which comes right after the loss and needs the weight again: the same
    // memory as gathering it again there, without the second exchange.
    auto state = c10::make_intrusive<ShardedState>();
    state->sharding = &sharding;
    state->weight = weight;
    state->bias = bias;
    return ShardedLinear::apply(x, at::TensorList(params), state);
  }
  out = at::linear(x, weight, bias);
  sharding.release(params);
  return out;
}

}  // namespace swift::model
