// Runs the Python reference scripts of tests/train/ with the .venv interpreter; exit code 77 from a script
// means "reference library missing": a visible skip, or a failure under CI=true (tests/skip.h).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include "skip.h"

namespace swift::test {

inline std::string train_reference_python() {
  if (const char* p = std::getenv("SWIFT_TEST_PYTHON"); p != nullptr && *p != '\0') return p;
  return std::string(SWIFT_SOURCE_DIR) + "/.venv/bin/python";
}

// A fresh folder under the system temp dir, removed when the object dies.
class TrainTempDir {
 public:
  TrainTempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("swift-train-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TrainTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

struct PythonResult {
  int rc = -1;
  std::string output;  // stdout + stderr
};

// Runs tests/train/<script> <args> and returns its exit code and output.
inline PythonResult run_train_script(const std::string& script, const std::string& args,
                                     const std::filesystem::path& scratch) {
  PythonResult r;
  const std::string python = train_reference_python();
  if (!std::filesystem::exists(python)) {
    r.rc = 77;
    r.output = "no Python at " + python + " (run scripts/setup.sh --tests or set SWIFT_TEST_PYTHON)";
    return r;
  }
  const auto log = scratch / (script + ".log");
  const std::string cmd = "'" + python + "' '" + SWIFT_SOURCE_DIR + "/tests/train/" + script + "' " + args + " > '" +
                          log.string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  r.output = ss.str();
  return r;
}

}  // namespace swift::test

// Skips (visibly, with the script's reason) when the reference is unavailable; fails on any other error.
#define SWIFT_RUN_REFERENCE_OR_SKIP(result)                                                      \
  do {                                                                                           \
    if ((result).rc == 77) SWIFT_REFERENCE_MISSING("reference unavailable: " << (result).output);   \
    ASSERT_EQ((result).rc, 0) << (result).output;                                                \
  } while (0)
