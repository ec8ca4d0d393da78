// The NPROC_PER_NODE launcher: plans the local ranks from the environment, then supervises them like torchrun
// (fork + exec of the same binary, signals passed on, the whole job stopped when one rank fails).
#include "swift/distributed/launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <utility>
#include <thread>

#include "swift/core/error.h"
#include "swift/core/logging.h"

extern char** environ;

namespace swift::distributed {

namespace {

bool is_set(const EnvLookup& env, const char* name) {
  const char* value = env(name);
  return value != nullptr && *value != '\0';
}

int at_least_one(const EnvLookup& env, const char* name) {
  const int value = env_int(env, name).value_or(1);
  if (value < 1)
    throw UsageError(std::string(name) + "=" + std::to_string(value) + " must be at least 1",
                     "unset it, or set it to a positive count");
  return value;
}

// Written by the signal handler, read by the supervising loop.
volatile sig_atomic_t g_signal_count = 0;
volatile sig_atomic_t g_sigint_count = 0;
volatile sig_atomic_t g_last_signal = 0;

void on_launcher_signal(int sig) {
  g_last_signal = sig;
  g_signal_count = g_signal_count + 1;
  if (sig == SIGINT) g_sigint_count = g_sigint_count + 1;
}

// The launcher's SIGINT/SIGTERM handlers for its lifetime; the old ones come back after (and in the children).
class SignalScope {
 public:
  SignalScope() {
    g_signal_count = g_sigint_count = g_last_signal = 0;
    install(SIGINT, old_int_);
    install(SIGTERM, old_term_);
  }
  ~SignalScope() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  // In a forked child before exec: async-signal-safe.
  void restore_in_child() const {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  static void install(int sig, struct sigaction& old) {
    struct sigaction action {};
    action.sa_handler = on_launcher_signal;
    sigemptyset(&action.sa_mask);
    sigaction(sig, &action, &old);
    // A signal the caller ignores (a background job's SIGINT) stays ignored.
    if (old.sa_handler == SIG_IGN) sigaction(sig, &old, nullptr);
  }
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

struct Rank {
  int rank = 0;
  pid_t pid = -1;
  bool alive = false;
};

// The running ranks. Leaving early (an exception) kills and reaps them: no orphans, no zombies.
class RankSet {
 public:
  ~RankSet() {
    for (auto& r : ranks)
      if (r.alive) {
        kill(r.pid, SIGKILL);
        waitpid(r.pid, nullptr, 0);
      }
  }
  void signal_all(int sig) const {
    for (const auto& r : ranks)
      if (r.alive) kill(r.pid, sig);
  }
  int alive() const {
    return static_cast<int>(std::count_if(ranks.begin(), ranks.end(), [](const Rank& r) { return r.alive; }));
  }
  std::vector<Rank> ranks;
};

const char* signal_name(int sig) {
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGSEGV: return "SIGSEGV";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: return strsignal(sig);
  }
}

// The shell's convention: the exit status, or 128 + the signal that killed it.
int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  const int sig = WTERMSIG(status);
  return "was killed by signal " + std::to_string(sig) + " (" + signal_name(sig) + ")";
}

// A port free now on 127.0.0.1 (the kernel's pick). Another process could take it before rank 0 binds it, as
// with torchrun's own choice; MASTER_PORT avoids the race.
int pick_free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  const bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int error = errno;
  if (fd >= 0) close(fd);
  if (!ok)
    throw DeviceError(std::string("could not find a free TCP port on 127.0.0.1: ") + std::strerror(error),
                      "set MASTER_PORT to a free port");
  return ntohs(addr.sin_port);
}

// The parent's environment with the rank's variables added or replaced.
std::vector<std::string> child_environment(const std::vector<std::string>& rank_vars) {
  std::set<std::string> names;
  for (const auto& var : rank_vars) names.insert(var.substr(0, var.find('=')));
  std::vector<std::string> out;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text(*entry);
    if (names.count(text.substr(0, text.find('='))) == 0) out.push_back(text);
  }
  out.insert(out.end(), rank_vars.begin(), rank_vars.end());
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

pid_t spawn(const std::string& executable, std::vector<std::string> argv, std::vector<std::string> env,
            const SignalScope& signals) {
  auto argv_c = c_strings(argv);
  auto env_c = c_strings(env);
  const std::string exec_failed = "error: the launcher could not execute " + executable + "\n";
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0)
    throw DeviceError(std::string("could not start a rank: fork failed: ") + std::strerror(errno),
                      "too many processes or too little memory; lower NPROC_PER_NODE");
  if (pid == 0) {
    // Only async-signal-safe calls until exec: the parent may have threads.
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a rank dies with its launcher, even one killed by SIGKILL
    if (getppid() != parent) _exit(1);
    signals.restore_in_child();
    execve(executable.c_str(), argv_c.data(), env_c.data());
    ssize_t ignored = write(STDERR_FILENO, exec_failed.data(), exec_failed.size());
    (void)ignored;
    _exit(127);
  }
  return pid;
}

}  // namespace

