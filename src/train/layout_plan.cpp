// Which Megatron layout to train a model on a set of GPUs (see layout_plan.h).
#include "swift/train/layout_plan.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include <torch/cuda.h>

#include "swift/core/bytes.h"
#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/core/memory.h"
#include "swift/model/expert_parallel.h"
#include "swift/model/tensor_parallel.h"

namespace swift::train {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Parameters of a decoder layer, on average over the layers (a mixture-of-experts model mixes dense and sparse
// ones), and those of them in the experts (what expert parallelism splits).
double layer_parameters(const model::ModelConfig& c) {
  model::ModelConfig layers_only = c;
  layers_only.vocab_size = 0;
  layers_only.tie_word_embeddings = true;
  layers_only.num_labels = 0;
  const double without_final_norm = model::parameter_count(layers_only) - static_cast<double>(c.hidden_size);
  return without_final_norm / static_cast<double>(std::max<int64_t>(1, c.num_hidden_layers));
}

double layer_expert_parameters(const model::ModelConfig& c) {
  if (!c.is_moe()) return 0;
  int64_t sparse = 0;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) sparse += c.sparse_layer(i) ? 1 : 0;
  const double per_layer = static_cast<double>(c.moe.num_experts) * 3.0 * static_cast<double>(c.hidden_size) *
                           static_cast<double>(c.moe.expert_intermediate_size);
  return per_layer * static_cast<double>(sparse) / static_cast<double>(std::max<int64_t>(1, c.num_hidden_layers));
}

// all-linear LoRA's parameters per layer, on average: q/k/v/o and the MLP's gate/up/down on a dense layer; on a sparse
// one the shared expert and its gate, if any (as ms-swift's all-linear, neither the router nor the experts).
double lora_layer_parameters(const model::ModelConfig& c, int64_t rank) {
  const double h = static_cast<double>(c.hidden_size);
  const double q = static_cast<double>(c.q_dim()), kv = static_cast<double>(c.kv_dim());
  const bool fused_mlp = c.fused_gate_up;  // Phi-3, GLM-4: one LoRA on gate_up_proj (Phi-3: and one on qkv_proj)
  auto mlp = [h, fused_mlp](double width) { return (fused_mlp ? h + 2 * width : 2 * (h + width)) + (width + h); };
  double attention = (h + q) + 2 * (h + kv) + (q + h);
  if (c.fused_qkv) attention = (h + q + 2 * kv) + (q + h);
  if (const auto& a = c.latent_attention) {  // DeepSeek's MLA: each projection's LoRA, in + out wide
    const double heads = static_cast<double>(c.num_attention_heads), qr = static_cast<double>(a->q_lora_rank);
    const double kr = static_cast<double>(a->kv_lora_rank), query = heads * static_cast<double>(a->qk_head_dim());
    attention = (a->q_lora_rank > 0 ? (h + qr) + (qr + query) : h + query) +
                (h + kr + static_cast<double>(a->qk_rope_head_dim)) +
                (kr + heads * static_cast<double>(a->qk_nope_head_dim + a->v_head_dim)) +
                (heads * static_cast<double>(a->v_head_dim) + h);
  }
  double layers = 0;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const double shared = static_cast<double>(c.moe.shared_expert_intermediate_size);
    layers += attention + (!c.sparse_layer(l) ? mlp(static_cast<double>(c.intermediate_size))
                           : shared > 0       ? mlp(shared) + (h + 1)
                                              : 0.0);
  }
  return static_cast<double>(rank) * layers / static_cast<double>(std::max<int64_t>(1, c.num_hidden_layers));
}

