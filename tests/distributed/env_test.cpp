// read_dist_env over fake environments (torchrun, srun steps, a batch script's own shell, bad values) and
// Slurm host-list expansion.
#include "swift/distributed/env.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "swift/core/error.h"

namespace swift::distributed {
namespace {

using Vars = std::map<std::string, std::string>;

EnvLookup fake_env(Vars vars) {
  auto shared = std::make_shared<Vars>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

// The message of the UsageError fn throws ("" and a failure when it throws none).
template <typename Fn>
std::string usage_error(Fn fn) {
  try {
    fn();
  } catch (const UsageError& e) {
    return e.message();
  }
  ADD_FAILURE() << "expected a UsageError";
  return "";
}

std::string env_error(const Vars& vars) {
  return usage_error([&] { read_dist_env(fake_env(vars)); });
}

// Inside an srun step of 8 tasks on 2 nodes: task 5 (node 1, local 1).
Vars slurm_step() {
  return {{"SLURM_JOB_ID", "1234"},        {"SLURM_STEP_ID", "0"},           {"SLURM_PROCID", "5"},
          {"SLURM_STEP_NUM_TASKS", "8"},   {"SLURM_NTASKS", "16"},           {"SLURM_LOCALID", "1"},
          {"SLURM_NODEID", "1"},           {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"},
          {"SLURM_STEP_NODELIST", "gpu[07-08]"}, {"SLURM_JOB_NODELIST", "gpu[03,07-08]"}};
}

TEST(DistEnv, NoVariablesIsOneProcess) {
  const DistEnv d = read_dist_env(fake_env({}));
  EXPECT_EQ(d.source, "single");
  EXPECT_EQ(d.rank, 0);
  EXPECT_EQ(d.world_size, 1);
  EXPECT_FALSE(d.distributed());
}

TEST(DistEnv, TorchrunVariables) {
  const DistEnv d = read_dist_env(fake_env({{"RANK", "3"},
                                            {"WORLD_SIZE", "4"},
                                            {"LOCAL_RANK", "1"},
                                            {"LOCAL_WORLD_SIZE", "2"},
                                            {"GROUP_RANK", "1"},
                                            {"MASTER_ADDR", "10.0.0.1"},
                                            {"MASTER_PORT", "29600"}}));
  EXPECT_EQ(d.source, "torchrun");
  EXPECT_EQ(d.rank, 3);
  EXPECT_EQ(d.world_size, 4);
  EXPECT_EQ(d.local_rank, 1);
  EXPECT_EQ(d.local_world_size, 2);
  EXPECT_EQ(d.node_rank, 1);
  EXPECT_EQ(d.master_addr, "10.0.0.1");
  EXPECT_EQ(d.master_port, 29600);
  EXPECT_TRUE(d.distributed());
  EXPECT_EQ(d.describe(), "rank 3 of 4 (local 1 of 2, node 1; torchrun; master 10.0.0.1:29600)");
}

TEST(DistEnv, TorchrunDefaultsAreOneNode) {
  const DistEnv d = read_dist_env(fake_env({{"RANK", "1"}, {"WORLD_SIZE", "2"}}));
  EXPECT_EQ(d.local_rank, 1);  // LOCAL_RANK unset: RANK
  EXPECT_EQ(d.local_world_size, 2);
  EXPECT_EQ(d.node_rank, 0);
  EXPECT_EQ(d.master_addr, "127.0.0.1");
  EXPECT_EQ(d.master_port, 29500);
  EXPECT_EQ(d.describe(), "rank 1 of 2 (local 1 of 2, node 0; torchrun; master 127.0.0.1:29500)");
}

TEST(DistEnv, NodeRankWhenGroupRankIsUnset) {
  Vars vars = {{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"},
               {"NODE_RANK", "1"}};
  EXPECT_EQ(read_dist_env(fake_env(vars)).node_rank, 1);
  vars["GROUP_RANK"] = "0";  // torchrun's own name wins
  EXPECT_EQ(read_dist_env(fake_env(vars)).node_rank, 0);
}

TEST(DistEnv, TorchrunWinsOverSlurm) {
  // One srun task per node running NPROC_PER_NODE ranks: each rank has both sets.
  Vars vars = slurm_step();
  vars.insert({{"RANK", "6"}, {"WORLD_SIZE", "16"}, {"LOCAL_RANK", "6"}, {"LOCAL_WORLD_SIZE", "8"}});
  const DistEnv d = read_dist_env(fake_env(vars));
  EXPECT_EQ(d.source, "torchrun");
  EXPECT_EQ(d.rank, 6);
  EXPECT_EQ(d.world_size, 16);
  EXPECT_EQ(d.master_addr, "127.0.0.1");
}

TEST(DistEnv, EmptyVariableCountsAsUnset) {
  EXPECT_EQ(read_dist_env(fake_env({{"RANK", ""}, {"WORLD_SIZE", "2"}})).source, "single");
}

TEST(DistEnv, SlurmStep) {
  const DistEnv d = read_dist_env(fake_env(slurm_step()));
  EXPECT_EQ(d.source, "slurm");
  EXPECT_EQ(d.rank, 5);
  EXPECT_EQ(d.world_size, 8);  // the step's tasks, not the job's
  EXPECT_EQ(d.local_rank, 1);
  EXPECT_EQ(d.local_world_size, 4);
  EXPECT_EQ(d.node_rank, 1);
  EXPECT_EQ(d.master_addr, "gpu07");  // the step's first host
  EXPECT_EQ(d.master_port, 29500);
}

TEST(DistEnv, SlurmLegacyNamesAndJobLevelVariables) {
  const DistEnv d = read_dist_env(fake_env({{"SLURM_STEPID", "2"},
                                            {"SLURM_PROCID", "3"},
                                            {"SLURM_NTASKS", "4"},
                                            {"SLURM_LOCALID", "1"},
                                            {"SLURM_NODEID", "1"},
                                            {"SLURM_NTASKS_PER_NODE", "2"},
                                            {"SLURM_JOB_NODELIST", "node[01-02]"}}));
  EXPECT_EQ(d.source, "slurm");
  EXPECT_EQ(d.rank, 3);
  EXPECT_EQ(d.world_size, 4);
  EXPECT_EQ(d.local_world_size, 2);
  EXPECT_EQ(d.master_addr, "node01");
}

TEST(DistEnv, SlurmTasksPerNodeOfThisNode) {
  // "4(x2),3": nodes 0 and 1 run 4 tasks, node 2 runs 3.
  Vars vars = slurm_step();
  vars["SLURM_STEP_TASKS_PER_NODE"] = "4(x2),3";
  vars["SLURM_STEP_NUM_TASKS"] = "11";
  EXPECT_EQ(read_dist_env(fake_env(vars)).local_world_size, 4);
  vars["SLURM_PROCID"] = "9";
  vars["SLURM_NODEID"] = "2";
  EXPECT_EQ(read_dist_env(fake_env(vars)).local_world_size, 3);
  vars["SLURM_NTASKS_PER_NODE"] = "5";  // the job's --ntasks-per-node wins
  EXPECT_EQ(read_dist_env(fake_env(vars)).local_world_size, 5);
}

TEST(DistEnv, SlurmTasksPerNodeFromNodeCount) {
  Vars vars = slurm_step();
  vars.erase("SLURM_STEP_TASKS_PER_NODE");
  vars["SLURM_STEP_NUM_NODES"] = "2";
  EXPECT_EQ(read_dist_env(fake_env(vars)).local_world_size, 4);
}

TEST(DistEnv, SlurmMasterFromEnvironment) {
  Vars vars = slurm_step();
  vars["MASTER_ADDR"] = "10.1.2.3";
  vars["MASTER_PORT"] = "12345";
  const DistEnv d = read_dist_env(fake_env(vars));
  EXPECT_EQ(d.master_addr, "10.1.2.3");
  EXPECT_EQ(d.master_port, 12345);
  vars.erase("MASTER_ADDR");
  vars.erase("SLURM_STEP_NODELIST");
  EXPECT_EQ(read_dist_env(fake_env(vars)).master_addr, "gpu03");  // the job's first host
}

TEST(DistEnv, SlurmBatchScriptShellIsOneProcess) {
  // sbatch's own shell has the job's task count but is not a task of an srun step.
  Vars vars = {{"SLURM_JOB_ID", "1234"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"},
               {"SLURM_NODEID", "0"},    {"SLURM_LOCALID", "0"}, {"SLURM_JOB_NODELIST", "gpu[01-02]"}};
  EXPECT_EQ(read_dist_env(fake_env(vars)).source, "single");
  EXPECT_FALSE(inside_slurm_step(fake_env(vars)));
  vars["SLURM_STEP_ID"] = "4294967294";  // the batch pseudo step
  EXPECT_EQ(read_dist_env(fake_env(vars)).source, "single");
  EXPECT_FALSE(inside_slurm_step(fake_env(vars)));
  vars["SLURM_STEP_ID"] = "0";
  EXPECT_TRUE(inside_slurm_step(fake_env(vars)));
  EXPECT_EQ(read_dist_env(fake_env(vars)).source, "slurm");
}

TEST(DistEnv, SlurmStepOfOneTaskIsOneProcess) {
  const DistEnv d = read_dist_env(fake_env({{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "0"},
                                            {"SLURM_STEP_NUM_TASKS", "1"}}));
  EXPECT_EQ(d.source, "single");
  EXPECT_EQ(d.world_size, 1);
}

TEST(DistEnv, SlurmStepWithoutProcIdIsOneProcess) {
  EXPECT_EQ(read_dist_env(fake_env({{"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS", "4"}})).source, "single");
}

TEST(DistEnv, ErrorsNameTheVariable) {
  EXPECT_EQ(env_error({{"RANK", "abc"}, {"WORLD_SIZE", "2"}}), "RANK='abc' is not a number");
  EXPECT_EQ(env_error({{"RANK", "0"}, {"WORLD_SIZE", "2x"}}), "WORLD_SIZE='2x' is not a number");
  EXPECT_EQ(env_error({{"RANK", "0"}, {"WORLD_SIZE", "99999999999"}}),
            "WORLD_SIZE='99999999999' is not a number");
  EXPECT_EQ(env_error({{"RANK", "0"}}), "RANK is set but WORLD_SIZE is not");
  EXPECT_EQ(env_error({{"RANK", "4"}, {"WORLD_SIZE", "4"}}), "RANK=4 is outside [0, 4) given by WORLD_SIZE=4");
  EXPECT_EQ(env_error({{"RANK", "-1"}, {"WORLD_SIZE", "4"}}), "RANK=-1 is outside [0, 4) given by WORLD_SIZE=4");
  EXPECT_EQ(env_error({{"RANK", "0"}, {"WORLD_SIZE", "0"}}), "WORLD_SIZE=0 must be at least 1");
  EXPECT_EQ(env_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "x"}}), "LOCAL_RANK='x' is not a number");
  EXPECT_EQ(env_error({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}}),
            "local rank 2 is outside [0, 2) (the processes on this node)");
  EXPECT_EQ(env_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}),
            "MASTER_PORT=70000 is not a TCP port");
  EXPECT_EQ(env_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "0"}}), "MASTER_PORT=0 is not a TCP port");
  EXPECT_EQ(env_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "http"}}),
            "MASTER_PORT='http' is not a number");
}

