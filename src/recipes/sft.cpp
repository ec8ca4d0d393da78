// swift sft / swift pt: supervised fine-tuning and (continued) pretraining, full or LoRA.
// Top to bottom: flags -> run folder -> model (+ LoRA) -> data -> optimizer and schedule -> loop -> save.
// pt is the same job with plain text instead of a chat template and loss on every token.
#include <ATen/ATen.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/serialize.h>
#include <torch/cuda.h>
#include <torch/utils.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <cmath>
#include <deque>
#include <filesystem>

#include "swift/core/atomic_write.h"
#include "swift/core/device.h"
#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/core/progress.h"
#include "swift/data/dataset.h"
#include "swift/dist/env.h"
#include "swift/dist/gradient_sync.h"
#include "swift/dist/process_group.h"
#include "swift/dist/zero.h"
#include "swift/dist/zero3.h"
#include "swift/io/hf_config.h"
#include "swift/model/autocast.h"
#include "swift/model/checkpoint.h"
#include "swift/model/family_registry.h"
#include "swift/model/param_sharding.h"
#include "swift/quant/quantized_linear.h"
#include "swift/recipes/quant_flags.h"
#include "swift/recipes/commands.h"
#include "swift/recipes/trainer.h"
#include "swift/template/message.h"
#include "swift/template/select.h"
#include "swift/template/template.h"
#include "swift/template/template_meta.h"
#include "swift/tokenizer/tokenizer.h"
#include "swift/train/adamw.h"
#include "swift/train/grad_scaler.h"
#include "swift/train/loss.h"
#include "swift/train/loss_plot.h"
#include "swift/train/tensorboard_writer.h"
#include "swift/train/lr_schedule.h"
#include "swift/train/memory_estimate.h"
#include "swift/train/run_dir.h"
#include "swift/train/sft_data.h"
#include "swift/train/dataset_cache.h"
#include "swift/train/lazy_data.h"
#include "swift/train/streaming_data.h"
#include "swift/train/train_data.h"
#include "swift/recipes/train_rows.h"
#include "swift/data/row_stream.h"
#include "swift/tuners/lora.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace swift::recipes {

std::vector<cli::FlagSpec> train_flags(bool pretrain) {
  using cli::FlagType;
  std::vector<cli::FlagSpec> flags = {
      {"model", FlagType::kString, "", "Hugging Face model folder to start from"},
      {"init_strategy", FlagType::kString, "", "train from scratch: initialise a folder that has only config.json"},
      {"train_type", FlagType::kString, pretrain ? "full" : "lora",
       "full, lora, or qlora (lora on a 4-bit NF4 base: --quant_method bnb --quant_bits 4)", {"tuner_type", "sft_type"}},
  };
  for (auto& f : dataset_flags(pretrain)) flags.push_back(f);
  std::vector<cli::FlagSpec> training = {
      {"packing", FlagType::kBool, "false", "pack samples into rows of --packing_length tokens (no cross-sample attention)"},
      {"packing_length", FlagType::kInt, "0", "tokens per packed row (0: --max_length)"},
      {"lazy_tokenize", FlagType::kBool, "false", "encode each row when its batch is drawn instead of all up front"},
      {"streaming", FlagType::kBool, "false", "read --dataset row by row while training (.jsonl line by line; needs --max_steps)"},
      {"shuffle_buffer_size", FlagType::kInt, "1000", "--streaming: rows held for shuffling (1: file order)"},
      {"cached_dataset", FlagType::kList, "", "tokenised training data from swift export --to_cached_dataset true (DIR or DIR/train)"},
      {"cached_val_dataset", FlagType::kList, "", "tokenised validation data from such an export (DIR or DIR/val)"},
      {"num_train_epochs", FlagType::kFloat, "1", "passes over the data (ignored when --max_steps > 0)"},
      {"max_steps", FlagType::kInt, "-1", "optimizer steps (overrides --num_train_epochs when > 0)"},
      {"per_device_train_batch_size", FlagType::kInt, "1", "samples per micro-batch", {"batch_size"}},
      {"per_device_eval_batch_size", FlagType::kInt, "1", "samples per evaluation batch"},
      {"gradient_accumulation_steps", FlagType::kInt, "0", "micro-batches per optimizer step (0: enough for 16 samples)"},
      {"learning_rate", FlagType::kFloat, "", "peak learning rate (default 1e-4 for lora, 1e-5 for full)"},
      {"weight_decay", FlagType::kFloat, "0.1", "AdamW weight decay (not on biases and norms)"},
      {"adam_beta1", FlagType::kFloat, "0.9", "AdamW beta1"},
      {"adam_beta2", FlagType::kFloat, "0.95", "AdamW beta2"},
      {"adam_epsilon", FlagType::kFloat, "1e-8", "AdamW epsilon"},
      {"lr_scheduler_type", FlagType::kString, "cosine", "linear, cosine, constant, constant_with_warmup, cosine_with_min_lr"},
      {"min_lr_rate", FlagType::kFloat, "", "cosine_with_min_lr: the floor as a fraction of --learning_rate"},
      {"warmup_ratio", FlagType::kFloat, "0", "fraction of steps spent warming up (0 as ms-swift)"},
      {"warmup_steps", FlagType::kFloat, "0", "warm-up steps (overrides --warmup_ratio when > 0)"},
      {"max_grad_norm", FlagType::kFloat, "1.0", "clip gradients to this norm (0: off); the logged norm is before clipping"},
      {"bf16", FlagType::kBool, "false", "compute in bfloat16 over the loaded weights (mixed precision; fp32 master weights for full)"},
      {"fp16", FlagType::kBool, "false", "compute in float16 with dynamic loss scaling (mixed precision)"},
      {"gradient_checkpointing", FlagType::kBool, "true", "recompute decoder layers in backward instead of keeping activations (less memory, same gradients)"},
      {"lora_rank", FlagType::kInt, "8", "LoRA rank r"},
      {"lora_alpha", FlagType::kFloat, "32", "LoRA alpha (scaling alpha / r)"},
      {"lora_dropout", FlagType::kFloat, "0.05", "dropout on the LoRA input"},
      {"target_modules", FlagType::kList, "all-linear", "modules to adapt: all-linear or names (q_proj v_proj ...)"},
      {"target_regex", FlagType::kString, "", "regex over module names (instead of --target_modules)"},
      {"modules_to_save", FlagType::kList, "", "modules trained in full next to LoRA (embed_tokens, lm_head)"},
      {"lora_dtype", FlagType::kString, "", "dtype of the trainable LoRA weights: float32 (default), bfloat16, float16"},
      {"use_rslora", FlagType::kBool, "false", "rank-stabilised scaling alpha / sqrt(r)"},
      {"use_dora", FlagType::kBool, "false", "DoRA: a trainable magnitude per output feature rescales W + scaling * B A (PEFT's use_dora)", {}},
      {"init_weights", FlagType::kString, "true", "LoRA init: true (B = 0), gaussian, false"},
      {"output_dir", FlagType::kString, "", "run folder root (default: output/<model name>)"},
      {"add_version", FlagType::kBool, "true", "put the run in <output_dir>/v<N>-<time>/"},
      {"logging_steps", FlagType::kInt, "5", "log every N optimizer steps"},
      {"eval_steps", FlagType::kInt, "0", "evaluate every N steps (0: at --save_steps)"},
      {"save_steps", FlagType::kInt, "500", "save a checkpoint every N steps (and always at the end)"},
      {"save_total_limit", FlagType::kInt, "0", "keep only the newest N checkpoints (0: all)"},
      {"save_only_model", FlagType::kBool, "false", "checkpoints without optimizer and trainer state"},
      {"resume_from_checkpoint", FlagType::kString, "", "continue a run exactly from its checkpoint-N folder"},
      {"resume_only_model", FlagType::kBool, "false", "with --resume_from_checkpoint: take only the weights, start at step 0"},
      {"ignore_data_skip", FlagType::kBool, "false", "with --resume_from_checkpoint: restart the data from the beginning"},
      // Several ranks (NPROC_PER_NODE, torchrun, srun; docs/distributed.md).
      {"ddp_timeout", FlagType::kInt, "1800", "seconds a rank waits for the others (rendezvous, each collective) before failing"},
      {"ddp_backend", FlagType::kString, "auto", "auto (nccl on CUDA, gloo on CPU), nccl or gloo (on GPUs staged through CPU RAM: slow, but several ranks may share one GPU)"},
      {"deepspeed", FlagType::kString, "", "ZeRO over the ranks: zero0, zero1 (optimizer state sharded), zero2 (and gradients), zero3 (and parameters), *_offload, or a DeepSpeed JSON file"},
      {"fsdp", FlagType::kString, "", "FSDP spelling of ZeRO where it maps: full_shard (zero3), shard_grad_op (zero2), no_shard (zero0)"},
      // Accepted so that pasted ms-swift command lines run; they change nothing here (the log says why).
      {"dataloader_num_workers", FlagType::kInt, "0", "accepted for ms-swift command lines; no effect (batches are built in-process)"},
      {"attn_impl", FlagType::kString, "", "accepted for ms-swift command lines; attention is LibTorch's scaled_dot_product_attention"},
      {"use_hf", FlagType::kBool, "false", "accepted for ms-swift command lines; models and data are local paths or built-ins"},
      {"report_to", FlagType::kList, "", "accepted for ms-swift command lines; TensorBoard events are always written"},
  };
  for (auto& f : training) flags.push_back(f);
  for (auto& f : quant_flags()) flags.push_back(f);
  for (auto& f : cli::common_flags()) flags.push_back(f);
  return flags;
}