// The busiest rank's memory under one layout.
MemoryEstimate estimate(const LayoutPlanInputs& in, int tp, int cp, int pp, int dp, int ep) {
  const model::ModelConfig& c = in.config;
  const int64_t stage_layers = ceil_div(c.num_hidden_layers, pp);
  const double embedding = static_cast<double>(c.vocab_size) * static_cast<double>(c.hidden_size);
  const double head = c.tie_word_embeddings ? (pp > 1 ? embedding : 0.0) : embedding;  // a tied head: the last stage's copy
  // The first stage holds the embedding, the last the head (one stage: both); the layers and both split over TP.
  const double outer = pp == 1 ? embedding + head : std::max(embedding, head);
  // Tensor parallelism splits the dense weights; the experts stay whole (Megatron's --expert_tensor_parallel_size 1),
  // each EP rank keeping 1/ep of them.
  const double experts = layer_expert_parameters(c);
  const double dense_layer = layer_parameters(c) - experts;
  const double params = static_cast<double>(stage_layers) * (dense_layer / tp + experts / ep) + outer / tp;
  const double trainable = in.lora ? static_cast<double>(stage_layers) * lora_layer_parameters(c, in.lora_rank) / tp : params;

  MemoryInputs m;
  m.total_params = static_cast<int64_t>(params);
  m.trainable_params = static_cast<int64_t>(trainable);
  m.weight_bytes = static_cast<int64_t>(in.lora ? params * static_cast<double>(in.base_element_bytes) + trainable * 4 : params * 4);
  m.trainable_bytes = static_cast<int64_t>(trainable * 4);
  m.hidden_size = c.hidden_size;
  m.intermediate_size = mlp_activation_width(c);
  m.num_layers = stage_layers;
  m.vocab_size = c.vocab_size;
  m.tensor_split = tp;  // with sequence parallelism (the plan's flags turn it on): the residual stream split too
  m.sequence_parallel = tp > 1;
  m.activation_element_bytes = in.activation_element_bytes;
  m.tokens_per_micro_batch = in.micro_batch * ceil_div(in.row_tokens, cp);
  if (c.attn_logit_softcapping > 0) {  // Gemma 2's scores outside the fused kernel (never under context parallelism)
    m.materialised_score_heads = c.num_attention_heads / tp;
    m.rows_per_micro_batch = in.micro_batch;
    m.row_tokens = in.row_tokens;
  }
  m.zero_stage = in.distributed_optimizer && dp * cp > 1 ? 1 : 0;
  m.world_size = dp * cp;
  m.gradient_checkpointing = in.gradient_checkpointing;
  MemoryEstimate e = estimate_memory(m);
  // The distributed optimizer splits the experts' AdamW state over the ranks holding the same experts
  // (tp x dp x cp / ep), the rest over the data group (dp x cp).
  if (!in.lora && m.zero_stage >= 1 && ep > 1) {
    const double split_experts = static_cast<double>(stage_layers) * experts / ep;
    e.optimizer *= (params - split_experts + split_experts * ep / tp) / params;
  }
  // 1F1B: the first stage keeps its layers' activations for up to PP micro-batches until their backward; the last
  // stage one micro-batch's, and the logits (one stage: both on the same rank).
  MemoryInputs layers_only = m;
  layers_only.vocab_size = 0;
  const MemoryEstimate layers = estimate_memory(layers_only);
  const double in_flight = static_cast<double>(std::min<int64_t>(pp, std::max<int64_t>(1, in.micro_batches)));
  e.activations = std::max(layers.activations * in_flight, e.activations);
  e.activations_other_mode = std::max(layers.activations_other_mode * in_flight, e.activations_other_mode);
  return e;
}

std::string layout_name(const LayoutOption& o) {
  return "tp " + std::to_string(o.tp) + " x cp " + std::to_string(o.cp) + " x pp " + std::to_string(o.pp) + " x dp " +
         std::to_string(o.dp) + (o.ep > 1 ? " (ep " + std::to_string(o.ep) + ")" : "");
}

