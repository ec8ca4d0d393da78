// Reads the distributed environment that torchrun, swift's launcher or srun leave for a rank, and expands
// Slurm's compressed host lists.
#include "swift/distributed/env.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "swift/core/error.h"

namespace swift::distributed {

namespace {

std::optional<std::string> lookup(const EnvLookup& env, const char* name) {
  const char* value = env(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

// A set but empty variable counts as unset: `export RANK=` is how people clear one in a script.
bool is_set(const EnvLookup& env, const char* name) {
  const char* value = env(name);
  return value != nullptr && *value != '\0';
}

int parse_int(const std::string& name, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || end == text.c_str() || *end != '\0' || errno == ERANGE || value < INT_MIN ||
      value > INT_MAX)
    throw UsageError(name + "='" + text + "' is not a number",
                     "set " + name + " to a whole number, or unset it");
  return static_cast<int>(value);
}

// "4(x2),3" -> {4, 4, 3}: tasks on each node of the step, in node order.
std::vector<int> tasks_per_node(const std::string& name, const std::string& text) {
  std::vector<int> counts;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    int repeat = 1;
    const auto paren = item.find('(');
    if (paren != std::string::npos) {
      if (item.size() < paren + 4 || item.compare(paren, 2, "(x") != 0 || item.back() != ')')
        throw UsageError(name + "='" + text + "' is not a Slurm task count list",
                         "expected counts like 4(x2),3");
      repeat = parse_int(name, item.substr(paren + 2, item.size() - paren - 3));
      item = item.substr(0, paren);
    }
    if (repeat < 1 || repeat > 1000000)
      throw UsageError(name + "='" + text + "' repeats a count " + std::to_string(repeat) + " times",
                       "expected counts like 4(x2),3");
    const int count = parse_int(name, item);
    for (int i = 0; i < repeat; ++i) counts.push_back(count);
  }
  return counts;
}

void check_rank(const DistEnv& d, const char* rank_var, const char* world_var) {
  if (d.world_size < 1)
    throw UsageError(std::string(world_var) + "=" + std::to_string(d.world_size) + " must be at least 1",
                     "the launcher sets it to the number of processes in the job");
  if (d.rank < 0 || d.rank >= d.world_size)
    throw UsageError(std::string(rank_var) + "=" + std::to_string(d.rank) + " is outside [0, " +
                         std::to_string(d.world_size) + ") given by " + world_var + "=" +
                         std::to_string(d.world_size),
                     "each process needs a distinct rank below the world size");
  if (d.local_world_size < 1 || d.local_rank < 0 || d.local_rank >= d.local_world_size)
    throw UsageError("local rank " + std::to_string(d.local_rank) + " is outside [0, " +
                         std::to_string(d.local_world_size) + ") (the processes on this node)",
                     "check LOCAL_RANK / LOCAL_WORLD_SIZE (or Slurm's tasks per node)");
  if (d.master_port < 1 || d.master_port > 65535)
    throw UsageError("MASTER_PORT=" + std::to_string(d.master_port) + " is not a TCP port",
                     "use a free port in 1..65535, e.g. 29500");
}

DistEnv read_torchrun(const EnvLookup& env) {
  DistEnv d;
  d.source = "torchrun";
  d.rank = *env_int(env, "RANK");
  auto world = env_int(env, "WORLD_SIZE");
  if (!world)
    throw UsageError("RANK is set but WORLD_SIZE is not",
                     "set both (torchrun and `NPROC_PER_NODE=N swift ...` do), or neither for one process");
  d.world_size = *world;
  d.local_rank = env_int(env, "LOCAL_RANK").value_or(d.rank);
  d.local_world_size = env_int(env, "LOCAL_WORLD_SIZE").value_or(d.world_size);
  d.node_rank = is_set(env, "GROUP_RANK") ? *env_int(env, "GROUP_RANK") : env_int(env, "NODE_RANK").value_or(0);
  if (is_set(env, "MASTER_ADDR")) d.master_addr = *lookup(env, "MASTER_ADDR");
  d.master_port = env_int(env, "MASTER_PORT").value_or(29500);
  check_rank(d, "RANK", "WORLD_SIZE");
  return d;
}

DistEnv read_slurm(const EnvLookup& env) {
  DistEnv d;
  d.source = "slurm";
  d.rank = *env_int(env, "SLURM_PROCID");
  const char* world_var = is_set(env, "SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
  d.world_size = env_int(env, world_var).value_or(1);
  if (d.world_size == 1 && d.rank == 0) return DistEnv{};
  d.local_rank = env_int(env, "SLURM_LOCALID").value_or(0);
  d.node_rank = env_int(env, "SLURM_NODEID").value_or(0);
  if (auto per_node = env_int(env, "SLURM_NTASKS_PER_NODE")) {
    d.local_world_size = *per_node;
  } else if (is_set(env, "SLURM_STEP_TASKS_PER_NODE")) {
    const auto counts = tasks_per_node("SLURM_STEP_TASKS_PER_NODE", *lookup(env, "SLURM_STEP_TASKS_PER_NODE"));
    // This node's own count: nodes may differ ("4(x2),3").
    const bool ours = d.node_rank >= 0 && d.node_rank < static_cast<int>(counts.size());
    d.local_world_size = counts.empty() ? 1 : counts[ours ? d.node_rank : 0];
  } else {
    int nodes = 1;
    for (const char* name : {"SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES", "SLURM_NNODES"})
      if (is_set(env, name)) {
        nodes = *env_int(env, name);
        break;
      }
    d.local_world_size = nodes > 0 ? (d.world_size + nodes - 1) / nodes : d.world_size;
  }
  if (is_set(env, "MASTER_ADDR")) {
    d.master_addr = *lookup(env, "MASTER_ADDR");
  } else {
    const char* list_var = is_set(env, "SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST" : "SLURM_JOB_NODELIST";
    if (!is_set(env, list_var))
      throw UsageError("inside a Slurm step without MASTER_ADDR or SLURM_JOB_NODELIST",
                       "export MASTER_ADDR=<first node's address> in the batch script");
    const auto hosts =
        with_context(list_var, [&] { return expand_slurm_hostlist(*lookup(env, list_var)); });
    if (hosts.empty())
      throw UsageError(std::string(list_var) + " is empty", "export MASTER_ADDR=<first node's address>");
    d.master_addr = hosts.front();
  }
  d.master_port = env_int(env, "MASTER_PORT").value_or(29500);
  check_rank(d, "SLURM_PROCID", world_var);
  return d;
}

void append_range(const std::string& list, const std::string& prefix, const std::string& range,
                  std::vector<std::string>& out);

// One host entry (no top-level commas): prefix[ranges]rest, where rest may hold further bracket groups.
void expand_entry(const std::string& list, const std::string& entry, std::vector<std::string>& out) {
  const auto open = entry.find('[');
  const auto stray_close = entry.find(']');
  if (open == std::string::npos) {
    if (stray_close != std::string::npos)
      throw UsageError("Slurm host list '" + list + "' has an unbalanced ']'", "expected e.g. node[01-04,7]");
    out.push_back(entry);
    return;
  }
  const auto close = entry.find(']', open);
  if (close == std::string::npos || stray_close < open)
    throw UsageError("Slurm host list '" + list + "' has an unbalanced bracket", "expected e.g. node[01-04,7]");
  const std::string prefix = entry.substr(0, open);
  const std::string inside = entry.substr(open + 1, close - open - 1);
  if (inside.find('[') != std::string::npos)
    throw UsageError("Slurm host list '" + list + "' has nested brackets", "expected e.g. node[01-04,7]");
  std::vector<std::string> heads;
  std::stringstream ranges(inside);
  std::string range;
  while (std::getline(ranges, range, ',')) append_range(list, prefix, range, heads);
  if (heads.empty())
    throw UsageError("Slurm host list '" + list + "' has an empty bracket", "expected e.g. node[01-04,7]");
  std::vector<std::string> tails;
  expand_entry(list, entry.substr(close + 1), tails);
  for (const auto& head : heads)
    for (const auto& tail : tails) out.push_back(head + tail);
}

bool all_digits(const std::string& s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// "01-03" -> prefix01 prefix02 prefix03: the start's width is the zero padding.
void append_range(const std::string& list, const std::string& prefix, const std::string& range,
                  std::vector<std::string>& out) {
  const auto dash = range.find('-');
  const std::string first = range.substr(0, dash);
  const std::string last = dash == std::string::npos ? first : range.substr(dash + 1);
  if (!all_digits(first) || !all_digits(last))
    throw UsageError("Slurm host list '" + list + "' has a bad range '" + range + "'",
                     "ranges are numbers like 7 or 01-04");
  const int lo = std::stoi(first), hi = std::stoi(last);
  if (hi < lo)
    throw UsageError("Slurm host list '" + list + "' has a bad range '" + range + "' (end before start)",
                     "ranges go up, like 01-04");
  for (int i = lo; i <= hi; ++i) {
    std::string number = std::to_string(i);
    if (number.size() < first.size()) number.insert(0, first.size() - number.size(), '0');
    out.push_back(prefix + number);
  }
}

}  // namespace

std::string DistEnv::describe() const {
  return "rank " + std::to_string(rank) + " of " + std::to_string(world_size) + " (local " +
         std::to_string(local_rank) + " of " + std::to_string(local_world_size) + ", node " +
         std::to_string(node_rank) + "; " + source + "; master " + master_addr + ":" +
         std::to_string(master_port) + ")";
}

std::optional<int> env_int(const EnvLookup& env, const char* name) {
  if (!is_set(env, name)) return std::nullopt;
  return parse_int(name, *lookup(env, name));
}

// Ids from 4294967290 up are Slurm's pseudo steps (batch script, extern, interactive): one process, not srun's.
bool inside_slurm_step(const EnvLookup& env) {
  const char* name = is_set(env, "SLURM_STEP_ID") ? "SLURM_STEP_ID" : "SLURM_STEPID";
  if (!is_set(env, name)) return false;
  const std::string text = *lookup(env, name);
  char* end = nullptr;
  const unsigned long long id = std::strtoull(text.c_str(), &end, 10);
  return *end != '\0' || id < 4294967290ULL;
}

EnvLookup process_env() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

DistEnv read_dist_env(const EnvLookup& env) {
  if (is_set(env, "RANK")) return read_torchrun(env);
  if (inside_slurm_step(env) && is_set(env, "SLURM_PROCID")) return read_slurm(env);
  return DistEnv{};
}

std::vector<std::string> expand_slurm_hostlist(const std::string& list) {
  std::vector<std::string> hosts;
  int depth = 0;
  std::string entry;
  auto flush = [&] {
    if (!entry.empty()) expand_entry(list, entry, hosts);
    entry.clear();
  };
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']' && --depth < 0)
      throw UsageError("Slurm host list '" + list + "' has an unbalanced ']'", "expected e.g. node[01-04,7]");
    if (c == ',' && depth == 0) {
      flush();
    } else if (c != ' ') {
      entry += c;
    }
  }
  if (depth != 0)
    throw UsageError("Slurm host list '" + list + "' has an unbalanced '['", "expected e.g. node[01-04,7]");
  flush();
  return hosts;
}

}  // namespace swift::distributed