TEST(DistEnv, SlurmErrorsNameTheVariable) {
  Vars vars = slurm_step();
  vars["SLURM_PROCID"] = "8";
  EXPECT_EQ(env_error(vars), "SLURM_PROCID=8 is outside [0, 8) given by SLURM_STEP_NUM_TASKS=8");
  vars = slurm_step();
  vars["SLURM_LOCALID"] = "one";
  EXPECT_EQ(env_error(vars), "SLURM_LOCALID='one' is not a number");
  vars = slurm_step();
  vars["SLURM_STEP_TASKS_PER_NODE"] = "4(y2)";
  EXPECT_EQ(env_error(vars), "SLURM_STEP_TASKS_PER_NODE='4(y2)' is not a Slurm task count list");
  vars = slurm_step();
  vars["SLURM_STEP_NODELIST"] = "gpu[07-08";
  EXPECT_EQ(env_error(vars), "SLURM_STEP_NODELIST: Slurm host list 'gpu[07-08' has an unbalanced '['");
  vars = slurm_step();
  vars.erase("SLURM_STEP_NODELIST");
  vars.erase("SLURM_JOB_NODELIST");
  EXPECT_EQ(env_error(vars), "inside a Slurm step without MASTER_ADDR or SLURM_JOB_NODELIST");
}