namespace {

// The model inputs of a training batch. Rows are right-padded, so causal attention alone already keeps every
// real token from seeing a pad (pads come after it); the padding mask is left out, which lets attention run
// its fused causal kernel instead of a masked one. Pad positions compute garbage that no label reads.
// Packed rows keep their segment ids and restarting positions.
model::ForwardArgs forward_args(const train::Batch& b, c10::Device device) {
  model::ForwardArgs fa;
  fa.input_ids = b.input_ids.to(device);
  if (b.segment_ids.defined()) {
    fa.position_ids = b.position_ids.to(device);
    fa.segment_ids = b.segment_ids.to(device);
  }
  return fa;
}

// sft and pt: the causal LM loss, a token mean over every label token of the step; logged with token_acc.
class CausalLmObjective : public TrainingObjective {
 public:
  train::Batch collate(const std::vector<const train::Example*>& items, int64_t pad_id) const override {
    return train::collate(items, pad_id);
  }
  double units(const train::Batch& batch) const override { return static_cast<double>(batch.label_tokens); }
  std::vector<std::string> metric_names() const override { return {"loss", "token_acc"}; }
  MicroBatchResult compute(model::CausalLM& policy, const train::Batch& batch) override {
    auto sums = train::causal_lm_loss_sums_from_hidden(policy->forward_hidden(forward_args(batch, policy->device())),
                                                       batch.labels,
                                                       [&](const at::Tensor& h) { return policy->logits(h); });
    const auto tokens = static_cast<double>(sums.tokens);
    const at::Tensor loss = sums.loss_sum.detach().to(at::kDouble).reshape({1});
    const at::Tensor rest = at::tensor({tokens, static_cast<double>(sums.correct), tokens}, loss.options());
    return {sums.loss_sum, at::cat({loss, rest}).view({2, 2})};
  }
};

// Sums of the logged metrics over a window of micro-batches. The names are fixed up front, so every rank
// reduces the same values even when it had no micro-batch of its own.
class MetricWindow {
 public:
  explicit MetricWindow(std::vector<std::string> names) : names_(std::move(names)), sums_(2 * names_.size(), 0.0) {}
  // One micro-batch's [n, 2] metrics (MicroBatchResult::metrics): one copy to the host.
  void add(const at::Tensor& metrics) {
    const at::Tensor host = metrics.to(at::kCPU, at::kDouble).contiguous();
    TORCH_CHECK(host.numel() == static_cast<int64_t>(sums_.size()), "an objective reported ", host.numel() / 2,
                " metrics for ", names_.size(), " metric_names()");
    const double* v = host.data_ptr<double>();
    for (size_t i = 0; i < sums_.size(); ++i) sums_[i] += v[i];
  }
  // Summed over the ranks.
  void reduce(dist::ProcessGroup& group) { sums_ = group.sum(sums_); }
  // name -> sum / count, in order; a metric nothing was counted for is left out (as TRL's KTO log leaves out a
  // side without replies), except the loss.
  std::vector<std::pair<std::string, double>> values() const {
    std::vector<std::pair<std::string, double>> out;
    for (size_t i = 0; i < names_.size(); ++i) {
      const double sum = sums_[2 * i], count = sums_[2 * i + 1];
      if (count != 0 || names_[i] == "loss") out.emplace_back(names_[i], count != 0 ? sum / count : 0.0);
    }
    return out;
  }
  void clear() { std::fill(sums_.begin(), sums_.end(), 0.0); }

 private:
  std::vector<std::string> names_;
  std::vector<double> sums_;  // (sum, count) per name
};

// What the loop needs, built once.
struct Job {
  bool pretrain = false;
  bool lora = false;
  std::optional<quant::QuantConfig> quantization;  // QLoRA: how the frozen base is quantized
  fs::path model_dir, run_dir;
  model::CausalLM model{nullptr};
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<templates::Template> chat;
  std::string template_name;
  tuners::LoraConfig lora_config;
  std::unique_ptr<train::TrainData> train;  // where the loop draws micro-batches from
  std::vector<train::Example> val;
  int64_t pad_id = 0;
  std::optional<c10::ScalarType> autocast;  // full fine-tuning in bf16: compute dtype over fp32 weights
  std::optional<c10::ScalarType> save_dtype;  // how full checkpoints are stored (--torch_dtype)
  std::optional<train::GradScaler> scaler;    // float16: dynamic loss scaling
  uint64_t data_seed = 0;                     // --data_seed, else --seed
  // Several ranks: each takes its slice of every global micro-batch; rank 0 alone writes files.
  std::unique_ptr<dist::ProcessGroup> group;
  int rank = 0, world_size = 1, local_world_size = 1;
  int64_t longest_example = 0;  // tokens of the longest training row when encoded up front (0: not known)
  dist::ZeroConfig zero;  // stage > 0 only with several ranks
  // ZeRO-3: parameter values live on their owners; the embeddings, final norm and LM head ("outer" parameters)
  // are gathered for each micro-batch, the decoder layers around each use (model::ParamSharding).
  std::unique_ptr<dist::Zero3Sharding> zero3;
  std::vector<at::Tensor> outer_params;
  std::vector<std::vector<at::Tensor>> save_chunks;  // what a checkpoint save brings to rank 0, chunk by chunk
  int64_t full_parameter_bytes = 0, full_trainable_bytes = 0;  // before any sharding, for the held-memory log
  model::LoadOptions load;  // how the policy was loaded
  std::unique_ptr<TrainingObjective> objective;
  bool main_rank() const { return rank == 0; }
};

// This rank's slice of a global micro-batch of per_rank * world items: items [rank * per_rank, ...). The
// slices of all ranks together are the batch one process would train on, so 2 ranks x b equal 1 rank x 2b.
// A short last batch can leave a rank nothing.
std::vector<const train::Example*> rank_slice(const std::vector<const train::Example*>& items, int rank,
                                              int world_size) {
  if (world_size == 1) return items;
  const size_t per_rank = (items.size() + static_cast<size_t>(world_size) - 1) / static_cast<size_t>(world_size);
  const size_t begin = std::min(items.size(), per_rank * static_cast<size_t>(rank));
  const size_t end = std::min(items.size(), begin + per_rank);
  return {items.begin() + static_cast<std::ptrdiff_t>(begin), items.begin() + static_cast<std::ptrdiff_t>(end)};
}

// AdamW with weight decay on every trainable weight but biases and norm weights (as transformers' Trainer).
// With ZeRO only the parameters this rank owns (`owned`, by name); nullptr: all trainable ones.
std::unique_ptr<train::AdamW> make_optimizer(model::CausalLM& m, const cli::Flags& f, double lr,
                                             const std::set<std::string>* owned = nullptr) {
  train::AdamWGroup decay{{}, f.number("weight_decay")}, no_decay{{}, 0.0};
  for (auto& item : m->named_parameters()) {
    if (!item.value().requires_grad()) continue;
    if (owned && !owned->count(item.key())) continue;
    const std::string& n = item.key();
    const bool exempt = n.find("norm") != std::string::npos || (n.size() > 5 && n.compare(n.size() - 5, 5, ".bias") == 0);
    (exempt ? no_decay : decay).params.emplace_back(n, item.value());
  }
  SWIFT_CHECK(owned || !decay.params.empty() || !no_decay.params.empty(), UsageError,
              "nothing to train: no parameter requires a gradient", "check --train_type and --target_modules");
  auto optimizer = std::make_unique<train::AdamW>(
      std::vector<train::AdamWGroup>{decay, no_decay},
      train::AdamWHyper{f.number("adam_beta1"), f.number("adam_beta2"), f.number("adam_epsilon")});
  optimizer->set_lr(lr);
  return optimizer;
}

// Every rank evaluates every world_size-th batch; the sums are reduced, so the result is one process's. Under
// ZeRO-3 every rank runs the same number of forward passes (each gathers the layers together), a rank past the
// end re-running the first batch without counting it.
std::vector<std::pair<std::string, double>> evaluate(Job& job, int64_t batch_size) {
  torch::NoGradGuard no_grad;
  job.model->eval();
  MetricWindow window(job.objective->metric_names());
  const size_t bs = static_cast<size_t>(batch_size), world = static_cast<size_t>(job.world_size);
  const size_t batches = (job.val.size() + bs - 1) / bs;
  const size_t rounds = job.zero3 ? (batches + world - 1) / world : 0;
  if (job.zero3) job.zero3->gather(job.outer_params);
  for (size_t round = 0, b = static_cast<size_t>(job.rank); b < batches || round < rounds; ++round, b += world) {
    const bool stand_in = b >= batches;
    const size_t start = stand_in ? 0 : b * bs;
    std::vector<const train::Example*> items;
    for (size_t i = start; i < std::min(job.val.size(), start + bs); ++i) items.push_back(&job.val[i]);
    const auto batch = job.objective->collate(items, job.pad_id);
    model::AutocastScope autocast(job.model->device().type(), job.autocast);
    auto result = job.objective->compute(job.model, batch);
    if (!stand_in) window.add(result.metrics);
  }
  if (job.zero3) job.zero3->release(job.outer_params);
  job.model->train();
  if (job.group) window.reduce(*job.group);
  auto values = window.values();
  job.objective->derive_metrics(values);
  return values;
}

// "model.layers.3" for "model.layers.3.mlp.up_proj.weight"; "" for a parameter outside the decoder layers.
std::string decoder_layer_of(const std::string& name) {
  static const std::string kLayers = "model.layers.";
  if (name.rfind(kLayers, 0) != 0) return "";
  return name.substr(0, name.find('.', kLayers.size()));
}

// ZeRO-3: the parameters the model gathers around each of their own operations instead of for a whole
// micro-batch (sharded_ops.h): an adapter-free head with its bias, and the embedding unless it is the head too.
// A tied embedding would be gathered twice per micro-batch (the lookup, the logits), doubling the exchange of what
// is often the largest tensor (10% slower on bench_dist's 25m model, whose embedding is most of it), so it is held
// for the micro-batch instead.
std::vector<at::Tensor> gathered_around_use(model::CausalLM& m) {
  std::vector<at::Tensor> out;
  const bool tied = !m->lm_head && !m->is_sequence_classifier();
  if (!tied) out.push_back(m->model->embed_tokens->weight);
  if (m->lm_head && !m->lm_head->adapter) {
    out.push_back(m->lm_head->weight);
    if (m->lm_head->bias.defined()) out.push_back(m->lm_head->bias);
  }
  return out;
}

// Before the first step: what this rank will need against what its device has, and what to change if it will
// not fit (train::estimate_memory).
void log_memory_estimate(const Job& job, const cli::Flags& flags, const std::vector<at::Tensor>& trainable,
                         int64_t batch_size) {
  train::MemoryInputs in;
  for (const auto& p : job.model->parameters()) {
    in.total_params += p.numel();
    in.weight_bytes += p.numel() * static_cast<int64_t>(p.element_size());
  }
  in.weight_bytes += quant::quantized_bytes(job.model).first;  // QLoRA: the packed weights and their statistics
  in.weight_bytes += job.objective->extra_weight_bytes();       // rlhf: a loaded reference model
  if (!job.quantization) {
    model::CausalLM shared = job.model;  // the same module (a holder copy); quantizable_linears wants it mutable
    for (const auto& [name, linear] : quant::quantizable_linears(shared, quant::QuantConfig{})) {
      in.quantizable_params += linear->weight.numel();
      in.quantizable_bytes += linear->weight.numel() * static_cast<int64_t>(linear->weight.element_size());
    }
  }
  for (const auto& p : trainable) {
    in.trainable_params += p.numel();
    in.trainable_bytes += p.numel() * static_cast<int64_t>(p.element_size());
  }
  const auto& config = job.model->config();
  in.hidden_size = config.hidden_size;
  in.intermediate_size = config.intermediate_size;
  in.num_layers = config.num_hidden_layers;
  in.vocab_size = config.vocab_size;
  const c10::ScalarType compute = job.autocast ? *job.autocast : job.model->parameters().front().scalar_type();
  in.activation_element_bytes = static_cast<int64_t>(c10::elementSize(compute));
  // Rows are padded to the longest in their batch: the longest row bounds a micro-batch (--max_length where the
  // rows are encoded as they are drawn).
  const int64_t max_length = flags.integer("max_length") > 0 ? flags.integer("max_length") : config.max_position_embeddings;
  in.tokens_per_micro_batch = batch_size * job.objective->sequences_per_example() *
                              (job.longest_example > 0 ? job.longest_example : max_length);
  in.zero_stage = job.zero.stage;
  in.optimizer_offloaded = job.zero.offload_optimizer && job.model->device().is_cuda();
  in.params_offloaded = job.zero.offload_param && job.model->device().is_cuda();
  in.gpu = job.model->device().is_cuda();
  if (job.zero.stage == 3) {  // what ZeRO-3 gathers whole: a layer at a time, the embedding or the head around
    std::map<std::string, int64_t> layer_bytes;  // each of their uses, the other outer parameters per micro-batch
    model::CausalLM shared = job.model;
    const auto around_use = gathered_around_use(shared);
    int64_t per_use = 0;
    for (const auto& item : job.model->named_parameters()) {
      const std::string& n = item.key();
      const int64_t bytes = item.value().numel() * static_cast<int64_t>(item.value().element_size());
      if (const std::string layer = decoder_layer_of(n); !layer.empty()) layer_bytes[layer] += bytes;
      else if (std::any_of(around_use.begin(), around_use.end(), [&](const at::Tensor& u) { return u.is_same(item.value()); }))
        per_use = std::max(per_use, bytes);
      else in.outer_weight_bytes += bytes;
    }
    in.outer_weight_bytes += per_use;
    for (const auto& [layer, bytes] : layer_bytes) in.layer_weight_bytes = std::max(in.layer_weight_bytes, bytes);
  }
  in.world_size = job.world_size;
  in.gradient_checkpointing = flags.boolean("gradient_checkpointing");
  const c10::Device device = job.model->device();
  const double available = train::available_memory_bytes(device.is_cuda() ? device.index() : -1, job.local_world_size);
  const auto estimate = train::estimate_memory(in);
  const std::string text = train::describe_estimate(in, estimate, available, device.is_cuda() ? "GPU memory" : "RAM",
                                                    job.lora);
  if (!train::memory_advice(in, estimate, available, job.lora).empty()) log_warn("memory per rank (estimate): ", text);
  else log_info("memory per rank (estimate): ", text);
}

// args.json of the run and its checkpoints: the flags as given, and what they resolved to where infer / deploy /
// export need it (the template, the base model, how a QLoRA base is quantized: as ms-swift records them).
json run_args(const Job& job, const cli::Flags& flags) {
  json args = flags.to_json();
  args["template"] = job.template_name.empty() ? json(nullptr) : json(job.template_name);
  args["model"] = fs::absolute(job.model_dir).string();
  if (job.quantization) {
    args["quant_method"] = "bnb";
    args["quant_bits"] = job.quantization->bits;
    args["bnb_4bit_quant_type"] = quant::four_bit_type_name(job.quantization->four_bit.type);
    args["bnb_4bit_use_double_quant"] = job.quantization->four_bit.double_quant;
    args["bnb_4bit_blocksize"] = job.quantization->four_bit.blocksize;
  }
  return args;
}

// Rank 0's part of a checkpoint: the weights, args.json and, with the training state, the optimizer (unless
// sharded), the RNG state and trainer_state.json.
void write_checkpoint_files(Job& job, const cli::Flags& flags, int64_t step, const train::AdamW& optimizer,
                            const train::TrainData& data, const fs::path& out, bool whole_optimizer) {
  if (job.lora) {
    tuners::save_adapter(job.model, job.lora_config, out);
  } else {
    model::SaveOptions save;
    save.dtype = job.save_dtype;
    model::save_model(job.model, out, save, job.model_dir);
  }
  io::write_json_file(out / "args.json", run_args(job, flags));
  if (flags.boolean("save_only_model")) return;
  if (whole_optimizer) optimizer.save(out / "optimizer.safetensors");
  // Dropout draws from the default CPU generator: its state makes the continuation bit-exact.
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  at::Tensor rng_state;
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    rng_state = generator.get_state();
  }
  torch::save(rng_state, (out / "rng_state.pt").string());
  const json data_state = data.state();  // "epoch"/"data_position" stay for readers of older checkpoints
  json state = {{"global_step", step}, {"epoch", data.epoch()}, {"data_position", data_state.value("position", uint64_t{0})},
                {"data_state", data_state},
                {"global_micro_batch", flags.integer("per_device_train_batch_size") * job.world_size}};
  if (job.scaler) {
    state["loss_scale"] = job.scaler->current_scale();
    state["loss_scale_growth_tracker"] = job.scaler->growth_tracker().item<int>();
  }
  io::write_json_file(out / "trainer_state.json", state);
}

