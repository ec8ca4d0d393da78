// The swift binary: picks the subcommand from an explicit table, runs its recipe, and turns errors into
// `error:` + `hint:` lines and exit codes (2 usage/config, 3 data/IO, 4 device/distributed, 1 internal; a crash
// reports its stack and dies of its signal, core/crash_report.h).
#include <unistd.h>

#include <c10/util/Exception.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <new>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "swift/cli/flags.h"
#include "swift/core/crash_report.h"
#include "swift/core/error.h"
#include "swift/distributed/launcher.h"
#include "swift/recipes/commands.h"


namespace {

// Commands that train: `NPROC_PER_NODE=N swift sft ...` turns this process into the launcher of N ranks.
const std::set<std::string> kLaunchableCommands = {"sft", "pt", "rlhf"};

void print_usage() {
  std::cout << "swift " << SWIFT_VERSION << ": native LLM fine-tuning toolkit (ms-swift command lines, LibTorch)\n\n"
            << "usage: swift <command> [config.yaml] [--flag value ...]\n\ncommands:\n";
  for (const auto& c : swift::recipes::commands()) std::printf("  %-10s %s\n", c.name.c_str(), c.summary.c_str());
  std::cout << "\n'swift <command> --help' lists a command's flags. 'swift --version' prints the version.\n";
}

// Started as `megatron` (the same binary under ms-swift's other entry point's name): its commands train, with the
// same flags (Megatron's spellings are aliases: --tp_size, --micro_batch_size, --use_bf16, ...).
const std::set<std::string> kMegatronCommands = {"sft", "pt", "rlhf", "export"};

bool started_as_megatron(const char* argv0) { return std::filesystem::path(argv0).filename() == "megatron"; }

int run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (started_as_megatron(argv[0]) && !args.empty() && args[0].rfind("-", 0) != 0 && args[0] != "help" &&
      kMegatronCommands.count(args[0]) == 0)
    throw swift::UsageError("megatron has no command '" + args[0] + "'",
                            "megatron runs sft, pt, rlhf and export; 'swift " + args[0] + "' runs the others");
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    if (args.size() < 2) {
      print_usage();
      return args.empty() ? 2 : 0;
    }
    args = {args[1], "--help"};
  }
  if (args[0] == "--version" || args[0] == "-V" || args[0] == "version") {
    std::cout << "swift " << SWIFT_VERSION << "\n";
    return 0;
  }
  const auto& table = swift::recipes::commands();
  for (const auto& c : table) {
    if (c.name != args[0]) continue;
    std::vector<std::string> rest(args.begin() + 1, args.end());
    if (swift::cli::wants_help(rest)) {
      std::cout << swift::cli::format_help(c.name, c.summary, c.flags());
      return 0;
    }
    if (kLaunchableCommands.count(c.name) > 0) {
      const auto plan = swift::distributed::launch_plan(swift::distributed::process_env(),
                                                   static_cast<int>(std::thread::hardware_concurrency()));
      if (plan) return swift::distributed::run_local_ranks(*plan, std::vector<std::string>(argv, argv + argc));
    }
    return c.run(rest);
  }
  std::vector<std::string> names;
  for (const auto& c : table) names.push_back(c.name);
  const std::string best = swift::cli::closest_match(args[0], names);
  throw swift::UsageError("unknown command '" + args[0] + "'",
                          (best.empty() ? std::string() : "did you mean 'swift " + best + "'? ") +
                              "'swift --help' lists the commands");
}

}  // namespace

// LibTorch's OpenMP (libgomp) spin-waits between parallel regions by default. When a core is busy with anything
// else (a shared or noisy machine, two ranks on one box, a data loader) that spinning costs 3-300x on small ops
// (docs/benchmarks.md). libgomp reads OMP_WAIT_POLICY once, when it is loaded, so when the user has not chosen a
// policy we set PASSIVE and re-execute ourselves once (about 0.3 s). SWIFT_NO_REEXEC=1 turns this off.
void prefer_passive_openmp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("SWIFT_NO_REEXEC")) return;
  setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  setenv("SWIFT_NO_REEXEC", "1", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: carry on with the default policy
}

// Out of memory (host or GPU): exit 4, with what to change.
int out_of_memory(const std::string& what) {
  std::fprintf(stderr, "error: out of memory: %s\n", what.c_str());
  std::fprintf(stderr, "hint: the log's memory estimate says what the job needs per rank; lower "
                       "--per_device_train_batch_size or --max_length, train LoRA, or shard over more ranks (--deepspeed)\n");
  return static_cast<int>(swift::ExitCode::kDevice);
}

int main(int argc, char** argv) {
  prefer_passive_openmp_wait(argv);
  swift::install_crash_report();  // a crash says so, with its stack, instead of a bare "Segmentation fault"
  try {
    return run(argc, argv);
  } catch (const swift::UserError& e) {
    std::fprintf(stderr, "error: %s\n", e.message().c_str());
    if (!e.hint().empty()) std::fprintf(stderr, "hint: %s\n", e.hint().c_str());
    return static_cast<int>(e.code());
  } catch (const std::filesystem::filesystem_error& e) {  // a path the system refused: the user's to fix
    std::fprintf(stderr, "error: %s\n", e.what());
    std::fprintf(stderr, "hint: check that the path exists, is readable (or writable) and its name is not too long\n");
    return static_cast<int>(swift::ExitCode::kData);
  } catch (const std::bad_alloc&) {  // a memory request that cannot be met is a resource problem, not a bug
    return out_of_memory("an allocation failed");
  } catch (const c10::OutOfMemoryError& e) {
    return out_of_memory(e.what_without_backtrace());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: internal error: %s\n", e.what());
    std::fprintf(stderr, "hint: this is a bug in swift; please report it with the command line\n");
    return static_cast<int>(swift::ExitCode::kInternal);
  }
}