TEST(DistEnv, EnvInt) {
  EXPECT_EQ(env_int(fake_env({}), "X"), std::nullopt);
  EXPECT_EQ(env_int(fake_env({{"X", ""}}), "X"), std::nullopt);
  EXPECT_EQ(env_int(fake_env({{"X", "42"}}), "X"), 42);
  EXPECT_EQ(env_int(fake_env({{"X", "-3"}}), "X"), -3);
  EXPECT_EQ(usage_error([] { env_int(fake_env({{"X", "4.5"}}), "X"); }), "X='4.5' is not a number");
}

TEST(DistEnv, ProcessEnvReadsTheRealEnvironment) {
  setenv("SWIFT_DIST_ENV_TEST_VAR", "17", 1);
  const EnvLookup env = process_env();
  ASSERT_NE(env("SWIFT_DIST_ENV_TEST_VAR"), nullptr);
  EXPECT_STREQ(env("SWIFT_DIST_ENV_TEST_VAR"), "17");
  unsetenv("SWIFT_DIST_ENV_TEST_VAR");
  EXPECT_EQ(env("SWIFT_DIST_ENV_TEST_VAR"), nullptr);
}

using Hosts = std::vector<std::string>;

std::string hostlist_error(const std::string& list) {
  return usage_error([&] { expand_slurm_hostlist(list); });
}

