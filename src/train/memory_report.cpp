// The memory estimate, logged (see memory_report.h).
#include "swift/train/memory_report.h"

#include <algorithm>

#include "swift/core/logging.h"
#include "swift/core/memory.h"
#include "swift/model/param_sharding.h"
#include "swift/quant/quantized_linear.h"
#include "swift/train/memory_estimate.h"

namespace swift::train {

void log_memory_estimate(const MemoryReportInputs& r) {
  MemoryInputs in;
  model::CausalLM model = r.model;  // a handle: the same module
  const distributed::ParallelFootprint f = r.parallel.footprint(model);  // computed once: it walks the model
  for (const auto& p : model->parameters()) {
    in.total_params += p.numel();
    // Pipeline stages: another stage's parameters are shapes only here (ZeRO-3 counts them whole and divides).
    if (f.held_parameters_only && !model::holds_values(p)) continue;
    in.weight_bytes += p.numel() * static_cast<int64_t>(p.element_size());
  }
  in.weight_bytes += model::quantized_bytes(model).first;  // QLoRA: the packed weights and their statistics
  in.weight_bytes += r.objective.extra_weight_bytes();    // rlhf: a loaded reference model
  if (!r.quantized) {
    for (const auto& [name, linear] : quant::quantizable_linears(model, quant::QuantConfig{})) {
      in.quantizable_params += linear->weight.numel();
      in.quantizable_bytes += linear->weight.numel() * static_cast<int64_t>(linear->weight.element_size());
    }
  }
  for (const auto& p : r.parallel.trainable()) {
    in.trainable_params += p.numel();
    in.trainable_bytes += p.numel() * static_cast<int64_t>(p.element_size());
  }
  const auto& config = model->config();
  in.hidden_size = config.hidden_size;
  in.intermediate_size = mlp_activation_width(config);
  // Whose activations this rank holds: every layer once, or a pipeline stage's layers for each pass in flight.
  in.num_layers = f.activation_layers ? f.activation_layers(r.micro_batches) : config.num_hidden_layers;
  in.vocab_size = config.vocab_size;
  const c10::ScalarType compute = r.autocast ? *r.autocast : model->parameters().front().scalar_type();
  in.activation_element_bytes = static_cast<int64_t>(c10::elementSize(compute));
  // Rows are padded to the longest in their batch: the longest row bounds a micro-batch (--max_length where the
  // rows are encoded as they are drawn).
  // Context parallelism: each rank keeps its share of every row.
  const int64_t row = r.longest_example > 0 ? r.longest_example : r.max_length;
  in.tokens_per_micro_batch = r.per_device_batch * r.objective.sequences_per_example() * ((row + f.sequence_split - 1) / f.sequence_split);
  if (config.attn_logit_softcapping > 0) {  // its scores outside the fused kernel (no context parallelism then)
    in.materialised_score_heads = config.num_attention_heads / std::max(1, f.tensor_split);
    in.rows_per_micro_batch = r.per_device_batch * r.objective.sequences_per_example();
    in.row_tokens = row;
  }
  in.tensor_split = f.tensor_split;
  in.sequence_parallel = f.sequence_parallel;
  in.zero_stage = f.zero_stage;
  in.world_size = f.world_size;
  in.optimizer_offloaded = f.optimizer_offloaded;
  in.params_offloaded = f.params_offloaded;
  in.outer_weight_bytes = f.outer_weight_bytes;
  in.layer_weight_bytes = f.layer_weight_bytes;
  const c10::Device device = model->device();
  in.gpu = device.is_cuda();
  in.gradient_checkpointing = r.gradient_checkpointing;
  if (r.optimizer) {
    // The optimizer holds this rank's own parameters (its share under ZeRO and the distributed optimizer, whose
    // experts' share is over the ranks holding them, not the data group): the ratio makes estimate_memory's division
    // by the group give exactly its planned state, whatever the split and the state's dtype.
    const double planned = static_cast<double>(r.optimizer->planned_state_bytes());
    const double divided = in.zero_stage >= 1 ? std::max(1.0, static_cast<double>(in.world_size)) : 1.0;
    if (in.trainable_bytes > 0) in.optimizer_state_ratio = planned * divided / (2.0 * static_cast<double>(in.trainable_bytes));
    in.optimizer_name = r.optimizer->describe().substr(0, r.optimizer->describe().find(" ("));
  }
  const double available = available_memory_bytes(device.is_cuda() ? device.index() : -1, r.parallel.local_world_size());
  const auto estimate = estimate_memory(in);
  const std::string text = describe_estimate(in, estimate, available, device.is_cuda() ? "GPU memory" : "RAM", r.adapter);
  if (!memory_advice(in, estimate, available, r.adapter).empty()) log_warn("memory per rank (estimate): ", text);
  else log_info("memory per rank (estimate): ", text);
}

}  // namespace swift::train
