// How every test reports a missing optional reference, the same way everywhere: a Python package a fixture could
// not import, a fixture's SKIPPED file, a reference script's exit 77. Outside CI that is a visible skip with the
// reason; under CI=true it is a failure, since scripts/setup.sh --tests installs every reference there.
// A missing GPU is different: CI has none, so it is always a visible skip, unless SWIFT_REQUIRE_GPU=1 (set by
// scripts/gpu_check.sh on a GPU machine) makes it a failure. Header-only: the LibTorch-free test executables use it.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace swift::test {

inline bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, value) == 0;
}
inline bool in_ci() { return env_is("CI", "true"); }
inline bool gpu_required() { return env_is("SWIFT_REQUIRE_GPU", "1"); }

}  // namespace swift::test

// In a test body or SetUp(): returns from it, skipped (or failed under CI=true), with `reason` (anything that
// streams into gtest's message).
#define SWIFT_REFERENCE_MISSING(reason)                                                   \
  do {                                                                                    \
    if (::swift::test::in_ci()) FAIL() << "reference missing under CI=true: " << reason;  \
    GTEST_SKIP() << reason;                                                               \
  } while (0)

// The same for a test that needs a CUDA device; `available` says whether there is one.
#define SWIFT_REQUIRE_GPU_OR_SKIP(available, reason)                                       \
  do {                                                                                     \
    if (!(available)) {                                                                    \
      if (::swift::test::gpu_required()) FAIL() << "SWIFT_REQUIRE_GPU=1 but " << reason;   \
      GTEST_SKIP() << reason;                                                              \
    }                                                                                      \
  } while (0)
