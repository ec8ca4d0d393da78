// The transformers LambdaLR lambdas, transcribed operation for operation so results match to the last bit
// (same double arithmetic, same libm cos).
#include "swift/train/lr_schedule.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "swift/core/error.h"

namespace swift::train {

namespace {

constexpr std::array<std::pair<std::string_view, LrSchedulerType>, 5> kTypes = {{
    {"linear", LrSchedulerType::kLinear},
    {"cosine", LrSchedulerType::kCosine},
    {"constant", LrSchedulerType::kConstant},
    {"constant_with_warmup", LrSchedulerType::kConstantWithWarmup},
    {"cosine_with_min_lr", LrSchedulerType::kCosineWithMinLr},
}};

constexpr double kPi = 3.141592653589793;  // == Python's math.pi

// Warmup branch shared by linear and cosine*: float(step) / float(max(1, num_warmup_steps)).
double warmup_factor(int64_t step, int64_t warmup) {
  return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup));
}

// transformers' _get_cosine_schedule_with_warmup_lr_lambda (the min_lr_rate version, which is also what
// plain "cosine" calls: the later definition in optimization.py shadows the earlier one, min_lr_rate=0).
double cosine_factor(int64_t step, int64_t warmup, int64_t total, double num_cycles, double min_lr_rate) {
  if (step < warmup) return warmup_factor(step, warmup);
  const double progress =
      static_cast<double>(step - warmup) / static_cast<double>(std::max<int64_t>(1, total - warmup));
  double factor = 0.5 * (1.0 + std::cos(kPi * num_cycles * 2.0 * progress));
  factor = factor * (1 - min_lr_rate) + min_lr_rate;
  return std::max(0.0, factor);
}

}  // namespace

std::string lr_scheduler_type_names() {
  std::string names;
  for (const auto& [name, type] : kTypes) names += (names.empty() ? "" : ", ") + std::string(name);
  return names;
}

LrSchedulerType parse_lr_scheduler_type(std::string_view name) {
  for (const auto& [n, type] : kTypes)
    if (n == name) return type;
  throw UsageError("--lr_scheduler_type: unknown scheduler '" + std::string(name) + "'",
                   "supported: " + lr_scheduler_type_names());
}

std::string_view lr_scheduler_type_name(LrSchedulerType type) {
  for (const auto& [n, t] : kTypes)
    if (t == type) return n;
  SWIFT_ASSERT(false, "unnamed LrSchedulerType");
  return {};
}

int64_t resolve_warmup_steps(double warmup_steps, double warmup_ratio, int64_t total_steps) {
  SWIFT_CHECK(warmup_steps >= 0, UsageError, "--warmup_steps must be >= 0, got " + std::to_string(warmup_steps),
              "pass a step count (>= 1) or a ratio of the total steps (< 1)");
  SWIFT_CHECK(warmup_ratio >= 0 && warmup_ratio <= 1, UsageError,
              "--warmup_ratio must be in [0, 1], got " + std::to_string(warmup_ratio), "e.g. --warmup_ratio 0.05");
  if (warmup_steps >= 1) return static_cast<int64_t>(warmup_steps);
  const double ratio = warmup_steps > 0 ? warmup_steps : warmup_ratio;
  return static_cast<int64_t>(std::ceil(static_cast<double>(total_steps) * ratio));
}

LrSchedule::LrSchedule(LrScheduleOptions options) : options_(std::move(options)) {
  const auto& o = options_;
  SWIFT_CHECK(o.warmup_steps >= 0, UsageError, "--warmup_steps must be >= 0, got " + std::to_string(o.warmup_steps),
              "");
  SWIFT_CHECK(o.learning_rate > 0, UsageError,
              "--learning_rate must be > 0, got " + std::to_string(o.learning_rate), "e.g. --learning_rate 1e-4");
  const bool needs_total = o.type == LrSchedulerType::kLinear || o.type == LrSchedulerType::kCosine ||
                           o.type == LrSchedulerType::kCosineWithMinLr;
  SWIFT_CHECK(!needs_total || o.total_steps > 0, UsageError,
              "--lr_scheduler_type " + std::string(lr_scheduler_type_name(o.type)) +
                  " needs the total number of training steps, got " + std::to_string(o.total_steps),
              "set --num_train_epochs or --max_steps");
  if (o.type == LrSchedulerType::kCosineWithMinLr) {
    SWIFT_CHECK(o.min_lr.has_value() != o.min_lr_rate.has_value(), UsageError,
                "--lr_scheduler_type cosine_with_min_lr needs exactly one of min_lr and min_lr_rate",
                R"(e.g. --lr_scheduler_kwargs '{"min_lr_rate": 0.1}')");
    // transformers: min_lr_rate = min_lr / optimizer.defaults["lr"].
    min_lr_rate_ = o.min_lr ? *o.min_lr / o.learning_rate : *o.min_lr_rate;
  }
}

double LrSchedule::factor(int64_t step) const {
  const auto& o = options_;
  switch (o.type) {
    case LrSchedulerType::kConstant:
      return 1.0;
    case LrSchedulerType::kConstantWithWarmup:
      // float(step) / float(max(1.0, num_warmup_steps))
      if (step < o.warmup_steps) return warmup_factor(step, o.warmup_steps);
      return 1.0;
    case LrSchedulerType::kLinear:
      if (step < o.warmup_steps) return warmup_factor(step, o.warmup_steps);
      return std::max(0.0, static_cast<double>(o.total_steps - step) /
                               static_cast<double>(std::max<int64_t>(1, o.total_steps - o.warmup_steps)));
    case LrSchedulerType::kCosine:
      return cosine_factor(step, o.warmup_steps, o.total_steps, o.num_cycles, 0.0);
    case LrSchedulerType::kCosineWithMinLr:
      return cosine_factor(step, o.warmup_steps, o.total_steps, o.num_cycles, min_lr_rate_);
  }
  SWIFT_ASSERT(false, "unhandled LrSchedulerType");
  return 0.0;
}

}  // namespace swift::train
