// A crash says so, names the bug to report, prints a stack and still dies of its signal (exit status 128 + signal).
#include <gtest/gtest.h>

#include <csignal>

#include "swift/core/crash_report.h"

namespace {

[[noreturn]] void crash() {
  swift::install_crash_report();
  std::raise(SIGSEGV);
  std::abort();  // not reached: the report ends with the signal's default action
}

TEST(CrashReport, AFatalSignalIsReportedWithAStackAndStillKills) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(crash(), testing::KilledBySignal(SIGSEGV),
              "swift crashed \\(segmentation fault\\).*this is a bug in swift; please report it.*\\[0x");
}

}  // namespace
