// Tensor parallelism inside the model (see tensor_parallel.h).
#include "swift/model/tensor_parallel.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <limits>

#include "swift/core/error.h"
#include "swift/model/moe.h"
#include "swift/model/param_sharding.h"

namespace swift::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

TensorParallelComm* comm_of(AutogradContext* ctx) {
  return reinterpret_cast<TensorParallelComm*>(ctx->saved_data["comm"].toInt());
}

struct CopyToGroup : torch::autograd::Function<CopyToGroup> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm) {
    ctx->saved_data["comm"] = comm;
    return x.view_as(x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    at::Tensor g = grads[0].contiguous().clone();
    comm_of(ctx)->all_reduce_sum(g);
    return {g, at::Tensor()};
  }
};

struct ReduceFromGroup : torch::autograd::Function<ReduceFromGroup> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm) {
    (void)ctx;
    at::Tensor y = x.contiguous().clone();
    reinterpret_cast<TensorParallelComm*>(comm)->all_reduce_sum(y);
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    (void)ctx;
    return {grads[0], at::Tensor()};
  }
};

// Sequence parallelism's exchanges along the sequence dimension of [B, T, C].
constexpr int64_t kSequenceDim = 1;

struct GatherFromSequence : torch::autograd::Function<GatherFromSequence> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm) {
    ctx->saved_data["comm"] = comm;
    return reinterpret_cast<TensorParallelComm*>(comm)->all_gather(x.contiguous(), kSequenceDim);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {comm_of(ctx)->reduce_scatter_sum(grads[0].contiguous(), kSequenceDim), at::Tensor()};
  }
};

struct ScatterToSequence : torch::autograd::Function<ScatterToSequence> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm) {
    ctx->saved_data["comm"] = comm;
    return reinterpret_cast<TensorParallelComm*>(comm)->reduce_scatter_sum(x.contiguous(), kSequenceDim);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {comm_of(ctx)->all_gather(grads[0].contiguous(), kSequenceDim), at::Tensor()};
  }
};

// The gradient of whole rows that every rank computed the same way: this rank's part of it.
struct GatherForReplicatedUse : torch::autograd::Function<GatherForReplicatedUse> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm) {
    ctx->saved_data["comm"] = comm;
    ctx->saved_data["part"] = x.size(kSequenceDim);
    return reinterpret_cast<TensorParallelComm*>(comm)->all_gather(x.contiguous(), kSequenceDim);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const int64_t part = ctx->saved_data["part"].toInt();
    return {grads[0].narrow(kSequenceDim, comm_of(ctx)->rank() * part, part).contiguous(), at::Tensor()};
  }
};

int64_t handle(TensorParallelComm& comm) { return reinterpret_cast<int64_t>(&comm); }

}  // namespace

void LinearAdapter::split_for_tensor_parallel(TensorParallelRole role, TensorParallelComm& comm, const std::string& prefix,
                                              TensorParallelSplit& split) {
  (void)role, (void)comm, (void)split;
  throw UsageError("the adapter on " + prefix + " cannot be split for tensor parallelism", "use --tp_size 1");
}

ShardedParameter keep_parameter_slice(const std::string& name, at::Tensor& p, int64_t dim, int index, int count) {
  const int64_t full = p.size(dim), part = full / count;
  at::NoGradGuard no_grad;
  if (!holds_values(p)) {  // another pipeline stage's parameter, or one read later: only its shape is here
    auto sizes = p.sizes().vec();
    sizes[static_cast<size_t>(dim)] = part;
    p.set_data(shape_only(sizes, p.options()));
    return {name, p, dim, full};
  }
  p.set_data(p.narrow(dim, index * part, part).contiguous().clone());
  return {name, p, dim, full};
}

ShardedParameter keep_tensor_parallel_slice(const std::string& name, at::Tensor& p, int64_t dim,
                                            const TensorParallelComm& comm) {
  return keep_parameter_slice(name, p, dim, comm.rank(), comm.size());
}

at::Tensor copy_to_tensor_parallel(const at::Tensor& x, TensorParallelComm& comm) {
  return CopyToGroup::apply(x, handle(comm));
}

at::Tensor reduce_from_tensor_parallel(const at::Tensor& x, TensorParallelComm& comm) {
  return ReduceFromGroup::apply(x, handle(comm));
}

at::Tensor gather_from_sequence_parallel(const at::Tensor& x, TensorParallelComm& comm) {
  return GatherFromSequence::apply(x, handle(comm));
}

at::Tensor scatter_to_sequence_parallel(const at::Tensor& x, TensorParallelComm& comm) {
  return ScatterToSequence::apply(x, handle(comm));
}

at::Tensor gather_sequence_for_replicated_use(const at::Tensor& x, TensorParallelComm& comm) {
  return GatherForReplicatedUse::apply(x, handle(comm));
}

