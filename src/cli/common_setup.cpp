// The flags every command shares, applied (see common_setup.h).
#include "swift/cli/common_setup.h"

#include "swift/core/device.h"
#include "swift/core/logging.h"

namespace swift::cli {

CommonSetup apply_common_flags(const Flags& flags) {
  init_logging(flags.str("log_level"));
  CommonSetup setup;
  setup.threads = configure_threads(static_cast<int>(flags.integer("num_threads")));
  setup.device = flags.str("device");
  log_debug("intra-op threads: ", setup.threads);
  return setup;
}

}  // namespace swift::cli
