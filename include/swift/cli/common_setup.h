// The flags every command shares (cli::common_flags: --log_level, --device, --num_threads, ...), applied once at
// the start of a command.
#pragma once

#include <string>

#include "swift/cli/flags.h"

namespace swift::cli {

struct CommonSetup {
  std::string device;  // --device as given ("auto", "cpu", "cuda:1")
  int threads = 0;     // intra-op threads in force
};

// Starts logging at --log_level, sets the intra-op threads (--num_threads) and returns the device to run on.
CommonSetup apply_common_flags(const Flags& flags);

}  // namespace swift::cli