std::optional<LaunchPlan> launch_plan(const EnvLookup& env, int hardware_threads) {
  if (is_set(env, "RANK")) return std::nullopt;
  LaunchPlan plan;
  plan.nproc_per_node = at_least_one(env, "NPROC_PER_NODE");
  plan.nnodes = at_least_one(env, "NNODES");
  if (plan.nproc_per_node == 1 && plan.nnodes == 1) return std::nullopt;

  const bool slurm_step = inside_slurm_step(env);
  if (auto node_rank = env_int(env, "NODE_RANK")) {
    plan.node_rank = *node_rank;
  } else if (slurm_step) {
    plan.node_rank = env_int(env, "SLURM_NODEID").value_or(0);
  }
  if (plan.node_rank < 0 || plan.node_rank >= plan.nnodes)
    throw UsageError("NODE_RANK=" + std::to_string(plan.node_rank) + " is outside [0, NNODES=" +
                         std::to_string(plan.nnodes) + ")",
                     "number the nodes 0 .. NNODES-1, with MASTER_ADDR on node 0");

  if (is_set(env, "MASTER_ADDR")) {
    plan.master_addr = env("MASTER_ADDR");
  } else if (plan.nnodes > 1) {
    const char* list_var = is_set(env, "SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST" : "SLURM_JOB_NODELIST";
    std::vector<std::string> hosts;
    if (slurm_step && is_set(env, list_var))
      hosts = with_context(list_var, [&] { return expand_slurm_hostlist(env(list_var)); });
    if (hosts.empty())
      throw UsageError("several nodes need MASTER_ADDR (NNODES=" + std::to_string(plan.nnodes) + ")",
                       "export MASTER_ADDR=<address of the NODE_RANK=0 node> and the same MASTER_PORT on every "
                       "node (under srun it defaults to the first host of the job)");
    plan.master_addr = hosts.front();
  }

  if (auto port = env_int(env, "MASTER_PORT")) {
    if (*port < 1 || *port > 65535)
      throw UsageError("MASTER_PORT=" + std::to_string(*port) + " is not a TCP port",
                       "use a free port in 1..65535, e.g. 29500");
    plan.master_port = *port;
  } else {
    plan.master_port = plan.nnodes > 1 ? 29500 : 0;
  }

  if (!is_set(env, "OMP_NUM_THREADS"))
    plan.omp_threads_per_rank = std::max(1, hardware_threads / plan.nproc_per_node);
  return plan;
}

std::vector<std::string> rank_environment(const LaunchPlan& plan, int local_rank) {
  const std::string rank = std::to_string(plan.node_rank * plan.nproc_per_node + local_rank);
  const std::string world = std::to_string(plan.nnodes * plan.nproc_per_node);
  const std::string node = std::to_string(plan.node_rank);
  std::vector<std::string> vars = {
      "RANK=" + rank,
      "LOCAL_RANK=" + std::to_string(local_rank),
      "WORLD_SIZE=" + world,
      "LOCAL_WORLD_SIZE=" + std::to_string(plan.nproc_per_node),
      "GROUP_RANK=" + node,
      "NODE_RANK=" + node,
      "ROLE_RANK=" + rank,
      "ROLE_WORLD_SIZE=" + world,
      "MASTER_ADDR=" + plan.master_addr,
      "MASTER_PORT=" + std::to_string(plan.master_port),
  };
  if (plan.omp_threads_per_rank > 0)
    vars.push_back("OMP_NUM_THREADS=" + std::to_string(plan.omp_threads_per_rank));
  return vars;
}

int run_local_ranks(const LaunchPlan& plan, const std::vector<std::string>& argv, int grace_seconds,
                    const std::string& executable) {
  using Clock = std::chrono::steady_clock;
  LaunchPlan resolved = plan;
  if (resolved.master_port == 0) resolved.master_port = pick_free_port();
  log_info("launching ", resolved.nproc_per_node, " ranks (world ", resolved.nnodes * resolved.nproc_per_node,
           ", node ", resolved.node_rank, " of ", resolved.nnodes, ", master ", resolved.master_addr, ":",
           resolved.master_port, ")");
  if (resolved.omp_threads_per_rank > 0)
    log_info("OMP_NUM_THREADS=", resolved.omp_threads_per_rank, " per rank (set it to override)");

  SignalScope signals;
  RankSet ranks;
  ranks.ranks.reserve(resolved.nproc_per_node);
  for (int local = 0; local < resolved.nproc_per_node; ++local) {
    Rank r;
    r.rank = resolved.node_rank * resolved.nproc_per_node + local;
    r.pid = spawn(executable, argv, child_environment(rank_environment(resolved, local)), signals);
    r.alive = true;
    ranks.ranks.push_back(r);
  }

  int failure = 0;        // the first failing rank's code, when we stopped the job for it
  bool stopping = false;  // SIGTERM sent after that failure; SIGKILL at the deadline
  bool killed = false;
  Clock::time_point deadline;
  bool interrupted = false;  // the user's SIGINT/SIGTERM went to the ranks
  int interrupted_exit = 0, interrupted_signal = 0;
  int signals_seen = 0;
  while (ranks.alive() > 0) {
    if (g_signal_count != signals_seen) {
      signals_seen = g_signal_count;
      const int sig = g_last_signal;
      if (g_sigint_count >= 2) {
        if (!killed) log_warn("second SIGINT: killing the ranks");
        ranks.signal_all(SIGKILL);
        killed = true;
      } else {
        log_warn("received ", signal_name(sig), ": passing it on to the ranks",
                 sig == SIGINT ? " (again to kill them)" : "");
        ranks.signal_all(sig);
      }
      interrupted = true;
    }
    // Reap first, then judge: "stopping the other ranks" only when some still run.
    std::vector<std::pair<const Rank*, int>> ended;
    for (auto& r : ranks.ranks) {
      if (!r.alive) continue;
      int status = 0;
      const pid_t got = waitpid(r.pid, &status, WNOHANG);
      if (got == 0 || (got < 0 && errno == EINTR)) continue;
      r.alive = false;
      if (got > 0) ended.emplace_back(&r, status);  // got < 0: reaped by someone else; nothing to tell
    }
    // A signal that arrived after the check above (a terminal's Ctrl-C reaches the ranks directly too) makes
    // these ends part of the interruption, not a failure to report; it is passed on at the next turn.
    const bool signal_pending = g_signal_count != signals_seen;
    for (const auto& [r, status] : ended) {
      const int code = exit_code(status);
      if (code == 0 || stopping) continue;  // stopping: one of the ranks we stopped
      if (interrupted || signal_pending) {
        if (WIFEXITED(status) && interrupted_exit == 0) interrupted_exit = code;
        if (!WIFEXITED(status) && interrupted_signal == 0) interrupted_signal = code;
        continue;
      }
      const bool others = ranks.alive() > 0;
      log_error("rank ", r->rank, " (pid ", r->pid, ") ", describe_status(status),
                others ? "; stopping the other ranks" : "");
      failure = code;
      stopping = true;
      ranks.signal_all(SIGTERM);
      deadline = Clock::now() + std::chrono::seconds(grace_seconds);
    }
    if (stopping && !killed && Clock::now() >= deadline && ranks.alive() > 0) {
      log_warn(ranks.alive(), " rank(s) still running ", grace_seconds, " s after SIGTERM: killing them");
      ranks.signal_all(SIGKILL);
      killed = true;
    }
    if (ranks.alive() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (stopping) return failure;
  if (g_signal_count != signals_seen) interrupted = true;  // the last ranks ended on a signal not yet passed on
  if (interrupted) return interrupted_exit != 0 ? interrupted_exit : interrupted_signal;
  return 0;
}

}  // namespace swift::distributed