std::string tensor_parallel_problem(const ModelConfig& c, int size) {
  if (size <= 1) return "";
  if (c.latent_attention)
    return "the latent attention of " + c.model_type + " is not split over tensor-parallel ranks yet (use --ep_size, "
           "--pp_size or ZeRO for DeepSeek models)";
  // InternLM2's wqkv splits as it is: its rows grouped by key/value head, each rank takes whole groups.
  const bool splittable_qkv = c.qkv_grouped_by_kv_head && c.num_key_value_heads % size == 0;
  if ((c.fused_qkv && !splittable_qkv) || c.fused_gate_up) {
    if (c.qkv_grouped_by_kv_head && !c.fused_gate_up)
      return "num_key_value_heads (" + std::to_string(c.num_key_value_heads) + ") is not a multiple of the " +
             "tensor-parallel size " + std::to_string(size) + ": each rank takes whole key/value groups of " +
             c.names.qkv_proj;
    const std::string fused = c.fused_qkv && c.fused_gate_up ? c.names.qkv_proj + " / gate_up_proj of " + c.model_type + " are"
                              : c.fused_qkv                 ? c.names.qkv_proj + " of " + c.model_type + " is"
                                                            : "gate_up_proj of " + c.model_type + " is";
    return "the fused " + fused + " not split over tensor-parallel ranks yet (use --pp_size, ZeRO or data parallelism)";
  }
  auto not_divided = [&](const char* what, int64_t n) {
    return std::string(what) + " (" + std::to_string(n) + ") is not a multiple of the tensor-parallel size " +
           std::to_string(size);
  };
  if (c.num_attention_heads % size) return not_divided("num_attention_heads", c.num_attention_heads);
  if (c.num_key_value_heads % size && size % c.num_key_value_heads)
    return "num_key_value_heads (" + std::to_string(c.num_key_value_heads) + ") and the tensor-parallel size " +
           std::to_string(size) + " do not divide one another";
  bool dense_layers = false;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) dense_layers = dense_layers || !c.sparse_layer(i);
  if (dense_layers && c.intermediate_size % size) return not_divided("intermediate_size", c.intermediate_size);
  if (c.vocab_size % size) return not_divided("vocab_size", c.vocab_size);
  return "";
}

TensorParallelSplit apply_tensor_parallel(CausalLM& model, std::shared_ptr<TensorParallelComm> comm,
                                          bool sequence_parallel) {
  // Each rank routes its own part of the sequence through whole experts; run_training says so before loading.
  SWIFT_ASSERT(!model->config().is_moe() || sequence_parallel,
               "tensor parallelism of a mixture-of-experts model runs with sequence parallelism");
  const std::string problem = tensor_parallel_problem(model->config(), comm->size());
  SWIFT_CHECK(problem.empty(), UsageError, "tensor parallelism: " + problem, "choose a --tp_size that divides it");
  TensorParallelSplit out;
  auto split = [&](const std::string& prefix, Linear& layer, TensorParallelRole role) {
    SWIFT_CHECK(!layer->quantized, UsageError, "tensor parallelism of quantized layers is not built yet (" + prefix + ")",
                "train QLoRA with --tp_size 1, or LoRA over an unquantized model with --tp_size");
    if (role == TensorParallelRole::kColumnReplicated) {  // whole here; this rank's heads' part of the gradient
      out.partial_gradients.push_back(layer->weight);
      if (layer->bias.defined()) out.partial_gradients.push_back(layer->bias);
    } else {
      const int64_t dim = role == TensorParallelRole::kColumn ? 0 : 1;
      out.sharded.push_back(keep_tensor_parallel_slice(prefix + ".weight", layer->weight, dim, *comm));
      if (role == TensorParallelRole::kColumn && layer->bias.defined())
        out.sharded.push_back(keep_tensor_parallel_slice(prefix + ".bias", layer->bias, 0, *comm));
    }
    if (layer->adapter) layer->adapter->split_for_tensor_parallel(role, *comm, prefix, out);
    layer->tp_role = role;
    layer->tp_comm = comm.get();
    layer->tp_sequence_parallel = sequence_parallel;
    layer->tp_input_shared = role != TensorParallelRole::kRow;  // q/k/v and gate/up; lm_head's is set apart below
  };
  // Under sequence parallelism each rank's norms see its own tokens only: their gradients are partial.
  auto norm_on_sequence_part = [&](RMSNorm& norm) {
    if (sequence_parallel) out.partial_gradients.push_back(norm->weight);
  };
  const ModuleNames& names = model->config().names;  // the checkpoint's names of the split parameters
  for (size_t i = 0; i < model->model->layers->size(); ++i) {
    auto layer = model->model->layers[i]->as<DecoderLayerImpl>();
    const std::string at = "model.layers." + std::to_string(i), attention = at + "." + names.self_attn + ".";
    auto& attn = layer->self_attn;
    if (attn->qkv_proj) {  // InternLM2: whole key/value groups per rank (tensor_parallel_problem)
      split(attention + names.qkv_proj, attn->qkv_proj, TensorParallelRole::kColumn);
    } else {
      split(attention + "q_proj", attn->q_proj, TensorParallelRole::kColumn);
      const auto kv_role = model->config().num_key_value_heads % comm->size() == 0 ? TensorParallelRole::kColumn
                                                                                   : TensorParallelRole::kColumnReplicated;
      split(attention + "k_proj", attn->k_proj, kv_role);
      split(attention + "v_proj", attn->v_proj, kv_role);
    }
    split(attention + names.o_proj, attn->o_proj, TensorParallelRole::kRow);
    attn->divide_heads(comm->size(), comm->rank());
    if (attn->q_norm) out.partial_gradients.push_back(attn->q_norm->weight);  // shared by the heads of every rank
    if (attn->k_norm) out.partial_gradients.push_back(attn->k_norm->weight);
    if (auto moe = layer->moe) {
      // Megatron's --expert_tensor_parallel_size 1: nothing of a sparse layer is split. Its input is this rank's part
      // of the sequence (sequence parallelism), routed through whole experts here, so every gradient of the layer
      // (router, experts, shared expert, their adapters) is partial. Experts split by expert parallelism are summed
      // over the ranks holding them instead (the distributed area takes them out of this list).
      for (const auto& p : moe->parameters()) out.partial_gradients.push_back(p);
      moe->tp_comm = comm.get();
    } else {
      const std::string mlp = at + "." + names.mlp + ".";
      split(mlp + names.gate_proj, layer->mlp->gate_proj, TensorParallelRole::kColumn);
      split(mlp + names.up_proj, layer->mlp->up_proj, TensorParallelRole::kColumn);
      split(mlp + names.down_proj, layer->mlp->down_proj, TensorParallelRole::kRow);
    }
    norm_on_sequence_part(layer->input_layernorm);
    norm_on_sequence_part(layer->post_attention_layernorm);
    if (layer->pre_feedforward_layernorm) norm_on_sequence_part(layer->pre_feedforward_layernorm);
    if (layer->post_feedforward_layernorm) norm_on_sequence_part(layer->post_feedforward_layernorm);
  }
  norm_on_sequence_part(model->model->norm);
  auto& embed = model->model->embed_tokens;
  const int64_t vocab = embed->weight.size(0);
  out.sharded.push_back(keep_tensor_parallel_slice("model." + names.embed_tokens + ".weight", embed->weight, 0, *comm));
  embed->vocab_start = comm->rank() * (vocab / comm->size());
  embed->tp_comm = comm.get();
  embed->tp_sequence_parallel = sequence_parallel;
  // A sequence classifier's score head (num_labels outputs) stays whole on every rank: its input, the last hidden
  // states, is whole and the same on every rank, and so is its gradient (nothing to sum).
  if (model->lm_head) {  // under sequence parallelism forward_hidden's gather prepares its input (see logits())
    split(names.lm_head, model->lm_head, TensorParallelRole::kColumn);
    model->lm_head->tp_sequence_parallel = false;
    model->lm_head->tp_input_shared = sequence_parallel;
  }
  model->set_tensor_parallel(std::move(comm), sequence_parallel);
  return out;
}

