// The NPROC_PER_NODE launcher: plans from fake environments, each rank's variables, and real supervision of
// /bin/sh ranks (exit statuses, a failing rank stopping the others, signals passed on).
#include "swift/distributed/launcher.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "swift/core/error.h"

namespace swift::distributed {
namespace {

namespace fs = std::filesystem;
using Vars = std::map<std::string, std::string>;
using Clock = std::chrono::steady_clock;

EnvLookup fake_env(Vars vars) {
  auto shared = std::make_shared<Vars>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

std::string plan_error(const Vars& vars) {
  try {
    launch_plan(fake_env(vars), 8);
  } catch (const UsageError& e) {
    return e.message();
  }
  ADD_FAILURE() << "expected a UsageError";
  return "";
}

TEST(LaunchPlan, NothingToLaunch) {
  EXPECT_FALSE(launch_plan(fake_env({}), 8));
  EXPECT_FALSE(launch_plan(fake_env({{"NPROC_PER_NODE", "1"}, {"NNODES", "1"}}), 8));
  // A rank of torchrun or of our own launcher: never launch again.
  EXPECT_FALSE(launch_plan(fake_env({{"NPROC_PER_NODE", "4"}, {"RANK", "0"}, {"WORLD_SIZE", "4"}}), 8));
}

TEST(LaunchPlan, OneNode) {
  const auto plan = launch_plan(fake_env({{"NPROC_PER_NODE", "4"}}), 16);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->nproc_per_node, 4);
  EXPECT_EQ(plan->nnodes, 1);
  EXPECT_EQ(plan->node_rank, 0);
  EXPECT_EQ(plan->master_addr, "127.0.0.1");
  EXPECT_EQ(plan->master_port, 0);  // picked at launch
  EXPECT_EQ(plan->omp_threads_per_rank, 4);
}

TEST(LaunchPlan, OpenMPThreadsPerRank) {
  EXPECT_EQ(launch_plan(fake_env({{"NPROC_PER_NODE", "3"}}), 16)->omp_threads_per_rank, 5);
  EXPECT_EQ(launch_plan(fake_env({{"NPROC_PER_NODE", "4"}}), 2)->omp_threads_per_rank, 1);
  EXPECT_EQ(launch_plan(fake_env({{"NPROC_PER_NODE", "4"}}), 0)->omp_threads_per_rank, 1);  // unknown core count
  // The user's OMP_NUM_THREADS stays as it is.
  EXPECT_EQ(launch_plan(fake_env({{"NPROC_PER_NODE", "4"}, {"OMP_NUM_THREADS", "2"}}), 16)->omp_threads_per_rank, 0);
}

TEST(LaunchPlan, MasterPortFromEnvironment) {
  const auto plan = launch_plan(fake_env({{"NPROC_PER_NODE", "2"}, {"MASTER_PORT", "29511"}}), 8);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->master_port, 29511);
}

TEST(LaunchPlan, SeveralNodes) {
  const auto plan =
      launch_plan(fake_env({{"NNODES", "2"}, {"NODE_RANK", "1"}, {"MASTER_ADDR", "10.0.0.1"}}), 8);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->nproc_per_node, 1);
  EXPECT_EQ(plan->nnodes, 2);
  EXPECT_EQ(plan->node_rank, 1);
  EXPECT_EQ(plan->master_addr, "10.0.0.1");
  EXPECT_EQ(plan->master_port, 29500);  // every node must agree on it
}

TEST(LaunchPlan, SlurmStepGivesNodeRankAndMaster) {
  Vars vars = {{"NPROC_PER_NODE", "4"},  {"NNODES", "2"},      {"SLURM_STEP_ID", "0"},
               {"SLURM_PROCID", "1"},     {"SLURM_NODEID", "1"}, {"SLURM_JOB_NODELIST", "gpu[07-08]"}};
  auto plan = launch_plan(fake_env(vars), 8);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->node_rank, 1);
  EXPECT_EQ(plan->master_addr, "gpu07");
  EXPECT_EQ(plan->master_port, 29500);
  vars["NODE_RANK"] = "0";  // the user's own numbering wins
  vars["MASTER_ADDR"] = "10.0.0.9";
  plan = launch_plan(fake_env(vars), 8);
  EXPECT_EQ(plan->node_rank, 0);
  EXPECT_EQ(plan->master_addr, "10.0.0.9");
}