// Runs on every rank. Rank 0 writes the model (or adapter), arguments and trainer state into a temporary
// folder; under ZeRO every rank adds its optimizer shard to it; once all have written (a barrier) rank 0 renames
// it into place, so a crash mid-save never leaves a checkpoint that looks complete.
void save_checkpoint(Job& job, const cli::Flags& flags, int64_t step, const train::AdamW& optimizer,
                     const train::TrainData& data, std::deque<fs::path>& saved) {
  const fs::path dir = job.run_dir / ("checkpoint-" + std::to_string(step));
  const bool with_state = !flags.boolean("save_only_model"), sharded = job.zero.stage > 0;
  std::optional<AtomicDir> out;
  fs::path tmp;
  if (job.main_rank()) {
    out.emplace(dir);
    tmp = out->path();
  }
  if (job.zero3) job.zero3->gather_to_host(job.save_chunks, 0);  // rank 0's copy in RAM, a layer at a time
  if (job.main_rank()) write_checkpoint_files(job, flags, step, optimizer, data, tmp, with_state && !sharded);
  if (sharded && with_state) {  // after rank 0's files: saving the model replaces the folder it writes into
    tmp = job.group->share("checkpoint-" + std::to_string(step), tmp.string());
    optimizer.save(tmp / dist::optimizer_shard_name(job.rank, job.world_size));
  }
  if (job.group) job.group->barrier();  // every shard is written, and no rank runs ahead of a save
  if (job.zero3)
    for (const auto& chunk : job.save_chunks) job.zero3->release(chunk);
  if (!job.main_rank()) return;
  if (sharded && with_state) {
    for (int r = 0; r < job.world_size; ++r)
      SWIFT_CHECK(fs::exists(tmp / dist::optimizer_shard_name(r, job.world_size)), DataError,
                  "rank " + std::to_string(r) + "'s optimizer shard did not reach " + tmp.string(),
                  "ZeRO checkpoints need --output_dir on a filesystem every node shares");
  }
  out->commit();
  saved.push_back(dir);
  const int64_t limit = flags.integer("save_total_limit");
  while (limit > 0 && static_cast<int64_t>(saved.size()) > limit) {
    fs::remove_all(saved.front());
    saved.pop_front();
  }
  log_info("saved ", dir.string());
}

// "31.3 MiB, 32.4 MiB": bytes[first, first + n), one per rank.
std::string bytes_per_rank(const std::vector<double>& bytes, size_t first, size_t n) {
  std::string out;
  for (size_t r = 0; r < n; ++r) {
    if (r > 0) out += ", ";
    out += train::format_bytes(bytes[first + r]);
  }
  return out;
}

// The AdamW state each rank holds under the partition (the moments are two tensors shaped like the parameter).
void log_zero_shares(const Job& job, const std::vector<int>& owners, const std::vector<int64_t>& bytes) {
  double total = 0;
  std::vector<double> per_rank(static_cast<size_t>(job.world_size), 0.0);
  for (size_t i = 0; i < bytes.size(); ++i) {
    total += static_cast<double>(bytes[i]);
    per_rank[static_cast<size_t>(owners[i])] += static_cast<double>(bytes[i]);
  }
  if (job.zero.stage == 3) {  // the partition is over every parameter's values
    log_info("ZeRO-3 (", job.zero.source, "): parameter values per rank ", bytes_per_rank(per_rank, 0, per_rank.size()),
             " (without ZeRO ", train::format_bytes(total), " on every rank); each owner keeps the AdamW state of its trainable ones");
    return;
  }
  std::string shares;
  for (size_t r = 0; r < per_rank.size(); ++r) {
    if (r > 0) shares += ", ";
    shares += std::to_string(2.0 * per_rank[r] / (1 << 20)).substr(0, 6);
  }
  log_info("ZeRO-", job.zero.stage, " (", job.zero.source, "): AdamW state per rank ", shares, " MiB (without ZeRO ",
           std::to_string(2.0 * total / (1 << 20)).substr(0, 6), " MiB on every rank)",
           job.zero.stage == 2 ? "; gradients between micro-batches likewise" : "");
}

