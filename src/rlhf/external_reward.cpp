// A reward function outside swift (see reward_functions.h, external_reward): a command that reads one JSON line per
// completion on its stdin and answers one reward per line on its stdout, kept running for the whole run.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/rlhf/external_scorer.h"
#include "swift/rlhf/reward_functions.h"

extern char** environ;

namespace swift::rlhf {

namespace {

// The command's name for the metrics (rewards/<name>/mean): its program's file name without the extension (the
// script's, after an interpreter); External for a shell loop.
std::string command_name(const std::string& command) {
  std::string program = command.substr(0, command.find_first_of(" \t;"));
  for (const char* keyword : {"while", "for", "if", "until", "case", "{", "("})
    if (program == keyword) return "External";
  for (const char* interpreter : {"python", "python3", "bash", "sh", "node", "perl"})  // python3 score.py: score
    if (std::filesystem::path(program).filename() == interpreter) {
      const size_t start = command.find_first_not_of(" \t", program.size());
      if (start != std::string::npos) program = command.substr(start, command.find_first_of(" \t", start) - start);
    }
  const std::string stem = std::filesystem::path(program).stem().string();
  return stem.empty() ? "External" : stem;
}

class ExternalCommand : public RewardFunction {
 public:
  ExternalCommand(std::string command, double timeout_s)
      : command_(std::move(command)), name_(command_name(command_)), timeout_s_(timeout_s) {}
  ~ExternalCommand() override { stop(); }
  std::string name() const override { return name_; }

  std::vector<std::optional<double>> score(const std::vector<ScoredCompletion>& batch) const override {
    const std::string input = scorer_input(batch);
    try {
      if (pid_ < 0) start();
      const std::vector<std::optional<double>> rewards = exchange(input, batch.size());
      failures_.succeeded();
      return rewards;
    } catch (const ScorerFailure& e) {
      stop();
      return failures_.failed(e, batch.size(), ", and the command is started again for the next");
    }
  }

 private:

  void start() const {
    signal(SIGPIPE, SIG_IGN);  // a command that exits early must not kill the run through its closed pipe
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) throw ScorerFailure(std::string("no pipe: ") + std::strerror(errno));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    for (int fd : {in[0], in[1], out[0], out[1]}) posix_spawn_file_actions_addclose(&actions, fd);
    const char* argv[] = {"sh", "-c", command_.c_str(), nullptr};
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, "/bin/sh", &actions, nullptr, const_cast<char* const*>(argv), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    if (rc != 0) {
      close(in[1]);
      close(out[0]);
      throw ScorerFailure(std::string("cannot start it: ") + std::strerror(rc));
    }
    pid_ = pid;
    to_child_ = in[1];
    from_child_ = out[0];
    fcntl(to_child_, F_SETFL, fcntl(to_child_, F_GETFL) | O_NONBLOCK);
    fcntl(from_child_, F_SETFL, fcntl(from_child_, F_GETFL) | O_NONBLOCK);
    pending_.clear();
  }

  void stop() const {
    if (pid_ < 0) return;
    close(to_child_);
    close(from_child_);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  // Writes the batch's lines and reads as many answers, both at once (a command may answer before it has read
  // everything), within the timeout.
  std::vector<std::optional<double>> exchange(const std::string& input, size_t n) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
    size_t written = 0;
    std::vector<std::string> lines;
    while (lines.size() < n) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0)
        throw ScorerFailure("no answer within --reward_timeout " + std::to_string(static_cast<int64_t>(timeout_s_)) +
                            " s (" + std::to_string(lines.size()) + " of " + std::to_string(n) + " lines)");
      pollfd fds[2] = {{from_child_, POLLIN, 0}, {to_child_, POLLOUT, 0}};
      const int count = poll(fds, written < input.size() ? 2 : 1, static_cast<int>(std::min<int64_t>(left, 1000)));
      if (count < 0 && errno != EINTR) throw ScorerFailure(std::string("poll: ") + std::strerror(errno));
      if (written < input.size() && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
        const ssize_t w = write(to_child_, input.data() + written, input.size() - written);
        if (w < 0 && errno != EAGAIN) throw ScorerFailure("it stopped reading (" + std::string(std::strerror(errno)) + ")");
        if (w > 0) written += static_cast<size_t>(w);
      }
      if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buffer[65536];
        const ssize_t r = read(from_child_, buffer, sizeof buffer);
        if (r == 0) throw ScorerFailure("it exited after " + std::to_string(lines.size()) + " of " + std::to_string(n) + " lines");
        if (r < 0 && errno != EAGAIN) throw ScorerFailure(std::string("read: ") + std::strerror(errno));
        if (r > 0) pending_.append(buffer, static_cast<size_t>(r));
        for (size_t eol = pending_.find('\n'); eol != std::string::npos && lines.size() < n; eol = pending_.find('\n')) {
          lines.push_back(pending_.substr(0, eol));
          pending_.erase(0, eol + 1);
        }
      }
    }
    return parse_scorer_answer(lines, n);
  }

  std::string command_, name_;
  double timeout_s_;
  mutable pid_t pid_ = -1;
  mutable int to_child_ = -1, from_child_ = -1;
  mutable std::string pending_;
  mutable ScorerFailures failures_{"the reward command `" + command_ + "`", name_,
                                   "run it by hand on a line of JSON (docs/grpo.md, External reward functions)"};
};

}  // namespace

std::unique_ptr<RewardFunction> external_reward(const std::string& command, double timeout_s) {
  SWIFT_CHECK(!command.empty(), UsageError, "--reward_funcs external: names no command",
              "write it as external:COMMAND, e.g. 'external:python3 check_answer.py'");
  SWIFT_CHECK(timeout_s > 0, UsageError, "--reward_timeout must be positive", "e.g. 300 (seconds per generation batch)");
  return std::make_unique<ExternalCommand>(command, timeout_s);
}

}  // namespace swift::rlhf