TEST(LaunchPlan, SlurmNodeIdOutsideAStepIsIgnored) {
  // A batch script's shell is on node 0 of the job, whatever it says; without a step there is no host default.
  Vars vars = {{"NNODES", "2"}, {"SLURM_NODEID", "1"}, {"SLURM_JOB_NODELIST", "gpu[07-08]"}, {"MASTER_ADDR", "h"}};
  EXPECT_EQ(launch_plan(fake_env(vars), 8)->node_rank, 0);
  vars.erase("MASTER_ADDR");
  EXPECT_EQ(plan_error(vars), "several nodes need MASTER_ADDR (NNODES=2)");
}

TEST(LaunchPlan, Errors) {
  EXPECT_EQ(plan_error({{"NPROC_PER_NODE", "abc"}}), "NPROC_PER_NODE='abc' is not a number");
  EXPECT_EQ(plan_error({{"NPROC_PER_NODE", "0"}}), "NPROC_PER_NODE=0 must be at least 1");
  EXPECT_EQ(plan_error({{"NNODES", "-1"}}), "NNODES=-1 must be at least 1");
  EXPECT_EQ(plan_error({{"NNODES", "two"}}), "NNODES='two' is not a number");
  EXPECT_EQ(plan_error({{"NNODES", "2"}, {"NODE_RANK", "2"}, {"MASTER_ADDR", "h"}}),
            "NODE_RANK=2 is outside [0, NNODES=2)");
  EXPECT_EQ(plan_error({{"NPROC_PER_NODE", "2"}, {"NODE_RANK", "1"}}), "NODE_RANK=1 is outside [0, NNODES=1)");
  EXPECT_EQ(plan_error({{"NNODES", "2"}, {"NODE_RANK", "x"}}), "NODE_RANK='x' is not a number");
  EXPECT_EQ(plan_error({{"NNODES", "2"}, {"NODE_RANK", "1"}}), "several nodes need MASTER_ADDR (NNODES=2)");
  EXPECT_EQ(plan_error({{"NPROC_PER_NODE", "2"}, {"MASTER_PORT", "70000"}}), "MASTER_PORT=70000 is not a TCP port");
  EXPECT_EQ(plan_error({{"NPROC_PER_NODE", "2"}, {"MASTER_PORT", "p"}}), "MASTER_PORT='p' is not a number");
}

TEST(LaunchPlan, RankEnvironment) {
  LaunchPlan plan;
  plan.nproc_per_node = 4;
  plan.nnodes = 2;
  plan.node_rank = 1;
  plan.master_addr = "10.0.0.1";
  plan.master_port = 29501;
  plan.omp_threads_per_rank = 3;
  EXPECT_EQ(rank_environment(plan, 2),
            std::vector<std::string>({"RANK=6", "LOCAL_RANK=2", "WORLD_SIZE=8", "LOCAL_WORLD_SIZE=4", "GROUP_RANK=1",
                                      "NODE_RANK=1", "ROLE_RANK=6", "ROLE_WORLD_SIZE=8", "MASTER_ADDR=10.0.0.1",
                                      "MASTER_PORT=29501", "OMP_NUM_THREADS=3"}));
  plan.omp_threads_per_rank = 0;
  const auto vars = rank_environment(plan, 0);
  EXPECT_EQ(vars.front(), "RANK=4");
  EXPECT_EQ(vars.back(), "MASTER_PORT=29501");  // no OMP_NUM_THREADS when the user set it
}

// A fresh folder under /tmp, removed at the end.
struct TempDir {
  TempDir() {
    char pattern[] = "/tmp/swift-launcher-XXXXXX";
    const char* made = mkdtemp(pattern);
    EXPECT_NE(made, nullptr);
    path = made ? made : "/tmp";
  }
  ~TempDir() {
    if (path != "/tmp") fs::remove_all(path);
  }
  std::string path;
};

// Sets a variable for the test's lifetime.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old) old_ = old;
    had_ = old != nullptr;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  std::string name_, old_;
  bool had_ = false;
};

