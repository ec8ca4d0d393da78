// `NPROC_PER_NODE=4 swift sft ...`: the launcher ms-swift users know. The swift process becomes a small
// supervisor (like torchrun) that starts NPROC_PER_NODE ranks of the same binary with the same arguments and
// the torchrun environment, forwards SIGINT/SIGTERM to them, and when one rank fails stops the others and
// exits with that rank's status, naming it. Several nodes: NNODES, NODE_RANK (else SLURM_NODEID inside an
// srun step), MASTER_ADDR, MASTER_PORT on each node, as ms-swift reads them. No LibTorch here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "swift/distributed/env.h"

namespace swift::distributed {

struct LaunchPlan {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;           // 0: one node and MASTER_PORT unset: a free port is picked at launch
  int omp_threads_per_rank = 0;  // > 0: OMP_NUM_THREADS given to each rank (it was unset)
};

// What to launch, or nullopt when this process is itself a rank or the only process: RANK already set
// (torchrun, or our own children), or NPROC_PER_NODE and NNODES unset / 1. UsageError naming the variable for
// a bad value (not a number, NODE_RANK >= NNODES, several nodes without MASTER_ADDR).
// hardware_threads: the machine's cores, to split among local ranks when OMP_NUM_THREADS is unset (as
// torchrun sets 1 thread; we give each rank its share instead).
std::optional<LaunchPlan> launch_plan(const EnvLookup& env, int hardware_threads);

// The environment of local rank `local_rank` under `plan`: RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
// GROUP_RANK, ROLE_RANK, NODE_RANK, MASTER_ADDR, MASTER_PORT (and OMP_NUM_THREADS when planned), as
// "NAME=value" entries to add to the parent's environment.
std::vector<std::string> rank_environment(const LaunchPlan& plan, int local_rank);

// Starts the local ranks (argv[0] is re-executed through /proc/self/exe with argv as given), waits for them,
// and returns the launcher's exit status: 0 when every rank exits 0; else the first failing rank's exit
// status (128 + signal when it was killed), after logging "rank R (pid P) exited with status S" /
// "... was killed by signal N (SIGKILL)" and stopping the others (SIGTERM, then SIGKILL after
// grace_seconds). SIGINT/SIGTERM sent to the launcher are forwarded to every rank (a second SIGINT kills them).
// After such an interruption: the first non-zero exit status of a rank, else 128 + the signal that ended one,
// else 0. `executable` replaces /proc/self/exe (tests run /bin/sh).
int run_local_ranks(const LaunchPlan& plan, const std::vector<std::string>& argv, int grace_seconds = 10,
                    const std::string& executable = "/proc/self/exe");

}  // namespace swift::distributed
