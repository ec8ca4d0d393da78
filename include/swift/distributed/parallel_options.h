// How a training job spreads over ranks, as ms-swift's flags say it: the process group (--ddp_backend,
// --ddp_timeout), ZeRO (--deepspeed, or its FSDP spelling --fsdp), Megatron's model parallelism (--tp_size,
// --pp_size, --cp_size) and ms-swift's sequence parallelism (--sequence_parallel_size, --use_ulysses).
// Parsed once into ParallelOptions; the strategy that implements them is made by make_parallel_strategy
// (parallel_strategy.h).
#pragma once

#include <cstdint>
#include <vector>

#include "swift/cli/flags.h"
#include "swift/cli/problems.h"
#include "swift/distributed/env.h"
#include "swift/distributed/zero.h"
#include "swift/model/context_parallel.h"

namespace swift::distributed {

struct ParallelOptions {
  DistEnv env;                     // where this process sits (RANK, WORLD_SIZE, ... or Slurm's). Default: one process.
  int64_t timeout_seconds = 1800;  // --ddp_timeout: rendezvous and every collective. Default: 1800.
  std::string backend = "auto";    // --ddp_backend: auto (nccl on CUDA, gloo on CPU), nccl, gloo. Default: auto.
  ZeroConfig zero;                 // --deepspeed / --fsdp. Default: stage 0 (plain data parallelism).
  // Ranks that split each sequence (context parallelism, model/context_parallel.h): Megatron's
  // --context_parallel_size / --cp_size (ring attention), or ms-swift's --sequence_parallel_size (Ulysses; ring with
  // --use_ring_attention). Default: 1 (each rank holds whole sequences).
  int64_t cp_size = 1;
  model::ContextParallelAttention context_attention = model::ContextParallelAttention::kRing;
  // Megatron's model parallelism (tensor_parallel_strategy.h): ranks per tensor-parallel group, Megatron's
  // --tensor_model_parallel_size / --tp_size. Default: 1. The data-parallel size is what the world size leaves.
  int64_t tp_size = 1;
  // Megatron's --sequence_parallel: with tp_size > 1, the activations between the split layers (norms, residual
  // adds) are cut along the sequence over the tensor-parallel group. Default: off (Megatron's and ms-swift's).
  bool sequence_parallel = false;
  // Pipeline stages (--pipeline_model_parallel_size / --pp_size), and Megatron's uneven split
  // (--decoder_first/last_pipeline_num_layers; 0: even). Default: 1 stage.
  int64_t pp_size = 1;
  int64_t first_stage_layers = 0, last_stage_layers = 0;
  // Virtual stages per rank (--virtual_pipeline_model_parallel_size): interleaved 1F1B above 1. Default: 1.
  int64_t virtual_stages = 1;
  // Megatron's distributed optimizer (--use_distributed_optimizer, or --deepspeed zero1 with tp/pp): each
  // data-parallel replica's ranks shard the AdamW state of their parameters (ZeRO-1). Default: on, as ms-swift's
  // Megatron arguments.
  bool distributed_optimizer = true;
  // Megatron's --expert_model_parallel_size / --ep_size: consecutive ranks of a pipeline stage (across TP, CP and DP)
  // that split each mixture-of-experts layer's experts and send tokens between them. Default: 1.
  int64_t ep_size = 1;
  // Ranks that share their samples (tp x cp x pp); the world size over it is the data-parallel size.
  int64_t model_parallel_size() const { return tp_size * cp_size * pp_size; }
  // Whether any weight is split over ranks (model parallelism, or expert parallelism).
  bool splits_model() const { return model_parallel_size() > 1 || ep_size > 1; }
};

// The flags above, for a training command's table.
std::vector<cli::FlagSpec> parallel_flags();

// The options the flags and the environment give; what is wrong goes to `problems`. `gradient_checkpointing`:
// whether the job recomputes layers in backward (ZeRO-3 over several ranks needs it: layers are gathered again
// for their recomputation; one process trains without ZeRO whatever --deepspeed says).
ParallelOptions parallel_options(const cli::Flags& flags, bool gradient_checkpointing, cli::Problems& problems);

}  // namespace swift::distributed