LaunchPlan local_plan(int nproc) {
  LaunchPlan plan;
  plan.nproc_per_node = nproc;
  return plan;
}

// Ranks are `sh -c SCRIPT sh DIR`: the script sees the temp folder as $1.
int run_sh(const LaunchPlan& plan, const std::string& script, const std::string& dir, int grace_seconds = 10) {
  return run_local_ranks(plan, {"sh", "-c", script, "sh", dir}, grace_seconds, "/bin/sh");
}

// Each rank writes its pid to DIR/pid.RANK (atomically), then becomes `sleep 30`.
const std::string kWritePid = "echo $$ > \"$1/pid.$RANK.tmp\" && mv \"$1/pid.$RANK.tmp\" \"$1/pid.$RANK\"; ";

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The values of `name` in an `env` dump (more than one would mean a duplicated variable).
std::vector<std::string> values_of(const std::vector<std::string>& lines, const std::string& name) {
  std::vector<std::string> values;
  for (const auto& line : lines)
    if (line.rfind(name + "=", 0) == 0) values.push_back(line.substr(name.size() + 1));
  return values;
}

pid_t read_pid(const std::string& path) {
  std::ifstream in(path);
  pid_t pid = -1;
  in >> pid;
  return pid;
}

bool process_gone(pid_t pid) { return kill(pid, 0) == -1 && errno == ESRCH; }

