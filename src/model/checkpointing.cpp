// Activation checkpointing of a decoder layer (see checkpointing.h): a torch::autograd::Function whose backward
// recomputes the layer.
#include "swift/model/checkpointing.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "swift/core/error.h"
#include "swift/model/autocast.h"
#include "swift/model/moe.h"
#include "swift/model/param_sharding.h"

namespace swift::model {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The default generators' states: the CPU one, and the accelerator one of the layer's device (dropout on a CUDA
// tensor draws from that device's generator), as torch.utils.checkpoint's preserve_rng_state.
struct RngState {
  at::Tensor cpu;
  std::optional<c10::Device> device;
  at::Tensor device_state;

  static RngState capture(const c10::Device& device) {
    RngState s;
    {
      auto gen = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(gen.mutex());
      s.cpu = gen.get_state();
    }
    if (!device.is_cpu() && device.type() != c10::DeviceType::Meta) {
      s.device = device;
      auto gen = at::globalContext().defaultGenerator(device);
      std::lock_guard<std::mutex> lock(gen.mutex());
      s.device_state = gen.get_state();
    }
    return s;
  }

  void restore() const {
    {
      auto gen = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(cpu);
    }
    if (device) {
      auto gen = at::globalContext().defaultGenerator(*device);
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(device_state);
    }
  }
};

// What backward needs besides the saved input: the layer, the shared attention inputs, the trainable parameters
// (in the order they were passed to apply), the RNG state the forward pass started from and the autocast dtype
// it ran under (backward runs outside the forward's autocast scope, as torch.utils.checkpoint also handles).
struct CheckpointState : torch::CustomClassHolder {
  std::shared_ptr<DecoderLayerImpl> layer;
  AttentionInputs in;
  std::vector<at::Tensor> params;
  RngState rng;
  std::optional<c10::ScalarType> autocast;
  // A mixture-of-experts layer recording its router logits (record_router_logits) when the forward ran: they are
  // a second output of the node, so the auxiliary loss computed from them reaches the router through the
  // recomputation.
  bool records_router = false;
};

// Runs the layer; a recording sparse layer's router logits go into `logits` (the layer's own log set aside and put
// back after).
at::Tensor run_layer(CheckpointState& state, const at::Tensor& x, std::vector<at::Tensor>& logits) {
  if (!state.records_router) return state.layer->forward(x, state.in);
  SparseMoeBlockImpl* moe = state.layer->moe.get();
  std::vector<at::Tensor>* const own = moe->router_log;
  moe->router_log = &logits;
  at::Tensor y;
  try {
    y = state.layer->forward(x, state.in);
  } catch (...) {
    moe->router_log = own;
    throw;
  }
  moe->router_log = own;
  return y;
}

class CheckpointedLayer : public torch::autograd::Function<CheckpointedLayer> {
 public:
  // Runs with grad mode off (Function::apply disables it). `params` are inputs only so that autograd routes their
  // gradients through this node; the layer reads them itself.
  // Outputs: the layer's, then a recording sparse layer's router logits.
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, at::TensorList /*params*/,
                               const c10::intrusive_ptr<CheckpointState>& state) {
    state->rng = RngState::capture(x.device());
    state->autocast = AutocastScope::current(x.device().type());
    ctx->save_for_backward({x});
    ctx->saved_data["state"] = c10::IValue::make_capsule(state);
    std::vector<at::Tensor> logits;
    variable_list out{run_layer(*state, x, logits)};
    out.insert(out.end(), logits.begin(), logits.end());
    return out;
  }

  // grads of (x, params..., state).
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto state = c10::static_intrusive_pointer_cast<CheckpointState>(ctx->saved_data["state"].toCapsule());
    const at::Tensor x = ctx->get_saved_variables().at(0);
    const size_t n = state->params.size();
    variable_list result(n + 2);
    if (std::none_of(grad_outputs.begin(), grad_outputs.end(), [](const at::Tensor& g) { return g.defined(); }))
      return result;

    // Which gradients the engine wants: slot 0 is x, slot 1 + i is params[i].
    std::vector<size_t> slots;
    variable_list wrt;
    at::Tensor xd = x.detach();
    if (ctx->needs_input_grad(0)) {
      xd.requires_grad_(true);
      slots.push_back(0);
      wrt.push_back(xd);
    }
    for (size_t i = 0; i < n; ++i) {
      if (!ctx->needs_input_grad(i + 1)) continue;
      slots.push_back(i + 1);
      wrt.push_back(state->params[i]);
    }
    if (wrt.empty()) return result;

    ParamSharding* sharding = param_sharding();
    if (sharding) sharding->gather(state->layer->parameters());
    variable_list outputs;
    {
      // Recompute under the forward's RNG state, then give the generators back their current state so the
      // recomputation draws nothing from the stream the rest of training sees.
      const RngState now = RngState::capture(x.device());
      state->rng.restore();
      at::AutoGradMode grad_mode(true);
      const AutocastScope autocast(x.device().type(), state->autocast);
      std::vector<at::Tensor> logits;
      outputs.push_back(run_layer(*state, xd, logits));
      outputs.insert(outputs.end(), logits.begin(), logits.end());
      now.restore();
    }
    variable_list ys, grads_of_ys;  // the outputs whose gradient came back
    for (size_t k = 0; k < outputs.size() && k < grad_outputs.size(); ++k)
      if (grad_outputs[k].defined()) {
        ys.push_back(outputs[k]);
        grads_of_ys.push_back(grad_outputs[k]);
      }
    auto grads = torch::autograd::grad(ys, wrt, grads_of_ys, /*retain_graph=*/false, /*create_graph=*/false,
                                       /*allow_unused=*/true);
    outputs.clear();
    ys.clear();
    if (sharding) {  // ZeRO-3: this layer's gradients go into their owners' .grad now, then its values are freed
      std::vector<at::Tensor> params, param_grads;
      for (size_t k = 0; k < slots.size(); ++k) {
        if (slots[k] == 0) continue;
        params.push_back(state->params[slots[k] - 1]);
        param_grads.push_back(grads[k]);
        grads[k] = at::Tensor();  // nothing left for autograd to accumulate
      }
      sharding->reduce_gradients(params, param_grads);
      sharding->release(state->layer->parameters());
    }
    for (size_t k = 0; k < slots.size(); ++k) result[slots[k]] = grads[k];
    return result;
  }
};

}  // namespace

at::Tensor checkpointed_layer_forward(const std::shared_ptr<DecoderLayerImpl>& layer, const at::Tensor& x,
                                      const AttentionInputs& in) {
  SWIFT_ASSERT(layer != nullptr, "checkpointed_layer_forward needs a layer");
  SWIFT_ASSERT(in.cache == nullptr, "gradient checkpointing cannot run with a KV cache");
  auto state = c10::make_intrusive<CheckpointState>();
  state->layer = layer;
  state->in = in;
  std::vector<at::Tensor>* const router_log = layer->moe ? layer->moe->router_log : nullptr;
  state->records_router = router_log != nullptr;
  for (const auto& p : layer->parameters())
    if (p.requires_grad()) state->params.push_back(p);
  // ZeRO-3: the layer's values only while it runs. Gathered before apply, because apply creates the parameters'
  // gradient accumulators, which remember the shape the parameters have at that moment.
  ParamSharding* sharding = param_sharding();
  if (sharding) sharding->gather(layer->parameters());
  variable_list out = CheckpointedLayer::apply(x, at::TensorList(state->params), state);
  if (sharding) sharding->release(layer->parameters());
  if (router_log) router_log->insert(router_log->end(), out.begin() + 1, out.end());
  return out.front();
}

}  // namespace swift::model