TEST(SlurmHostlist, PlainHosts) {
  EXPECT_EQ(expand_slurm_hostlist("gpu5"), Hosts({"gpu5"}));
  EXPECT_EQ(expand_slurm_hostlist("a,b.example.org"), Hosts({"a", "b.example.org"}));
  EXPECT_EQ(expand_slurm_hostlist(""), Hosts());
}

TEST(SlurmHostlist, RangesKeepTheirZeroPadding) {
  EXPECT_EQ(expand_slurm_hostlist("node[01-03,7],gpu5"), Hosts({"node01", "node02", "node03", "node7", "gpu5"}));
  EXPECT_EQ(expand_slurm_hostlist("n[8-11]"), Hosts({"n8", "n9", "n10", "n11"}));
  EXPECT_EQ(expand_slurm_hostlist("n[098-101]"), Hosts({"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(expand_slurm_hostlist("n[5]"), Hosts({"n5"}));
}

TEST(SlurmHostlist, SuffixAndSeveralGroups) {
  EXPECT_EQ(expand_slurm_hostlist("a[1-2]-ib,c3"), Hosts({"a1-ib", "a2-ib", "c3"}));
  EXPECT_EQ(expand_slurm_hostlist("r[1-2]n[1,3]"), Hosts({"r1n1", "r1n3", "r2n1", "r2n3"}));
  EXPECT_EQ(expand_slurm_hostlist("x[1-2],y[01-02]"), Hosts({"x1", "x2", "y01", "y02"}));
}

TEST(SlurmHostlist, Errors) {
  EXPECT_EQ(hostlist_error("node[01-03"), "Slurm host list 'node[01-03' has an unbalanced '['");
  EXPECT_EQ(hostlist_error("node01-03]"), "Slurm host list 'node01-03]' has an unbalanced ']'");
  EXPECT_EQ(hostlist_error("a]b[c"), "Slurm host list 'a]b[c' has an unbalanced ']'");
  EXPECT_EQ(hostlist_error("n[3-1]"), "Slurm host list 'n[3-1]' has a bad range '3-1' (end before start)");
  EXPECT_EQ(hostlist_error("n[a-b]"), "Slurm host list 'n[a-b]' has a bad range 'a-b'");
  EXPECT_EQ(hostlist_error("n[1-]"), "Slurm host list 'n[1-]' has a bad range '1-'");
  EXPECT_EQ(hostlist_error("n[]"), "Slurm host list 'n[]' has an empty bracket");
  EXPECT_EQ(hostlist_error("n[[1]]"), "Slurm host list 'n[[1]]' has nested brackets");
}

}  // namespace
}  // namespace swift::distributed