// Waits (up to 10 s) until every rank has written its pid file, so that they are running.
bool wait_for_pids(const std::string& dir, int n) {
  for (auto until = Clock::now() + std::chrono::seconds(10); Clock::now() < until;) {
    int found = 0;
    for (int r = 0; r < n; ++r) found += fs::exists(dir + "/pid." + std::to_string(r)) ? 1 : 0;
    if (found == n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(Launcher, EveryRankSeesItsEnvironment) {
  TempDir dir;
  ScopedEnv inherited("SWIFT_LAUNCHER_TEST_MARK", "inherited");
  ScopedEnv replaced("WORLD_SIZE", "99");  // the launcher's own value must not reach the ranks
  LaunchPlan plan = local_plan(3);
  plan.omp_threads_per_rank = 2;
  ASSERT_EQ(run_sh(plan, "env > \"$1/env.$RANK\"", dir.path), 0);
  std::string port;
  for (int r = 0; r < 3; ++r) {
    const auto env = lines_of(dir.path + "/env." + std::to_string(r));
    ASSERT_FALSE(env.empty()) << "rank " << r << " wrote no environment";
    EXPECT_EQ(values_of(env, "RANK"), std::vector<std::string>{std::to_string(r)});
    EXPECT_EQ(values_of(env, "LOCAL_RANK"), std::vector<std::string>{std::to_string(r)});
    EXPECT_EQ(values_of(env, "WORLD_SIZE"), std::vector<std::string>{"3"});
    EXPECT_EQ(values_of(env, "LOCAL_WORLD_SIZE"), std::vector<std::string>{"3"});
    EXPECT_EQ(values_of(env, "MASTER_ADDR"), std::vector<std::string>{"127.0.0.1"});
    EXPECT_EQ(values_of(env, "OMP_NUM_THREADS"), std::vector<std::string>{"2"});
    EXPECT_EQ(values_of(env, "SWIFT_LAUNCHER_TEST_MARK"), std::vector<std::string>{"inherited"});
    const auto ports = values_of(env, "MASTER_PORT");
    ASSERT_EQ(ports.size(), 1u);
    const int p = std::stoi(ports[0]);
    EXPECT_GT(p, 0);  // the free port picked for plan.master_port == 0
    EXPECT_LE(p, 65535);
    if (r == 0) port = ports[0];
    EXPECT_EQ(ports[0], port) << "every rank needs the same rendezvous port";
  }
}

TEST(Launcher, FailingRankStopsTheOthers) {
  TempDir dir;
  // Rank 1 fails once rank 0 is asleep; rank 0 would sleep 30 s.
  const std::string script = "if [ \"$RANK\" = 1 ]; then while [ ! -f \"$1/pid.0\" ]; do sleep 0.02; done; exit 3; fi; " +
                             kWritePid + "exec sleep 30";
  const auto start = Clock::now();
  EXPECT_EQ(run_sh(local_plan(2), script, dir.path), 3);
  EXPECT_LT(seconds_since(start), 10.0);
  const pid_t sleeper = read_pid(dir.path + "/pid.0");
  ASSERT_GT(sleeper, 0);
  EXPECT_TRUE(process_gone(sleeper));
}

TEST(Launcher, StragglerIsKilledAfterTheGracePeriod) {
  TempDir dir;
  // Rank 0 ignores SIGTERM: only the SIGKILL after grace_seconds (1) ends it.
  const std::string script = "if [ \"$RANK\" = 1 ]; then while [ ! -f \"$1/pid.0\" ]; do sleep 0.02; done; exit 4; fi; "
                             "trap '' TERM; " + kWritePid + "exec sleep 30";
  const auto start = Clock::now();
  EXPECT_EQ(run_sh(local_plan(2), script, dir.path, /*grace_seconds=*/1), 4);
  const double took = seconds_since(start);
  EXPECT_GE(took, 0.9);
  EXPECT_LT(took, 10.0);
  const pid_t straggler = read_pid(dir.path + "/pid.0");
  ASSERT_GT(straggler, 0);
  EXPECT_TRUE(process_gone(straggler));
}

TEST(Launcher, KilledRankGives128PlusSignal) {
  TempDir dir;
  const std::string script = "if [ \"$RANK\" = 1 ]; then kill -9 $$; fi; exec sleep 30";
  const auto start = Clock::now();
  EXPECT_EQ(run_sh(local_plan(2), script, dir.path), 137);
  EXPECT_LT(seconds_since(start), 10.0);
}

TEST(Launcher, ExecutableThatCannotRunFailsWith127) {
  EXPECT_EQ(run_local_ranks(local_plan(2), {"swift"}, 10, "/nonexistent/swift"), 127);
}

// Sends `signals` to this process (each after the previous one's pause) once both ranks run.
std::thread signal_when_running(const std::string& dir, std::vector<int> signals) {
  return std::thread([dir, signals] {
    if (!wait_for_pids(dir, 2)) return;  // the test fails on its own: run_local_ranks returns first
    for (int sig : signals) {
      kill(getpid(), sig);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });
}

TEST(Launcher, SigtermIsPassedOnToTheRanks) {
  TempDir dir;
  struct sigaction before {};
  sigaction(SIGTERM, nullptr, &before);
  auto sender = signal_when_running(dir.path, {SIGTERM});
  const auto start = Clock::now();
  const int status = run_sh(local_plan(2), kWritePid + "exec sleep 30", dir.path);
  sender.join();
  EXPECT_EQ(status, 128 + SIGTERM);
  EXPECT_LT(seconds_since(start), 10.0);
  EXPECT_TRUE(process_gone(read_pid(dir.path + "/pid.0")));
  EXPECT_TRUE(process_gone(read_pid(dir.path + "/pid.1")));
  struct sigaction after {};
  sigaction(SIGTERM, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler) << "the launcher's handler must not outlive it";
}

TEST(Launcher, SecondSigintKillsTheRanks) {
  TempDir dir;
  // The ranks ignore SIGINT: the first one passed on does nothing, the second makes the launcher kill them.
  auto sender = signal_when_running(dir.path, {SIGINT, SIGINT});
  const auto start = Clock::now();
  const int status = run_sh(local_plan(2), "trap '' INT; " + kWritePid + "exec sleep 30", dir.path);
  sender.join();
  EXPECT_EQ(status, 128 + SIGKILL);
  EXPECT_LT(seconds_since(start), 10.0);
}

TEST(Launcher, InterruptedRankExitStatusWins) {
  TempDir dir;
  // Rank 0 handles SIGINT and exits 5; rank 1 dies of it. The rank's own status says more than the signal.
  const std::string script = "if [ \"$RANK\" = 0 ]; then trap 'exit 5' INT; " + kWritePid +
                             "while :; do sleep 0.05; done; fi; " + kWritePid + "exec sleep 30";
  auto sender = signal_when_running(dir.path, {SIGINT});
  const int status = run_sh(local_plan(2), script, dir.path);
  sender.join();
  EXPECT_EQ(status, 5);
}

}  // namespace
}  // namespace swift::distributed