at::Tensor vocab_parallel_cross_entropy_sum(const at::Tensor& logits, const at::Tensor& targets, int64_t vocab_start,
                                            TensorParallelComm& comm) {
  return vocab_parallel_cross_entropy(logits, targets, vocab_start, comm).sum();
}

at::Tensor vocab_parallel_cross_entropy(const at::Tensor& logits, const at::Tensor& targets, int64_t vocab_start,
                                        TensorParallelComm& comm) {
  const int64_t local_vocab = logits.size(-1);
  at::Tensor max;
  {
    at::NoGradGuard no_grad;
    max = std::get<0>(logits.detach().max(-1));
    comm.all_reduce_max(max);
  }
  const auto shifted = logits - max.unsqueeze(-1);                                  // [N, V/size]
  const auto sum_exp = reduce_from_tensor_parallel(shifted.exp().sum(-1), comm);  // [N], the whole vocabulary's
  const auto local = targets - vocab_start;
  const auto mine = local.ge(0).logical_and(local.lt(local_vocab));
  const auto picked = shifted.gather(-1, at::where(mine, local, at::zeros_like(local)).unsqueeze(-1)).squeeze(-1);
  const auto target_logit = reduce_from_tensor_parallel(at::where(mine, picked, at::zeros_like(picked)), comm);
  const auto per_token = sum_exp.log() - target_logit;
  return at::where(targets.ne(-100), per_token, at::zeros_like(per_token));
}

at::Tensor vocab_parallel_argmax(const at::Tensor& logits, int64_t vocab_start, TensorParallelComm& comm) {
  at::NoGradGuard no_grad;
  // The maximum in the logits' own dtype, then only the [N] maxima widened (exactly): no double copy of [N, V/size].
  auto [local_max, index] = logits.detach().max(-1);
  const at::Tensor value = local_max.to(at::kDouble);
  at::Tensor best = value.clone();
  comm.all_reduce_max(best);
  // The lowest index holding the maximum, as argmax: the largest of -index over the ranks that hold it.
  auto candidate = at::where(value.eq(best), -(index + vocab_start).to(at::kDouble),
                             at::full_like(value, -std::numeric_limits<double>::infinity()));
  comm.all_reduce_max(candidate);
  return (-candidate).to(at::kLong);
}

}  // namespace swift::model