// After the first ZeRO step: the parameter, gradient and AdamW bytes each rank actually holds on its device
// (measured on the tensors), next to what every rank would hold without ZeRO; what offloading keeps in CPU RAM
// instead is listed besides.
void log_held_memory(const Job& job, const std::vector<at::Tensor>& all_params, const std::vector<at::Tensor>& trainable,
                     const train::AdamW& optimizer) {
  const c10::Device device = job.model->device();
  const size_t world = static_cast<size_t>(job.world_size);
  std::vector<double> per_rank(2 * world, 0.0);  // [device bytes per rank..., CPU RAM bytes per rank...]
  auto add = [&](const at::Tensor& t) {
    const double bytes = static_cast<double>(t.numel()) * static_cast<double>(t.element_size());
    per_rank[static_cast<size_t>(job.rank) + (t.device() == device ? 0 : world)] += bytes;
  };
  for (const auto& p : all_params) add(p);  // ZeRO-3: released parameters hold nothing
  for (const auto& p : trainable)
    if (p.grad().defined()) add(p.grad());
  for (const auto& [name, t] : optimizer.state_tensors()) add(t);
  const double ddp = static_cast<double>(job.full_parameter_bytes) + 3.0 * static_cast<double>(job.full_trainable_bytes);
  per_rank = job.group->sum(per_rank);
  const std::string shares = bytes_per_rank(per_rank, 0, world), host = bytes_per_rank(per_rank, world, world);
  double largest = 0, host_total = 0;
  for (size_t r = 0; r < world; ++r) {
    largest = std::max(largest, per_rank[r]);
    host_total += per_rank[world + r];
  }
  char ratio[32];
  std::snprintf(ratio, sizeof(ratio), "%.2f", largest / ddp);
  log_info("ZeRO-", job.zero.stage, " holds after the first step (parameters + gradients + AdamW state) per rank: ",
           shares, "; without ZeRO ", train::format_bytes(ddp), " on every rank (largest share ", ratio, "x that)",
           host_total > 0 ? "; offloaded to CPU RAM: " + host : std::string());
}

double memory_high_water_bytes(const c10::Device& device) {
  return train::peak_memory_gib(device.is_cuda() ? device.index() : -1) * (1 << 30);
}

// After loading, with several ranks: each rank's memory high-water mark (the GPU's peak reserved memory, or the
// process's peak resident set on the CPU) and how much loading the model raised it from `before`. Under ZeRO-3
// (`sharded`) each rank has read only the parameters it owns.
void log_memory_high_water(const Job& job, double before, bool sharded) {
  const c10::Device device = job.model->device();
  const size_t world = static_cast<size_t>(job.world_size);
  std::vector<double> per_rank(2 * world, 0.0);
  per_rank[static_cast<size_t>(job.rank)] = memory_high_water_bytes(device);
  per_rank[world + static_cast<size_t>(job.rank)] = per_rank[static_cast<size_t>(job.rank)] - before;
  per_rank = job.group->sum(per_rank);
  log_info("model loaded; memory high-water mark per rank (", device.is_cuda() ? "GPU" : "RAM", "): ",
           bytes_per_rank(per_rank, 0, world), ", raised by loading: ", bytes_per_rank(per_rank, world, world), sharded ? " (ZeRO-3: each rank read only the parameters it owns)" : "");
}

// After the first step: the most gradient bytes each rank held during its backward passes (measured by the
// exchange's hooks), next to all the trainable parameters' gradients: ZeRO-2 keeps its own share and the buckets
// in flight.
void log_gradient_peak(const Job& job, const dist::GradientSync& sync) {
  std::vector<double> per_rank(static_cast<size_t>(job.world_size), 0.0);
  per_rank[static_cast<size_t>(job.rank)] = static_cast<double>(sync.peak_gradient_bytes());
  per_rank = job.group->sum(per_rank);
  log_info("gradients held during the backward, at most, per rank: ", bytes_per_rank(per_rank, 0, per_rank.size()),
           " (all gradients: ",
           train::format_bytes(static_cast<double>(job.full_trainable_bytes)), ")");
}