std::string layout_flags(const LayoutOption& o) {
  std::string flags;
  if (o.tp > 1) flags += " --tp_size " + std::to_string(o.tp) + " --sequence_parallel true";
  if (o.pp > 1) flags += " --pp_size " + std::to_string(o.pp);
  if (o.cp > 1) flags += " --cp_size " + std::to_string(o.cp);
  if (o.ep > 1) flags += " --ep_size " + std::to_string(o.ep);
  return flags.empty() ? "none (data parallelism over every GPU)" : flags.substr(1);
}

std::string breakdown(const MemoryEstimate& e) {
  return format_bytes(e.total()) + " (weights " + format_bytes(e.weights) + ", gradients " + format_bytes(e.gradients) +
         ", AdamW " + format_bytes(e.optimizer) + ", activations " + format_bytes(e.activations) + ")";
}

}  // namespace

std::vector<LayoutOption> layout_options(const LayoutPlanInputs& in) {
  std::vector<LayoutOption> out;
  const double usable = in.gpu_bytes * in.usable_share;
  for (int tp = 1; tp <= in.gpus_per_node; ++tp) {
    if (in.gpus_per_node % tp || !model::tensor_parallel_problem(in.config, tp).empty()) continue;
    // Context parallelism has no attention soft-capping (Gemma 2): no cp above 1 there.
    // Context parallelism has neither Gemma 2's soft-capped scores nor DeepSeek's latent attention.
    // Nor longrope (Phi-3), whose factors each rank would choose from its own positions.
    const int max_cp =
        in.config.attn_logit_softcapping > 0 || in.config.latent_attention || in.config.rope.type == "longrope" ? 1 : in.gpus;
    for (int cp = 1; tp * cp <= in.gpus && 2 * cp <= in.row_tokens && cp <= max_cp; cp *= 2) {
      for (int pp = 1; tp * cp * pp <= in.gpus && pp <= in.config.num_hidden_layers; ++pp) {
        if (in.gpus % (tp * cp * pp)) continue;
        const int dp = in.gpus / (tp * cp * pp);
        // Expert parallelism (MoE models): any split of the experts the ranks of a stage (tp x dp x cp) allow.
        for (int ep = 1; ep <= tp * dp * cp; ++ep) {
          if (ep > 1 && ((tp * dp * cp) % ep || !model::expert_parallel_problem(in.config, ep).empty())) continue;
          LayoutOption o;
          o.tp = tp, o.cp = cp, o.pp = pp, o.dp = dp, o.ep = ep;
          o.per_rank = estimate(in, tp, cp, pp, dp, ep);
          o.fits = usable > 0 && o.per_rank.total() <= usable;
          out.push_back(o);
        }
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const LayoutOption& a, const LayoutOption& b) {
    return std::make_tuple(a.tp * a.cp * a.pp, a.cp, a.pp, a.ep) < std::make_tuple(b.tp * b.cp * b.pp, b.cp, b.pp, b.ep);
  });
  return out;
}

std::optional<LayoutOption> recommended_layout(const std::vector<LayoutOption>& options) {
  for (const auto& o : options)
    if (o.fits) return o;
  return std::nullopt;
}

std::string describe_layout_plan(const LayoutPlanInputs& in, const std::vector<LayoutOption>& options, size_t shown) {
  const model::ModelConfig& c = in.config;
  char head[256];
  std::snprintf(head, sizeof(head), "layout plan: %.2fB parameters (%lld layers, %lld heads), %s, %d GPUs (%d per node) of ",
                model::parameter_count(c) / 1e9, static_cast<long long>(c.num_hidden_layers),
                static_cast<long long>(c.num_attention_heads), in.lora ? "LoRA" : "full fine-tuning", in.gpus, in.gpus_per_node);
  std::string out = head + format_bytes(in.gpu_bytes) + " (" + std::to_string(static_cast<int>(std::lround(100 * in.usable_share))) +
                    "% usable), rows of " + std::to_string(in.row_tokens) + " tokens, micro-batch " +
                    std::to_string(in.micro_batch) + (in.gradient_checkpointing ? ", gradient checkpointing" : "") + "\n";
  const auto best = recommended_layout(options);
  size_t listed = 0;
  for (const bool fitting : {true, false}) {  // what fits first, in order of preference
    for (const auto& o : options) {
      if (o.fits != fitting || listed >= shown) continue;
      out += "  " + layout_name(o) + ": " + breakdown(o.per_rank) + (o.fits ? " fits" : " does not fit") + "\n";
      ++listed;
    }
  }
  if (best) {
    out += "recommended: " + layout_flags(*best) + " (" + layout_name(*best) + ": " + format_bytes(best->per_rank.total()) +
           " per rank)";
    return out;
  }
  const auto smallest = std::min_element(options.begin(), options.end(), [](const LayoutOption& a, const LayoutOption& b) {
    return a.per_rank.total() < b.per_rank.total();
  });
  out += "nothing fits";
  if (smallest != options.end())
    out += ": the least per rank is " + layout_name(*smallest) + " at " + format_bytes(smallest->per_rank.total());
  out += "; what would help: more GPUs";
  if (!in.lora) out += ", --train_type lora";
  out += ", shorter rows (--max_length)";
  if (!in.gradient_checkpointing) out += ", --gradient_checkpointing true";
  return out;
}

void run_layout_plan(const TrainingOptions& options) {
  LayoutPlanInputs in;
  in.config = model::load_model_config(options.model.dir);
  const int machine_gpus = torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  in.gpus = static_cast<int>(options.plan.gpus > 0 ? options.plan.gpus : machine_gpus);
  SWIFT_CHECK(in.gpus > 0, UsageError, "--plan_layout: this machine has no GPU to plan for",
              "give the GPUs to plan for: --plan_gpus 32 --plan_gpus_per_node 8 --plan_gpu_memory 80");
  in.gpus_per_node = static_cast<int>(options.plan.gpus_per_node > 0 ? options.plan.gpus_per_node
                                                                     : std::min(in.gpus, machine_gpus > 0 ? machine_gpus : in.gpus));
  SWIFT_CHECK(in.gpus % in.gpus_per_node == 0, UsageError,
              "--plan_layout: " + std::to_string(in.gpus) + " GPUs are not whole nodes of " + std::to_string(in.gpus_per_node),
              "give --plan_gpus_per_node (GPUs per node)");
  in.gpu_bytes = options.plan.gpu_gib > 0 ? options.plan.gpu_gib * 1024.0 * 1024.0 * 1024.0
                                          : (machine_gpus > 0 ? available_memory_bytes(0, 1) : 0.0);
  SWIFT_CHECK(in.gpu_bytes > 0, UsageError, "--plan_layout: the GPUs' memory is not known here",
              "give it in GiB: --plan_gpu_memory 80");
  in.row_tokens = options.data.max_length_for(in.config.max_position_embeddings);
  in.micro_batch = options.loop.per_device_train_batch_size;
  // 0: ms-swift's default, enough for 16 samples (only up to PP of them are in flight).
  in.micro_batches = options.loop.gradient_accumulation_steps > 0 ? options.loop.gradient_accumulation_steps
                                                                  : std::max<int64_t>(1, 16 / std::max<int64_t>(1, in.micro_batch));
  in.lora = options.tuner.adapter();
  in.lora_rank = options.tuner.lora.r;
  const bool fp32 = options.model.torch_dtype ? *options.model.torch_dtype == c10::kFloat : in.config.torch_dtype == "float32";
  in.base_element_bytes = in.activation_element_bytes = fp32 ? 4 : 2;
  in.gradient_checkpointing = options.model.gradient_checkpointing;
  in.distributed_optimizer = options.parallel.distributed_optimizer;
  log_info(describe_layout_plan(in, layout_options(in)));
}

}  // namespace swift::train
