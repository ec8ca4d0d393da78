// Where this process sits in a distributed job, as the launchers describe it in the environment:
//   torchrun and swift's own launcher: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR,
//     MASTER_PORT (the torchrun contract);
//   srun (one task per rank): SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID, SLURM_STEP_NUM_TASKS /
//     SLURM_NTASKS_PER_NODE or SLURM_STEP_TASKS_PER_NODE, with MASTER_ADDR (else the first host of
//     SLURM_STEP_NODELIST / SLURM_JOB_NODELIST) and MASTER_PORT (else 29500);
//   neither: a single process (world size 1).
// No LibTorch here: the launcher runs before anything heavy is loaded.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace swift::distributed {

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string source = "single";  // "torchrun" (also swift's launcher), "slurm" or "single"

  bool distributed() const { return world_size > 1; }
  // "rank 1 of 4 (local 1 of 2, node 0; torchrun; master 10.0.0.1:29500)"
  std::string describe() const;
};

// Looks a variable up; nullptr when unset. Tests pass a map instead of the real environment.
using EnvLookup = std::function<const char*(const char*)>;
EnvLookup process_env();

// Reads the environment as above. The torchrun variables win over Slurm's (one task per node running
// torchrun or NPROC_PER_NODE). Slurm's count only inside a job step (SLURM_STEP_ID set, i.e. under srun): a
// batch script's own shell has SLURM_NTASKS too but is one process. UsageError (naming the variable) for a
// value that is not a number, a rank outside [0, world), or RANK without WORLD_SIZE.
DistEnv read_dist_env(const EnvLookup& env = process_env());

// The whole number in variable `name`; nullopt when unset or empty; UsageError "NAME='abc' is not a number".
std::optional<int> env_int(const EnvLookup& env, const char* name);

// Inside an srun job step (SLURM_STEP_ID or SLURM_STEPID set, and not the batch script's own pseudo step).
bool inside_slurm_step(const EnvLookup& env);

// Slurm's compressed host lists: "node[01-03,7],gpu5" -> node01 node02 node03 node7 gpu5 (zero padding kept).
// UsageError for an unbalanced bracket or a bad range.
std::vector<std::string> expand_slurm_hostlist(const std::string& list);

}  // namespace swift::distributed