// placement: ZeRO-3's plan of which parameters this rank reads (none: the whole model).
Job build_job(const cli::Flags& flags, bool pretrain, const CommonSetup& setup,
              std::unique_ptr<dist::ProcessGroup> group, const TrainingHooks& hooks,
              const model::PlacementPlan& placement) {
  const RowPreparation& prepare_rows = hooks.prepare_rows;
  Job job;
  job.pretrain = pretrain;
  if (group) {
    job.rank = group->rank();
    job.world_size = group->world_size();
    job.group = std::move(group);
  }
  job.model_dir = flags.str("model");
  SWIFT_CHECK(!job.model_dir.empty(), UsageError, "swift " + flags.command() + " needs --model",
              "e.g. --model configs/models/qwen3-tiny --init_strategy normal");
  const std::string train_type = flags.str("train_type");
  SWIFT_CHECK(train_type == "full" || train_type == "lora" || train_type == "qlora", UsageError,
              "--train_type " + train_type + " is not available", "use full, lora or qlora");
  job.lora = train_type == "lora" || train_type == "qlora";
  // QLoRA: the frozen base quantized (bitsandbytes' formats), LoRA on top. --train_type qlora alone means NF4.
  const auto quantization = quant_config_from_flags(flags, train_type == "qlora" ? 4 : 0);
  SWIFT_CHECK(!quantization || job.lora, UsageError,
              "--quant_bits " + std::to_string(quantization ? quantization->bits : 0) +
                  " with --train_type full: quantized weights cannot be trained",
              "use --train_type lora (QLoRA: LoRA on the quantized base) or drop --quant_method/--quant_bits");
  SWIFT_CHECK(!flags.list("dataset").empty() || !flags.list("cached_dataset").empty(), UsageError,
              "swift " + flags.command() + " needs --dataset",
              "e.g. --dataset data.jsonl or --dataset swift/self-cognition --model_name Tiny --model_author Me");

  model::LoadOptions load;
  load.device = parse_device(setup.device);
  load.init_strategy = flags.str("init_strategy");
  load.seed = static_cast<uint64_t>(flags.integer("seed"));
  // Full fine-tuning keeps fp32 master weights: --torch_dtype bfloat16 then means bf16 compute (autocast) and
  // bf16 checkpoints. LoRA keeps the frozen base in --torch_dtype and the adapter in --lora_dtype (fp32).
  // --bf16/--fp16 (transformers' mixed-precision switches) choose the compute dtype over whatever was loaded.
  auto dtype = parse_dtype(flags.str("torch_dtype"));
  const bool bf16 = flags.boolean("bf16"), fp16 = flags.boolean("fp16");
  SWIFT_CHECK(!(bf16 && fp16), UsageError, "--bf16 and --fp16 are both true", "choose one mixed-precision dtype");
  std::optional<c10::ScalarType> mixed;
  if (bf16 || fp16) {
    mixed = bf16 ? c10::kBFloat16 : c10::kHalf;
    SWIFT_CHECK(!dtype || *dtype == *mixed || *dtype == c10::kFloat, UsageError,
                std::string("--") + (bf16 ? "bf16" : "fp16") + " true contradicts --torch_dtype " + flags.str("torch_dtype"),
                "drop one of them, or load float32 weights and compute in the mixed dtype");
    if (!dtype) dtype = mixed;
  }
  load.dtype = job.lora ? dtype : std::optional<c10::ScalarType>(c10::kFloat);
  load.quantize = quantization;
  // DoRA's magnitudes start from the whole base weights: with it every rank loads the whole model first.
  if (placement && !flags.boolean("use_dora")) load.placement = placement;
  job.quantization = quantization;
  if (!job.lora && dtype && (*dtype == c10::kBFloat16 || *dtype == c10::kHalf)) {
    job.autocast = *dtype;
    job.save_dtype = *dtype;
  }
  if (mixed) job.autocast = mixed;  // fp32 weights (full, or a LoRA base loaded in float32) computed in bf16/fp16
  // float16's narrow range underflows small gradients: scale the loss (full and LoRA over an fp16 base).
  if ((dtype && *dtype == c10::kHalf) || fp16) job.scaler.emplace(train::GradScalerOptions{}, load.device);
  const fs::path resume = flags.str("resume_from_checkpoint");
  if (!resume.empty()) {
    SWIFT_CHECK(fs::is_directory(resume), DataError, "--resume_from_checkpoint " + resume.string() + " is not a folder",
                "give a checkpoint-<step> folder of an earlier run");
    const bool adapter = fs::exists(resume / "adapter_config.json");
    SWIFT_CHECK(adapter == job.lora, UsageError,
                "--resume_from_checkpoint " + resume.string() + " holds a " + (adapter ? "LoRA adapter" : "full model") +
                    " but --train_type is " + train_type,
                "resume with the --train_type of the run that wrote it");
  }
  // A full checkpoint is a complete model folder: its weights replace --model's.
  const double memory_before_loading = memory_high_water_bytes(load.device);
  job.model = model::load_model(!resume.empty() && !job.lora ? resume : job.model_dir, load);
  job.load = load;
  job.load.placement = nullptr;  // for models loaded besides (a reference): whole
  if (job.group) {  // read as planned (ZeRO-3)? Then the parameters of other ranks are shape-only here
    const auto params = job.model->parameters();
    log_memory_high_water(job, memory_before_loading, std::any_of(params.begin(), params.end(), [](const at::Tensor& p) { return !model::holds_values(p); }));
  }
  if (!job.quantization && quant::quantized_bytes(job.model).second > 0) {  // a folder saved quantized (*-bnb-4bit)
    SWIFT_CHECK(job.lora, UsageError,
                job.model_dir.string() + " is saved quantized (bitsandbytes): its quantized weights cannot be trained",
                "use --train_type lora (QLoRA on it), or the model's unquantized folder for full fine-tuning");
    job.quantization = quant::read_quantization_config(job.model->config().raw, job.model_dir.string() + "/config.json");
  }
  job.tokenizer = with_context("loading the tokenizer of " + job.model_dir.string(),
                               [&] { return tokenizer::Tokenizer::load(job.model_dir); });

  auto chat = training_template(flags, *job.tokenizer, job.model_dir, job.model->config().model_type);
  job.template_name = chat.name;
  job.chat = std::move(chat.chat);
  job.pad_id = job.tokenizer->pad_id().value_or(job.tokenizer->eos_id().value_or(0));
  const ModelChange change = hooks.prepare_model ? hooks.prepare_model(job.model, flags, job.pad_id) : ModelChange{};

  if (job.lora) {
    job.lora_config.r = flags.integer("lora_rank");
    job.lora_config.lora_alpha = flags.number("lora_alpha");
    job.lora_config.lora_dropout = flags.number("lora_dropout");
    job.lora_config.target_modules = flags.list("target_modules");
    if (!flags.str("target_regex").empty()) job.lora_config.target_regex = flags.str("target_regex");
    job.lora_config.modules_to_save = flags.list("modules_to_save");
    for (const auto& m : change.modules_to_save)
      if (std::find(job.lora_config.modules_to_save.begin(), job.lora_config.modules_to_save.end(), m) ==
          job.lora_config.modules_to_save.end())
        job.lora_config.modules_to_save.push_back(m);
    if (!change.task_type.empty()) job.lora_config.task_type = change.task_type;
    job.lora_config.use_rslora = flags.boolean("use_rslora");
    job.lora_config.use_dora = flags.boolean("use_dora");
    const std::string init = flags.str("init_weights");
    SWIFT_CHECK(init == "true" || init == "gaussian" || init == "false", UsageError,
                "--init_weights " + init + " is not supported", "use true (B = 0), gaussian or false");
    job.lora_config.init_weights = init == "true"       ? tuners::LoraInit::kDefault
                                   : init == "gaussian" ? tuners::LoraInit::kGaussian
                                                        : tuners::LoraInit::kRandom;
    job.lora_config.base_model_name_or_path = fs::absolute(job.model_dir).string();
    // Trainable weights stay fp32 whatever the base (as PEFT's autocast), unless --lora_dtype says otherwise.
    const auto lora_dtype = parse_dtype(flags.str("lora_dtype"), "--lora_dtype");
    job.lora_config.lora_dtype = lora_dtype.value_or(c10::kFloat);
    if (resume.empty()) {
      const auto wrapped = tuners::apply_lora(job.model, job.lora_config, static_cast<uint64_t>(flags.integer("seed")));
      log_info(job.lora_config.use_dora ? "DoRA" : "LoRA", " r=", job.lora_config.r, " alpha=", job.lora_config.lora_alpha,
               " on ", wrapped.size(), " modules");
    } else {  // the checkpoint's adapter, config and weights
      job.lora_config = tuners::load_adapter(job.model, resume, lora_dtype.value_or(c10::kFloat));
      job.lora_config.lora_dtype = lora_dtype.value_or(c10::kFloat);
      log_info(job.lora_config.use_dora ? "DoRA" : "LoRA", " from ", resume.string(), ": r=", job.lora_config.r, " on ", tuners::lora_modules(job.model).size(), " modules");
    }
  }
  int64_t n_trainable = 0, n_total = 0;
  for (auto& p : job.model->parameters()) {
    n_total += p.numel();
    if (p.requires_grad()) n_trainable += p.numel();
  }
  log_info("parameters: ", n_trainable, " trainable of ", n_total, " (", 100.0 * n_trainable / n_total, "%)");

  // Data: rows encoded up front (in memory), read from --cached_dataset, encoded as drawn (--lazy_tokenize),
  // or streamed (--streaming). Validation data is always encoded up front.
  const EncodeSettings enc = encode_settings(flags, job.model->config().max_position_embeddings);
  job.data_seed = enc.data_seed;
  const uint64_t data_seed = enc.data_seed;
  const int64_t max_length = enc.max_length;
  const auto truncation = enc.truncation;
  const int num_proc = enc.num_proc;
  // The data is drawn in global micro-batches (every rank's samples of one micro-step); each rank trains on its
  // slice (rank_slice), so all ranks draw the same sequence from the same seed.
  const int64_t batch_size = std::max<int64_t>(1, flags.integer("per_device_train_batch_size")) * job.world_size;
  const bool lazy = flags.boolean("lazy_tokenize"), streaming = flags.boolean("streaming");
  const auto cached = flags.list("cached_dataset"), cached_val = flags.list("cached_val_dataset");
  SWIFT_CHECK(!(lazy && streaming), UsageError, "--lazy_tokenize and --streaming do not go together (as ms-swift)",
              "--streaming already encodes rows as they are drawn: drop --lazy_tokenize");
  SWIFT_CHECK(!flags.boolean("packing") || (!lazy && !streaming), UsageError,
              std::string("--packing needs every sample encoded up front, so not --") + (lazy ? "lazy_tokenize" : "streaming"),
              "drop --packing, or encode up front (--lazy_tokenize false --streaming false)");
  SWIFT_CHECK(cached.empty() || (!lazy && !streaming), UsageError,
              std::string("--cached_dataset is already tokenised; --") + (lazy ? "lazy_tokenize" : "streaming") + " does not apply",
              "drop --lazy_tokenize/--streaming, or train from --dataset");
  SWIFT_CHECK(!streaming || flags.integer("max_steps") > 0, UsageError, "--streaming needs --max_steps",
              "a stream's length is not known in advance: give e.g. --max_steps 1000");

  std::vector<json> rows, val_rows;
  if (streaming) {
    if (flags.number("split_dataset_ratio") > 0)
      log_info("--streaming: --split_dataset_ratio is ignored (as ms-swift); give --val_dataset for validation");
    if (!flags.list("val_dataset").empty())
      val_rows = data::load_datasets(flags.list("val_dataset"), data_seed, "--val_dataset", recipes::dataset_options(flags, data_seed));
  } else {
    auto loaded = load_train_rows(flags, data_seed);
    rows = std::move(loaded.train);
    val_rows = std::move(loaded.val);
    if (prepare_rows) {
      prepare_rows(rows, data_seed, "the training rows");
      prepare_rows(val_rows, data_seed, "the validation rows (--val_dataset, --split_dataset_ratio)");
    }
  }

  // A cache made with another tokenizer, template, --loss_scale or --system would train on wrong tokens.
  train::CacheInfo expected;
  if (!cached.empty() || !cached_val.empty()) expected = cache_identity(flags, job.template_name, *job.tokenizer);
  auto read_cached = [&](const std::vector<std::string>& dirs, const std::string& split, const std::string& flag) {
    std::vector<train::Example> out;
    for (const auto& dir : dirs) {
      auto cache = train::read_dataset_cache(dir, split, flag);
      train::check_cache_fits(cache, expected, flag);
      size_t too_long = 0;
      for (auto& e : cache.examples) {
        if (static_cast<int64_t>(e.input_ids.size()) > max_length) {
          ++too_long;  // as ms-swift, a cache encoded with a larger --max_length is filtered
          continue;
        }
        out.push_back(std::move(e));
      }
      log_info(flag, " ", cache.dir.string(), ": ", cache.examples.size() - too_long, " examples",
               too_long ? " (" + std::to_string(too_long) + " longer than --max_length left out)" : std::string(),
               "; encoded from ", cache.info.encode_report);
    }
    return out;
  };

  if (!val_rows.empty()) {
    train::EncodeReport val_report;
    job.val = train::encode_rows(val_rows, *job.chat, max_length, truncation, val_report, "--val_dataset", num_proc);
    log_info("validation data: ", val_report.summary());
  }
  if (!cached_val.empty()) {
    auto more = read_cached(cached_val, "val", "--cached_val_dataset");
    job.val.insert(job.val.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }

  if (streaming) {
    train::StreamingOptions options;
    options.max_length = max_length;
    options.truncation = truncation;
    options.batch_size = batch_size;
    options.seed = data_seed;
    options.shuffle_buffer_size = flags.integer("shuffle_buffer_size");
    auto stream = std::make_unique<data::RowStream>(flags.list("dataset"), recipes::dataset_options(flags, data_seed), "--dataset");
    job.train = std::make_unique<train::StreamingData>(std::move(stream), *job.chat, options);
    log_info("train data: streamed from --dataset (shuffle buffer ", std::max<int64_t>(1, options.shuffle_buffer_size),
             " rows), encoded as drawn");
  } else if (lazy) {
    SWIFT_CHECK(!rows.empty(), DataError, "--dataset has no rows", "check the files");
    log_info("train data: ", rows.size(), " rows, encoded as their batch is drawn (--lazy_tokenize)");
    job.train = std::make_unique<train::LazyData>(std::move(rows), *job.chat, max_length, truncation, batch_size, data_seed);
  } else {
    std::vector<train::Example> examples;
    if (!rows.empty()) {
      train::EncodeReport report;
      examples = train::encode_rows(rows, *job.chat, max_length, truncation, report, "--dataset", num_proc);
      log_info("train data: ", report.summary());
    }
    if (!cached.empty()) {
      auto more = read_cached(cached, "train", "--cached_dataset");
      if (flags.list("dataset").empty()) {  // --split_dataset_ratio then holds out cached examples
        auto held_out = split_off_validation(more, flags.number("split_dataset_ratio"), data_seed);
        if (!held_out.empty()) log_info("--split_dataset_ratio: ", held_out.size(), " cached examples held out for validation");
        job.val.insert(job.val.end(), std::make_move_iterator(held_out.begin()), std::make_move_iterator(held_out.end()));
      }
      examples.insert(examples.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    }
    SWIFT_CHECK(!examples.empty(), DataError, "no training example is left", "check --dataset / --cached_dataset and --max_length");
    if (flags.boolean("packing")) {
      int64_t packing_length = flags.integer("packing_length");
      if (packing_length <= 0) packing_length = max_length;
      const size_t samples = examples.size();
      examples = train::pack_examples(examples, packing_length);
      log_info("packing: packed ", samples, " samples into ", examples.size(), " rows of at most ", packing_length,
               " tokens");
      if (!job.val.empty()) {
        const size_t val_samples = job.val.size();
        job.val = train::pack_examples(job.val, packing_length);
        log_info("packing: packed ", val_samples, " validation samples into ", job.val.size(), " rows");
      }
    }
    for (const auto& e : examples) job.longest_example = std::max<int64_t>(job.longest_example, e.input_ids.size());
    job.train = std::make_unique<train::InMemoryData>(std::move(examples), batch_size, data_seed);
  }
  return job;
}

// Flags of ms-swift command lines that swift accepts but that change nothing, and what swift does instead.
void log_flags_without_effect(const cli::Flags& flags) {
  static const std::vector<std::pair<std::string, std::string>> kWhy = {
      {"dataloader_num_workers", "batches are assembled in-process; --dataset_num_proc sets the tokenising threads"},
      {"attn_impl", "attention is LibTorch's scaled_dot_product_attention (fused flash/memory-efficient kernels)"},
      {"use_hf", "models and datasets are local paths or swift's built-ins; nothing is downloaded"},
      {"report_to", "TensorBoard events are always written under the run folder's runs/"},
  };
  for (const auto& [name, why] : kWhy)
    if (flags.given(name)) log_info("--", name, " has no effect in swift: ", why);
}

// ZeRO-3's owners by parameter name. The loaded parameters get theirs when the loader lists them, so each rank
// reads only its own share from the files; those made after loading (LoRA, a score head) theirs afterwards, each
// to the least-loaded rank. The same on every rank.
class Zero3Owners {
 public:
  explicit Zero3Owners(int world_size) : partition_(world_size) {}
  // The loader's plan for this rank: its own parameters on the device, or in CPU RAM with offload_param; those
  // the command removes after loading (`removed`) are read by no rank.
  model::PlacementPlan plan(int rank, bool offload_param, std::vector<std::string> removed) {
    return [this, rank, offload_param, removed](const std::vector<model::ParameterInfo>& infos) {
      auto is_removed = [&](const std::string& name) { return std::find(removed.begin(), removed.end(), name) != removed.end(); };
      std::vector<int64_t> bytes;
      for (const auto& info : infos) bytes.push_back(is_removed(info.name) ? 0 : info.bytes);
      const dist::ParameterPartition loaded(bytes, partition_.world_size());  // largest first, as ZeRO-1/2
      std::vector<model::Placement> where;
      for (size_t i = 0; i < infos.size(); ++i) {
        if (is_removed(infos[i].name)) {
          where.push_back(model::Placement::kElsewhere);
          continue;
        }
        const int owner = loaded.owner(i);
        partition_.charge(owner, infos[i].bytes);
        loaded_[infos[i].name] = {owner, infos[i].bytes};
        where.push_back(owner != rank     ? model::Placement::kElsewhere
                        : offload_param   ? model::Placement::kHost
                                          : model::Placement::kDevice);
      }
      return where;
    };
  }
  // Every parameter's owner (names and bytes in model order): the loaded ones keep theirs, the others go one by one
  // to the least-loaded rank. Loaded parameters the model no longer has (a reward model's lm_head) are taken off
  // their owner's load first. Without a plan (a model loaded whole) all of them, largest first.
  std::vector<int> owners(const std::vector<std::string>& names, const std::vector<int64_t>& bytes) {
    if (loaded_.empty()) return dist::ParameterPartition(bytes, partition_.world_size()).owners();
    const std::set<std::string> present(names.begin(), names.end());
    for (const auto& [name, owner_bytes] : loaded_)
      if (!present.count(name)) partition_.charge(owner_bytes.first, -owner_bytes.second);
    std::vector<int> out;
    for (size_t i = 0; i < names.size(); ++i) {
      const auto it = loaded_.find(names[i]);
      out.push_back(it != loaded_.end() ? it->second.first : partition_.assign(bytes[i]));
    }
    return out;
  }

 private:
  dist::ParameterPartition partition_;
  std::map<std::string, std::pair<int, int64_t>> loaded_;  // name -> (owner, bytes) as the loader read them
};

// What a checkpoint save brings to rank 0 under ZeRO-3, one decoder layer (or one outer parameter) at a time:
// every parameter of a full model, the trainable ones (the adapter, --modules_to_save) for LoRA.
std::vector<std::vector<at::Tensor>> save_chunks(const std::vector<std::string>& names,
                                                 const std::vector<at::Tensor>& params, bool lora) {
  std::vector<std::vector<at::Tensor>> chunks;
  std::string current;
  for (size_t i = 0; i < names.size(); ++i) {
    if (lora && !params[i].requires_grad()) continue;
    const std::string layer = decoder_layer_of(names[i]);
    const std::string& key = layer.empty() ? names[i] : layer;
    if (chunks.empty() || key != current) chunks.emplace_back();
    current = key;
    chunks.back().push_back(params[i]);
  }
  return chunks;
}

// Installs ZeRO-3's parameter sharding for the model's layers for as long as it lives.
struct ShardingInstalled {
  explicit ShardingInstalled(model::ParamSharding* sharding) { model::set_param_sharding(sharding); }
  ~ShardingInstalled() { model::set_param_sharding(nullptr); }
  ShardingInstalled(const ShardingInstalled&) = delete;
  ShardingInstalled& operator=(const ShardingInstalled&) = delete;
};

}  // namespace

int run_training(const std::string& command, const std::vector<cli::FlagSpec>& specs,
                 const std::vector<std::string>& args, bool pretrain, const TrainingHooks& hooks) {
  const auto flags = cli::parse_flags(command, specs, args);
  auto setup = apply_common_flags(flags);
  // Several ranks: connect first (a rendezvous problem shows before minutes of loading); on CUDA each rank
  // takes the GPU of its LOCAL_RANK.
  const dist::DistEnv dist_env = dist::read_dist_env();
  std::unique_ptr<dist::ProcessGroup> group;
  if (dist_env.distributed()) {
    init_logging(flags.str("log_level"), dist_env.rank, dist_env.world_size);
    c10::Device device = parse_device(setup.device);
    if (device.is_cuda()) {  // one GPU per local rank; with Slurm's per-task binding each rank sees only its own
      const int visible = static_cast<int>(torch::cuda::device_count());
      setup.device = "cuda:" + std::to_string(dist_env.local_rank % std::max(1, visible));
      device = parse_device(setup.device);
    }
    dist::GroupOptions options;
    options.timeout = std::chrono::seconds(std::max<int64_t>(1, flags.integer("ddp_timeout")));
    options.backend = flags.str("ddp_backend");
    group = dist::ProcessGroup::connect(dist_env, device, options);
  }
  log_flags_without_effect(flags);
  // LibTorch seeds its default generator from the OS; dropout draws from it, so seed it (as transformers'
  // set_seed does, the same on every rank) or two runs of the same command differ.
  torch::manual_seed(static_cast<uint64_t>(flags.integer("seed")));
  const dist::ZeroConfig zero = dist::parse_deepspeed(dist::sharding_spec(flags.str("deepspeed"), flags.str("fsdp")));  // bad values before minutes of loading
  // ZeRO-3 over several ranks: each rank reads only the parameters it owns, so none ever holds the whole model.
  std::optional<Zero3Owners> zero3_owners;
  model::PlacementPlan placement;
  if (zero.stage == 3 && group) {
    zero3_owners.emplace(group->world_size());
    placement = zero3_owners->plan(group->rank(), zero.offload_param, hooks.removed_parameters);
  }
  Job job = build_job(flags, pretrain, setup, std::move(group), hooks, placement);
  job.local_world_size = dist_env.local_world_size;
  job.zero = zero;
  if (job.zero.stage > 0 && !job.group) {
    log_info("--deepspeed ", job.zero.source, ": one process has nothing to shard; training without ZeRO");
    job.zero.stage = 0;
  }
  const bool cuda = job.model->device().is_cuda();
  if (job.zero.offload_param && job.zero.stage != 3) {  // as DeepSpeed: parameters are offloaded by ZeRO-3 only
    log_info("--deepspeed ", job.zero.source, ": offload_param applies to ZeRO-3 over several ranks; the parameters stay ",
             cuda ? "on the GPU" : "where they are");
    job.zero.offload_param = false;
  }
  if (job.zero.offload_param) {
    log_info("ZeRO-3 offload_param: each rank keeps its parameters in CPU RAM between uses",
             cuda ? " (pinned), copied to the GPU for each gather"
                  : "; on a CPU run that is the memory they would be in anyway (the GPU's path, nothing saved)");
    if (cuda && !job.zero.offload_optimizer) {
      log_info("offload_param: the AdamW state goes to CPU RAM too, where the parameters are updated");
      job.zero.offload_optimizer = true;
    }
  }
  if (job.zero.offload_optimizer && !cuda)
    log_info("--deepspeed ", job.zero.source, ": offload_optimizer has no effect on a CPU run: the optimizer runs there already");
  // ZeRO-Offload on a GPU: the AdamW moments and fp32 master weights in CPU RAM (train::AdamW::offload_to).
  const bool offload_optimizer = job.zero.offload_optimizer && cuda;
  SWIFT_CHECK(job.zero.stage < 3 || flags.boolean("gradient_checkpointing"), UsageError,
              "--deepspeed " + job.zero.source + ": ZeRO-3 needs gradient checkpointing (layers are gathered again "
              "for their recomputation in backward)",
              "drop --gradient_checkpointing false");
  job.model->set_gradient_checkpointing(flags.boolean("gradient_checkpointing"));
  job.objective = hooks.make_objective(ObjectiveContext{flags, job.model, job.lora, job.model_dir, job.load, job.zero.stage});

  // Steps and schedule.
  const int64_t batch_size = std::max<int64_t>(1, flags.integer("per_device_train_batch_size"));
  int64_t accumulation = flags.integer("gradient_accumulation_steps");
  if (accumulation <= 0) {  // as ms-swift: a global batch of about 16 samples
    const int64_t per_step = batch_size * job.world_size;
    accumulation = std::max<int64_t>(1, (16 + per_step - 1) / per_step);
  }
  train::TrainData& data = *job.train;
  // A stream has no known length: as transformers with an iterable dataset, an epoch is then --max_steps.
  const auto batches_per_epoch = data.batches_per_epoch();
  // As transformers 5's Trainer: an epoch has ceil(micro-batches / accumulation) steps and its last step takes the
  // micro-batches that are left, so no optimizer step spans two epochs.
  const int64_t steps_per_epoch = std::max<int64_t>(
      1, batches_per_epoch ? (*batches_per_epoch + accumulation - 1) / accumulation : flags.integer("max_steps"));
  auto micro_batches_in_step = [&](int64_t step) {
    if (!batches_per_epoch) return accumulation;
    return std::min(accumulation, *batches_per_epoch - (step % steps_per_epoch) * accumulation);
  };
  int64_t total_steps = flags.integer("max_steps");
  if (total_steps <= 0) total_steps = std::max<int64_t>(1, std::llround(flags.number("num_train_epochs") * steps_per_epoch));
  const double lr = flags.given("learning_rate") ? flags.number("learning_rate") : (job.lora ? 1e-4 : 1e-5);
  train::LrScheduleOptions schedule_options;
  schedule_options.type = train::parse_lr_scheduler_type(flags.str("lr_scheduler_type"));
  schedule_options.learning_rate = lr;
  schedule_options.total_steps = total_steps;
  schedule_options.warmup_steps =
      train::resolve_warmup_steps(flags.number("warmup_steps"), flags.number("warmup_ratio"), total_steps);
  if (schedule_options.type == train::LrSchedulerType::kCosineWithMinLr)
    schedule_options.min_lr_rate = flags.given("min_lr_rate") ? flags.number("min_lr_rate") : 0.1;
  const train::LrSchedule schedule(schedule_options);
  // The trainable parameters in model order (the same list on every rank). With ZeRO each belongs to one rank,
  // whose optimizer alone holds its state.
  std::vector<std::string> names;
  std::vector<at::Tensor> params;
  for (auto& item : job.model->named_parameters()) {
    if (!item.value().requires_grad()) continue;
    names.push_back(item.key());
    params.push_back(item.value());
  }
  std::vector<int> owners;  // ZeRO: the rank owning each partitioned parameter
  std::set<std::string> owned, elsewhere;
  std::vector<int> trainable_owners;
  // ZeRO-3 partitions every parameter (frozen ones are held by one rank too); 1 and 2 the trainable ones.
  std::vector<at::Tensor> all_params;
  std::vector<std::string> all_names;
  for (auto& item : job.model->named_parameters()) {
    all_names.push_back(item.key());
    all_params.push_back(item.value());
  }
  for (const auto& p : all_params) job.full_parameter_bytes += p.numel() * static_cast<int64_t>(p.element_size());
  for (const auto& p : params) job.full_trainable_bytes += p.numel() * static_cast<int64_t>(p.element_size());
  if (job.zero.stage > 0) {
    const auto& partitioned = job.zero.stage == 3 ? all_params : params;
    const auto& partitioned_names = job.zero.stage == 3 ? all_names : names;
    std::vector<int64_t> bytes;
    for (const auto& p : partitioned) bytes.push_back(p.numel() * static_cast<int64_t>(p.element_size()));
    owners = zero3_owners ? zero3_owners->owners(partitioned_names, bytes)  // as the loader read, and new ones
                          : dist::ParameterPartition(bytes, job.world_size).owners();
    std::map<std::string, int> owner_of;
    for (size_t i = 0; i < partitioned.size(); ++i) owner_of[partitioned_names[i]] = owners[i];
    for (const auto& n : names) {
      trainable_owners.push_back(owner_of.at(n));
      (owner_of.at(n) == job.rank ? owned : elsewhere).insert(n);
    }
    log_zero_shares(job, owners, bytes);
  }
  const bool sharded = job.zero.stage > 0;
  auto optimizer = make_optimizer(job.model, flags, lr, sharded ? &owned : nullptr);
  if (offload_optimizer) {
    optimizer->offload_to(c10::Device(c10::kCPU));
    log_info("optimizer offload: AdamW state and fp32 master weights in CPU RAM, updated there each step");
  }
  log_memory_estimate(job, flags, params, batch_size);

  // Run folder: made by rank 0, whose path every rank learns (checkpoints are rank 0's to write).
  fs::path output_dir = flags.str("output_dir");
  if (output_dir.empty()) output_dir = fs::path("output") / fs::absolute(job.model_dir).lexically_normal().filename();
  if (job.main_rank()) job.run_dir = train::create_run_dir(output_dir, flags.boolean("add_version"));
  if (job.group) job.run_dir = job.group->share("run_dir", job.run_dir.string());
  std::optional<train::JsonlLog> log;
  std::optional<train::TensorBoardWriter> tensorboard;
  if (job.main_rank()) {
    io::write_json_file(job.run_dir / "args.json", run_args(job, flags));
    log.emplace(job.run_dir / "logging.jsonl");
    tensorboard.emplace(job.run_dir / "runs");
  }
  train::PlotSeries loss_curve{"train/loss", {}, {}, std::nullopt, 0.9};
  train::PlotSeries eval_curve{"eval/loss", {}, {}, std::nullopt, 0.0};
  log_info("run folder ", job.run_dir.string(), ": ", total_steps, " steps of ", accumulation, " x ", batch_size,
           " samples", job.world_size > 1 ? " x " + std::to_string(job.world_size) + " ranks" : std::string(), ", lr ", lr, " (", flags.str("lr_scheduler_type"), ", ", schedule_options.warmup_steps, " warm-up)");

  int64_t start_step = 0;
  const fs::path resume = flags.str("resume_from_checkpoint");
  if (!resume.empty() && !flags.boolean("resume_only_model")) {
    const fs::path state_path = resume / "trainer_state.json";
    const auto optimizer_files = dist::optimizer_state_files(resume);
    SWIFT_CHECK(fs::exists(state_path) && !optimizer_files.empty(), DataError,
                resume.string() + " has no trainer state (saved with --save_only_model?)",
                "pass --resume_only_model true to start from its weights at step 0");
    const json state = io::read_json_file(state_path);
    start_step = state.at("global_step").get<int64_t>();
    SWIFT_CHECK(start_step < total_steps, UsageError,
                "the checkpoint is at step " + std::to_string(start_step) + " of " + std::to_string(total_steps),
                "raise --max_steps / --num_train_epochs to train further");
    // Any layout loads: one file (1 rank, DDP) or a shard per rank (ZeRO), at this world size or another.
    optimizer->load(optimizer_files, elsewhere);
    if (job.scaler && state.contains("loss_scale"))
      job.scaler->restore(at::tensor(state.at("loss_scale").get<double>(), at::kFloat),
                          at::tensor(state.at("loss_scale_growth_tracker").get<int>(), at::kInt));
    if (fs::exists(resume / "rng_state.pt")) {
      at::Tensor rng;
      torch::load(rng, (resume / "rng_state.pt").string());
      at::Generator generator = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(generator.mutex());
      generator.set_state(rng);
    }
    const int64_t global_micro = batch_size * job.world_size;
    if (state.contains("global_micro_batch") && state["global_micro_batch"].get<int64_t>() != global_micro)
      log_warn("the checkpoint was trained with ", state["global_micro_batch"].get<int64_t>(),
               " samples per micro-step (per-device batch x ranks), this run uses ", global_micro,
               ": the data continues from the same sample, but epochs and steps no longer line up with the run that "
               "wrote it");
    if (!flags.boolean("ignore_data_skip")) data.restore(train::data_state_of(state));
    log_info("resumed from ", resume.string(), " at step ", start_step);
  }

  const int64_t logging_steps = std::max<int64_t>(1, flags.integer("logging_steps"));
  const int64_t save_steps = std::max<int64_t>(1, flags.integer("save_steps"));
  const int64_t eval_steps = flags.integer("eval_steps") > 0 ? flags.integer("eval_steps") : save_steps;
  const double max_grad_norm = flags.number("max_grad_norm");
  std::deque<fs::path> saved;

  // Data parallel: every rank starts from rank 0's trainable weights and sums gradients each step (ZeRO-2:
  // into their owners after each micro-batch).
  std::optional<dist::GradientSync> sync;
  std::optional<ShardingInstalled> sharding_installed;
  if (job.group && job.zero.stage == 3) {
    // The model gathers the decoder layers, and the embedding and head where gathered_around_use says so, around
    // each of their operations, and reduces their gradients inside the backward; the loop gathers the rest (final
    // norm, a tied embedding, a score head, adapters on the head) for each micro-batch and reduces their
    // gradients here.
    const std::vector<at::Tensor> per_use = gathered_around_use(job.model);
    auto around_use = [&](const at::Tensor& p) {
      return std::any_of(per_use.begin(), per_use.end(), [&](const at::Tensor& u) { return u.is_same(p); });
    };
    std::vector<at::Tensor> outer_trainable;
    std::vector<int> outer_owners;
    for (size_t i = 0; i < names.size(); ++i) {
      if (!decoder_layer_of(names[i]).empty() || around_use(params[i])) continue;
      outer_trainable.push_back(params[i]);
      outer_owners.push_back(trainable_owners[i]);
    }
    for (size_t i = 0; i < all_names.size(); ++i)
      if (decoder_layer_of(all_names[i]).empty() && !around_use(all_params[i])) job.outer_params.push_back(all_params[i]);
    dist::Zero3Options zero3_options;
    zero3_options.device = job.model->device();
    zero3_options.offload_param = job.zero.offload_param;
    job.model->set_compute_device(zero3_options.device);  // whatever rests in CPU RAM
    job.zero3 = std::make_unique<dist::Zero3Sharding>(*job.group, all_params, owners, zero3_options);
    job.zero3->gather_around_use(per_use);
    sharding_installed.emplace(job.zero3.get());
    // The outer gradients' exchange buckets by shape and device, so it is built while those parameters are whole
    // on the device on every rank. No start-up broadcast: every use gathers the owners' values.
    job.zero3->gather(job.outer_params);
    sync.emplace(*job.group, outer_trainable, job.zero.reduce_bucket_bytes);
    sync->set_owners(outer_owners);
    job.zero3->release_all();
    job.save_chunks = save_chunks(all_names, all_params, job.lora);
  } else if (job.group) {
    sync.emplace(*job.group, params, job.zero.reduce_bucket_bytes);
    if (sharded) sync->set_owners(trainable_owners);
    sync->broadcast_parameters();
  }

  if (job.group)
    log_info("data parallel: ", job.world_size, " ranks, ", job.zero.stage >= 2 ? "gradients reduced to their owners" : "gradients summed",
             job.zero.stage < 3 ? " during the backward" : " after each micro-batch",
             " in ", sync->buckets(), " bucket(s) per step", job.zero.stage > 0 ? ", ZeRO-" + std::to_string(job.zero.stage) : std::string(),
             job.zero.stage == 3 ? " (the decoder layers', embedding's and head's parameters gathered around each use, their gradients reduced in the backward)" : "");

  job.model->train();
  Progress progress("train", total_steps - start_step, job.main_rank());
  const auto start = std::chrono::steady_clock::now();
  MetricWindow window(job.objective->metric_names());
  double window_grad_norm = 0;
  int64_t window_steps = 0;
  for (int64_t step = start_step; step < total_steps; ++step) {
    // One optimizer step: `accumulation` micro-batches (fewer at the end of an epoch), the loss normalised by
    // their units (sft: label tokens). With several ranks the normaliser counts every rank's micro-batches: the
    // summed gradients are then those of one process on the global batch.
    std::vector<std::optional<train::Batch>> micro;  // empty where a short last batch left this rank nothing
    std::vector<bool> stand_in;  // ZeRO-3: such a rank runs another rank's first sample with weight 0 instead,
                                 // since every rank must take part in each layer's gather and reduce
    double step_units = 0;
    const int64_t n_micro = micro_batches_in_step(step);
    for (int64_t k = 0; k < n_micro; ++k) {
      const auto global = data.next_micro_batch();
      const auto items = rank_slice(global, job.rank, job.world_size);
      micro.emplace_back();
      stand_in.push_back(items.empty() && job.zero3);
      if (items.empty() && !job.zero3) continue;
      micro.back() = job.objective->collate(items.empty() ? std::vector<const train::Example*>{global.front()} : items, job.pad_id);
      if (!stand_in.back()) step_units += job.objective->units(*micro.back());
    }
    if (job.group) step_units = job.group->sum({step_units})[0];
    for (size_t k = 0; k < micro.size(); ++k) {
      // ZeRO-2 reduces after every micro-batch, so every rank takes part even without samples of its own.
      if (!micro[k]) {
        if (job.zero.stage == 2) sync->reduce_gradients_to_owners();
        continue;
      }
      const train::Batch& b = *micro[k];
      if (job.zero3) {
        job.zero3->begin_micro_batch();
        job.zero3->gather(job.outer_params);
      }
      MicroBatchResult result;
      {
        model::AutocastScope autocast(job.model->device().type(), job.autocast);
        result = job.objective->compute(job.model, b);
      }
      auto loss = result.loss / std::max(step_units, 1e-12);
      if (stand_in[k]) loss = loss * 0.0;  // takes part in the collectives, changes no gradient
      // The gradient exchange runs inside the backward that completes it: the last micro-batch's for DDP and
      // ZeRO-1, every micro-batch's for ZeRO-2 (ZeRO-3 reduces its layers' gradients itself).
      if (sync && job.zero.stage < 2 && k + 1 == micro.size())
        sync->overlap_next_backward(dist::GradientSync::Exchange::kAllReduce);
      if (sync && job.zero.stage == 2) sync->overlap_next_backward(dist::GradientSync::Exchange::kReduceToOwners);
      (job.scaler ? job.scaler->scale(loss) : loss).backward();
      if (!stand_in[k]) window.add(result.metrics);
      if (job.zero.stage >= 2) sync->reduce_gradients_to_owners();
      if (job.zero3) {
        job.zero3->release(job.outer_params);
        job.zero3->end_micro_batch();
      }
    }
    if (sync && job.zero.stage < 2) {
      sync->all_reduce_gradients();
    }
    if (sync && job.zero.stage < 3 && step == start_step) {
      log_info("gradient buckets started during the backward: ", sync->overlapped_buckets(), " of ", sync->buckets());
      log_gradient_peak(job, *sync);
    }
    // fp16: gradients back to their true size before clipping; an overflow skips the update (as the Trainer),
    // the schedule moves on and the scale backs off. Summed gradients are the same on every rank, so every
    // rank sees the same overflow and norm; under ZeRO-2 each rank holds its own shard, so the overflow and
    // the squared norm are combined over the ranks.
    bool overflow = job.scaler && job.scaler->unscale(params);
    double grad_norm = 0;
    if (job.zero.stage >= 2) {
      overflow = job.group->sum({overflow ? 1.0 : 0.0})[0] > 0;
      if (job.scaler) job.scaler->set_overflow(overflow);
      const double local = train::grad_norm(params);
      grad_norm = std::sqrt(job.group->sum({local * local})[0]);
      const double coefficient = max_grad_norm / (grad_norm + 1e-6);  // as clip_grad_norm_
      if (max_grad_norm > 0 && coefficient < 1.0) {
        torch::NoGradGuard no_grad;
        for (auto& p : params)
          if (p.grad().defined()) p.mutable_grad().mul_(coefficient);
      }
    } else {
      grad_norm = max_grad_norm > 0 ? torch::nn::utils::clip_grad_norm_(params, max_grad_norm)
                                    : train::grad_norm(params);  // logged, nothing clipped
    }
    optimizer->set_lr(schedule.lr(step));
    // offload_param: the optimizer writes the homes in pinned RAM that gathers copy from asynchronously; every
    // copy queued on the GPU has finished before it does.
    if (job.zero.offload_param && job.model->device().is_cuda()) torch::cuda::synchronize(job.model->device().index());
    if (!overflow) optimizer->step();
    // ZeRO-1/2: the owners' new values to every rank (ZeRO-3 gathers them when they are next used).
    if (sharded && job.zero.stage < 3 && !overflow) sync->broadcast_from_owners();
    if (sharded && step == start_step) log_held_memory(job, all_params, params, *optimizer);
    for (auto& p : params)
      if (p.grad().defined()) p.mutable_grad().reset();  // every gradient: ZeRO optimizers see only their own
    if (job.scaler) job.scaler->update();
    window_grad_norm += grad_norm;
    ++window_steps;
    progress.advance();

    const int64_t done = step + 1;
    if (done % logging_steps == 0 || done == total_steps) {
      if (job.group) window.reduce(*job.group);
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const c10::Device device = job.model->device();
      nlohmann::ordered_json row;
      std::vector<std::pair<std::string, double>> scalars;
      auto values = window.values();
      job.objective->derive_metrics(values);
      for (const auto& [name, v] : values) {
        row[name] = v;
        scalars.emplace_back("train/" + name, v);
      }
      row["grad_norm"] = window_grad_norm / window_steps;
      row["learning_rate"] = schedule.lr(step);
      row["memory(GiB)"] = train::peak_memory_gib(device.is_cuda() ? device.index() : -1);
      row["train_speed(iter/s)"] = (done - start_step) / elapsed;
      row["epoch"] = static_cast<double>(done) / steps_per_epoch;
      row["global_step/max_steps"] = std::to_string(done) + "/" + std::to_string(total_steps);
      row["percentage"] = 100.0 * done / total_steps;
      row["elapsed_time"] = train::format_duration(elapsed);
      row["remaining_time"] = train::format_duration(elapsed / (done - start_step) * (total_steps - done));
      if (log) log->write(row);
      log_info(train::format_log_row(row));
      scalars.emplace_back("train/grad_norm", row["grad_norm"].get<double>());
      scalars.emplace_back("train/learning_rate", row["learning_rate"].get<double>());
      if (tensorboard) tensorboard->add_scalars(scalars, done);
      loss_curve.steps.push_back(static_cast<double>(done));
      loss_curve.values.push_back(row["loss"].get<double>());
      window.clear();
      window_grad_norm = 0;
      window_steps = 0;
    }
    if (!job.val.empty() && (done % eval_steps == 0 || done == total_steps)) {
      const auto metrics = evaluate(job, flags.integer("per_device_eval_batch_size"));
      nlohmann::ordered_json row;
      std::vector<std::pair<std::string, double>> scalars;
      for (const auto& [name, v] : metrics) {
        row["eval_" + name] = v;
        scalars.emplace_back("eval/" + name, v);
      }
      row["global_step/max_steps"] = std::to_string(done) + "/" + std::to_string(total_steps);
      if (log) log->write(row);
      log_info(train::format_log_row(row));
      if (tensorboard) tensorboard->add_scalars(scalars, done);
      eval_curve.steps.push_back(static_cast<double>(done));
      eval_curve.values.push_back(row["eval_loss"].get<double>());
    }
    if (done % save_steps == 0 || done == total_steps) save_checkpoint(job, flags, done, *optimizer, data, saved);
  }
  progress.finish();
  if (job.zero3) {
    std::vector<double> peaks(static_cast<size_t>(job.world_size), 0.0);
    peaks[static_cast<size_t>(job.rank)] = static_cast<double>(job.zero3->peak_gathered_bytes());
    peaks = job.group->sum(peaks);
    log_info("ZeRO-3: ", job.zero3->prefetched_gathers(), " of ", job.zero3->gathers(),
             " parameter gathers were prefetched while the previous layer computed; parameters gathered at once, at "
             "most, per rank: ", bytes_per_rank(peaks, 0, peaks.size()));
  }
  if (job.main_rank()) {
    train::write_loss_plot(job.run_dir / "images" / "train_loss.png", {loss_curve});
    if (!eval_curve.values.empty()) train::write_loss_plot(job.run_dir / "images" / "eval_loss.png", {eval_curve});
  }
  if (const auto dropped = data.report(); !dropped.empty()) log_info(dropped);
  log_info("last checkpoint: ", saved.empty() ? std::string("none") : saved.back().string());
  return 0;
}

std::vector<cli::FlagSpec> sft_flags() { return train_flags(false); }
std::vector<cli::FlagSpec> pt_flags() { return train_flags(true); }
int run_sft(const std::vector<std::string>& args) {
  return run_training("sft", train_flags(false), args, false,
                      {[](const ObjectiveContext&) { return std::make_unique<CausalLmObjective>(); }, {}, {}});
}
int run_pt(const std::vector<std::string>& args) {
  return run_training("pt", train_flags(true), args, true,
                      {[](const ObjectiveContext&) { return std::make_unique<CausalLmObjective>(); }, {}, {}});
}

}  // namespace swift::recipes
