// The process-wide ZeRO-3 hook (see the header).
#include "swift/model/param_sharding.h"

#include <atomic>

namespace swift::model {

namespace {
std::atomic<ParamSharding*> g_sharding{nullptr};
}  // namespace

void set_param_sharding(ParamSharding* sharding) { g_sharding = sharding; }
ParamSharding* param_sharding() { return g_sharding; }

}  // namespace swift::model
