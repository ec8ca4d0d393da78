// --ddp_* / --deepspeed / --fsdp into ParallelOptions (see parallel_options.h).
#include "swift/distributed/parallel_options.h"

#include "swift/core/logging.h"

namespace swift::distributed {

std::vector<cli::FlagSpec> parallel_flags() {
  using cli::FlagType;
  return {
      {"ddp_timeout", FlagType::kInt, "1800", "seconds a rank waits for the others (rendezvous, each collective) before failing"},
      {"ddp_backend", FlagType::kString, "auto", "auto (nccl on CUDA, gloo on CPU), nccl or gloo (on GPUs staged through CPU RAM: slow, but several ranks may share one GPU)"},
      {"deepspeed", FlagType::kString, "", "ZeRO over the ranks: zero0, zero1 (optimizer state sharded), zero2 (and gradients), zero3 (and parameters), *_offload, or a DeepSpeed JSON file"},
      {"fsdp", FlagType::kString, "", "FSDP spelling of ZeRO where it maps: full_shard (zero3), shard_grad_op (zero2), no_shard (zero0)"},
      {"sequence_parallel_size", FlagType::kInt, "1", "ranks that split each sequence (ms-swift's sequence parallelism): Ulysses all-to-all attention where the attention heads divide by it, ring attention otherwise; the same as --cp_size with Ulysses preferred"},
      {"use_ulysses", FlagType::kBool, "false", "Ulysses sequence parallelism over every rank (--sequence_parallel_size = the world size); one rank has nothing to split"},
      {"tensor_model_parallel_size", FlagType::kInt, "1", "ranks that split every large weight (Megatron tensor parallelism: heads, MLP width and vocabulary); consecutive ranks, so keep a group within a node", {"tp_size"}},
      {"pipeline_model_parallel_size", FlagType::kInt, "1", "pipeline stages (Megatron): consecutive layers per stage, the 1F1B schedule over each step's micro-batches (--gradient_accumulation_steps); the outermost split, so stages may sit on different nodes", {"pp_size"}},
      {"decoder_first_pipeline_num_layers", FlagType::kInt, "0", "layers of the first pipeline stage (0: an even split; the others share the rest)"},
      {"decoder_last_pipeline_num_layers", FlagType::kInt, "0", "layers of the last pipeline stage (0: an even split; the others share the rest)"},
      {"context_parallel_size", FlagType::kInt, "1", "ranks that split each sequence (Megatron context parallelism: each keeps 2 of 2 x cp chunks of every row, balanced for causal attention, and ring attention passes the keys around)", {"cp_size"}},
      {"expert_model_parallel_size", FlagType::kInt, "1", "ranks that split each mixture-of-experts layer's experts (Megatron expert parallelism with --expert_tensor_parallel_size 1: consecutive ranks of a pipeline stage, across tensor, context and data parallelism, each holding experts / ep of every sparse layer; tokens travel to their experts by all-to-all)", {"ep_size"}},
      {"virtual_pipeline_model_parallel_size", FlagType::kInt, "1", "pipeline stages per rank (interleaved 1F1B: a smaller bubble for more exchanges; the micro-batches per step a multiple of --pp_size)"},
      {"use_distributed_optimizer", FlagType::kBool, "true", "with --tp_size/--pp_size and several data-parallel replicas: the ranks holding the same part of the model shard its AdamW state (Megatron's distributed optimizer, ZeRO-1); false: each keeps all of it"},
      {"dp_size", FlagType::kInt, "0", "data-parallel size, as a check: the world size over tp x pp x cp (0: not checked)"},
      {"sequence_parallel", FlagType::kBool, "false", "Megatron sequence parallelism: with --tp_size above 1, the activations between the split layers (norms, residual adds) are cut along the sequence over the tensor-parallel group (reduce-scatter and all-gather instead of all-reduce), dividing that activation memory by --tp_size; the same numbers"},
  };
}

namespace {

// Megatron's sizes: checked against the world size before anything loads.
void tensor_model_parallel_options(const cli::Flags& flags, ParallelOptions& options, cli::Problems& problems) {
  options.tp_size = flags.integer("tensor_model_parallel_size");
  options.pp_size = flags.integer("pipeline_model_parallel_size");
  options.first_stage_layers = flags.integer("decoder_first_pipeline_num_layers");
  options.last_stage_layers = flags.integer("decoder_last_pipeline_num_layers");
  problems.at_least("tensor_model_parallel_size", options.tp_size, 1, "ranks, e.g. 2");
  problems.at_least("pipeline_model_parallel_size", options.pp_size, 1, "stages, e.g. 2");
  problems.at_least("decoder_first_pipeline_num_layers", options.first_stage_layers, 0, "layers (0: an even split)");
  problems.at_least("decoder_last_pipeline_num_layers", options.last_stage_layers, 0, "layers (0: an even split)");
  options.virtual_stages = flags.integer("virtual_pipeline_model_parallel_size");
  problems.at_least("virtual_pipeline_model_parallel_size", options.virtual_stages, 1, "stages per rank, e.g. 2");
  problems.check(options.virtual_stages == 1 || options.pp_size > 1,
                 "--virtual_pipeline_model_parallel_size " + std::to_string(options.virtual_stages) + " needs pipeline stages",
                 "add --pp_size 2 (or more), or drop it");
  options.ep_size = flags.integer("expert_model_parallel_size");
  problems.at_least("expert_model_parallel_size", options.ep_size, 1, "ranks, e.g. 2");
  const int64_t world = options.env.world_size;
  if (options.tp_size < 1 || options.pp_size < 1 || options.ep_size < 1) return;
  const int64_t split = options.model_parallel_size();
  const std::string sizes = "--tp_size " + std::to_string(options.tp_size) + " x --pp_size " + std::to_string(options.pp_size) +
                            (options.cp_size > 1 ? " x --cp_size " + std::to_string(options.cp_size) : "");
  problems.check(world % split == 0,
                 sizes + " (" + std::to_string(split) + ") does not divide the " + std::to_string(world) + " ranks (WORLD_SIZE)",
                 "start a multiple of " + std::to_string(split) + " ranks (NPROC_PER_NODE x NNODES), or change the sizes");
  // Expert parallelism takes its ranks from those of a pipeline stage (tensor x context x data parallel, as
  // Megatron-Core with --expert_tensor_parallel_size 1).
  const int64_t stage_ranks = world / options.pp_size;
  problems.check(world % split != 0 || stage_ranks % options.ep_size == 0,
                 "--expert_model_parallel_size " + std::to_string(options.ep_size) + " does not divide the " +
                     std::to_string(stage_ranks) + " ranks of a pipeline stage (" + std::to_string(world) +
                     " ranks over --pp_size " + std::to_string(options.pp_size) + ")",
                 "start a multiple of " + std::to_string(options.ep_size * options.pp_size) +
                     " ranks, or choose an --ep_size that divides " + std::to_string(stage_ranks));
  const int64_t dp = flags.integer("dp_size");
  problems.check(dp == 0 || dp * split == world,
                 "--dp_size " + std::to_string(dp) + " x " + sizes + " is not the " + std::to_string(world) + " ranks started",
                 "drop --dp_size (it is what the ranks leave), or start " + std::to_string(dp * split) + " ranks");
  problems.check(!options.splits_model() || options.zero.stage <= 1,
                 "--deepspeed " + options.zero.source + " with " + sizes +
                     (options.ep_size > 1 ? " x --ep_size " + std::to_string(options.ep_size) : "") +
                     " is not available yet (only the optimizer state is sharded across replicas: Megatron's distributed optimizer)",
                 "drop --deepspeed (--use_distributed_optimizer, on by default, shards the optimizer state)");
  options.distributed_optimizer = flags.boolean("use_distributed_optimizer") || options.zero.stage == 1;
  problems.check(options.pp_size > 1 || (options.first_stage_layers == 0 && options.last_stage_layers == 0),
                 "--decoder_first/last_pipeline_num_layers need pipeline stages", "add --pp_size, or drop them");
  options.sequence_parallel = flags.boolean("sequence_parallel") && options.tp_size > 1;
  if (flags.boolean("sequence_parallel") && options.tp_size == 1)
    log_info("--sequence_parallel: nothing to split without tensor parallelism (--tp_size 1); off, as in Megatron");
}

// Megatron's --cp_size (ring attention) or ms-swift's --sequence_parallel_size / --use_ulysses (Ulysses where the
// heads divide): one group size either way. With one rank (--use_ulysses alone) there is nothing to split.
void context_parallel_options(const cli::Flags& flags, ParallelOptions& options, cli::Problems& problems) {
  const int64_t megatron = flags.integer("context_parallel_size");
  const int64_t ulysses = flags.boolean("use_ulysses") && !flags.given("sequence_parallel_size")
                              ? options.env.world_size
                              : flags.integer("sequence_parallel_size");
  problems.at_least("context_parallel_size", megatron, 1, "ranks, e.g. 2");
  problems.at_least("sequence_parallel_size", ulysses, 1, "ranks, e.g. 2");
  problems.check(megatron == 1 || ulysses == 1,
                 "--context_parallel_size " + std::to_string(megatron) + " and --sequence_parallel_size " +
                     std::to_string(ulysses) + " (or --use_ulysses) both split the sequences",
                 "give one of them (--cp_size: ring attention; --sequence_parallel_size: Ulysses where the heads divide)");
  options.cp_size = std::max<int64_t>(1, std::max(megatron, ulysses));
  options.context_attention = ulysses > 1 ? model::ContextParallelAttention::kUlysses : model::ContextParallelAttention::kRing;
}

}  // namespace

ParallelOptions parallel_options(const cli::Flags& flags, bool gradient_checkpointing, cli::Problems& problems) {
  ParallelOptions options;
  options.env = problems.collect([] { return read_dist_env(); }, DistEnv{});
  options.timeout_seconds = flags.integer("ddp_timeout");
  problems.at_least("ddp_timeout", options.timeout_seconds, 1, "seconds, e.g. 1800");
  options.backend = flags.str("ddp_backend");
  options.zero = problems.collect(
      [&] { return parse_deepspeed(sharding_spec(flags.str("deepspeed"), flags.str("fsdp"))); }, ZeroConfig{});
  problems.check(options.zero.stage < 3 || !options.env.distributed() || gradient_checkpointing,
                 "--deepspeed " + options.zero.source + ": ZeRO-3 needs gradient checkpointing (layers are gathered again "
                 "for their recomputation in backward)",
                 "drop --gradient_checkpointing false");
  context_parallel_options(flags, options, problems);
  tensor_model_parallel_options(flags, options, problems);
  return options;
}

}  // namespace swift::distributed
