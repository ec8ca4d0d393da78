// The flags every command shares, applied (see common_setup.h).
#include "swift/cli/common_setup.h"

#include "swift/core/attention_kernel.h"
#include "swift/core/device.h"
#include "swift/core/logging.h"

namespace swift::cli {

CommonSetup apply_common_flags(const Flags& flags) {
  init_logging(flags.str("log_level"));
  CommonSetup setup;
  setup.threads = configure_threads(static_cast<int>(flags.integer("num_threads")));
  setup.device = flags.str("device");
  log_debug("intra-op threads: ", setup.threads);
  const AttentionKernel kernel =
      resolve_attention_kernel(flags.str("attn_impl"), flags.given("use_flash_attn"), flags.boolean("use_flash_attn"));
  use_attention_kernel(kernel);
  if (kernel != AttentionKernel::kAuto)
    log_info("attention: ", attention_kernel_name(kernel), " = ", attention_kernel_description(kernel));
  return setup;
}

}  // namespace swift::cli
