// ZeRO (DeepSpeed's Zero Redundancy Optimizer) as ms-swift users ask for it: `--deepspeed zero1|zero2|...` or a
// DeepSpeed JSON file. What each stage does here, over the data-parallel ranks:
//   zero0  plain data parallelism (every rank holds everything);
//   zero1  the optimizer state is sharded: each parameter belongs to one rank (ParameterPartition), which alone
//          keeps its AdamW moments and updates it, then broadcasts the new values;
//   zero2  also the gradients: after every micro-batch each parameter's gradient is reduced to its owner and
//          dropped elsewhere, so between micro-batches a rank holds only its own parameters' gradients (the
//          backward itself still builds all of them: they are reduced after it, not during it);
//   zero3  also the parameters: each one's values live on its owner, and are gathered around each use (a decoder
//          layer's forward and recomputation, the embeddings and head for a micro-batch) and freed after; layer
//          gradients are reduced to their owners inside the backward (Zero3Sharding). Needs gradient checkpointing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace swift::distributed {

struct ZeroConfig {
  int stage = 0;
  bool offload_optimizer = false;  // "offload_optimizer": {"device": "cpu"}
  bool offload_param = false;      // "offload_param": {"device": "cpu"}
  int64_t reduce_bucket_bytes = 25ll << 20;  // "reduce_bucket_size" (elements in DeepSpeed; x 4 bytes here)
  std::string source;              // "zero2", or the JSON file's path: for the log
};

// `--deepspeed` as ms-swift takes it: a preset name (zero0, zero1, zero2, zero3, zero2_offload, zero3_offload)
// or a DeepSpeed JSON file (zero_optimization.stage, offload_optimizer/offload_param device, reduce_bucket_size;
// "auto" values take the defaults; the other keys of the file are DeepSpeed's own and are ignored).
// Empty: stage 0. UsageError naming --deepspeed (and the key) for anything else.
ZeroConfig parse_deepspeed(const std::string& spec);

// --deepspeed, or ms-swift's other spelling of the same sharding, --fsdp: full_shard / hybrid_shard -> zero3,
// shard_grad_op -> zero2, no_shard -> zero0. UsageError when both are given or --fsdp names something else
// (FSDP config files are not read).
std::string sharding_spec(const std::string& deepspeed, const std::string& fsdp);

// ZeRO checkpoints keep the optimizer state as one file per rank, keyed by parameter name:
// "optimizer-rank00001-of-00004.safetensors".
std::string optimizer_shard_name(int rank, int world_size);
// A checkpoint's optimizer state files: optimizer.safetensors (one process, DDP), else the shards, which must
// be the complete set (a missing one would silently restart part of the state: DataError). Empty when none.
std::vector<std::filesystem::path> optimizer_state_files(const std::filesystem::path& checkpoint);

// Which rank owns each parameter: greedily the least-loaded rank by bytes, largest parameters first, so every
// rank computes the same assignment and the shards are within one parameter of equal.
class ParameterPartition {
 public:
  ParameterPartition(const std::vector<int64_t>& bytes, int world_size);
  explicit ParameterPartition(int world_size) : ParameterPartition({}, world_size) {}
  // One more parameter, after those so far: its owner. (ZeRO-3 gives the loaded parameters owners as they are
  // read, and those made after loading, such as LoRA's, theirs afterwards.)
  int assign(int64_t bytes);
  // Counts `bytes` more against `rank` (parameters whose owner was decided elsewhere).
  void charge(int rank, int64_t bytes) { load_[static_cast<size_t>(rank)] += bytes; }
  int world_size() const { return static_cast<int>(load_.size()); }
  int owner(size_t index) const { return owner_[index]; }
  const std::vector<int>& owners() const { return owner_; }
  int64_t bytes_of(int rank) const { return load_[static_cast<size_t>(rank)]; }

 private:
  int take(int64_t bytes);  // the least-loaded rank, charged `bytes`

  std::vector<int> owner_;
  std::vector<int64_t> load_;
};

}  // namespace swift::distributed
