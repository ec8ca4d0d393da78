// --ddp_* / --deepspeed / --fsdp into ParallelOptions (see parallel_options.h).
#include "swift/distributed/parallel_options.h"

namespace swift::distributed {

std::vector<cli::FlagSpec> parallel_flags() {
  using cli::FlagType;
  return {
      {"ddp_timeout", FlagType::kInt, "1800", "seconds a rank waits for the others (rendezvous, each collective) before failing"},
      {"ddp_backend", FlagType::kString, "auto", "auto (nccl on CUDA, gloo on CPU), nccl or gloo (on GPUs staged through CPU RAM: slow, but several ranks may share one GPU)"},
      {"deepspeed", FlagType::kString, "", "ZeRO over the ranks: zero0, zero1 (optimizer state sharded), zero2 (and gradients), zero3 (and parameters), *_offload, or a DeepSpeed JSON file"},
      {"fsdp", FlagType::kString, "", "FSDP spelling of ZeRO where it maps: full_shard (zero3), shard_grad_op (zero2), no_shard (zero0)"},
      {"sequence_parallel_size", FlagType::kInt, "1", "ranks that split each sequence (Ulysses); only 1 for now: each rank trains whole sequences"},
      {"use_ulysses", FlagType::kBool, "false", "Ulysses sequence parallelism over every rank (--sequence_parallel_size = the world size); one rank has nothing to split"},
  };
}

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
  // Ulysses splits each sequence's heads over the ranks of a group; swift does not split sequences yet. With one
  // rank (the group is that rank alone) the command line means plain training and runs.
  options.sequence_parallel_size = flags.boolean("use_ulysses") && !flags.given("sequence_parallel_size")
                                       ? options.env.world_size
                                       : flags.integer("sequence_parallel_size");
  problems.check(options.sequence_parallel_size == 1,
                 "sequence parallelism over " + std::to_string(options.sequence_parallel_size) +
                     " ranks (--use_ulysses / --sequence_parallel_size) is not available in swift yet",
                 "train with --sequence_parallel_size 1: each rank then holds whole sequences (gradient checkpointing, "
                 "--deepspeed zero3 and --packing keep long ones in memory)");
  return options;
}

}  // namespace swift::distributed
