// Learning-rate schedules: the learning rate at an optimizer step, computed exactly as Hugging Face
// transformers' get_scheduler (the LambdaLR lambdas in transformers/optimization.py) computes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace swift::train {

enum class LrSchedulerType { kLinear, kCosine, kConstant, kConstantWithWarmup, kCosineWithMinLr };

// "linear", "cosine", "constant", "constant_with_warmup", "cosine_with_min_lr" (transformers' SchedulerType
// values). Anything else throws UsageError naming --lr_scheduler_type and listing the supported types.
LrSchedulerType parse_lr_scheduler_type(std::string_view name);
std::string_view lr_scheduler_type_name(LrSchedulerType type);
// The supported names, comma-separated (for --help and error messages).
std::string lr_scheduler_type_names();

// The warmup length transformers uses: warmup_steps >= 1 is a step count (truncated); 0 < warmup_steps < 1
// is a ratio (transformers 5 folds warmup_ratio into warmup_steps); otherwise ceil(warmup_ratio * total_steps)
// (transformers 4's TrainingArguments.get_warmup_steps; math.ceil, so 0.1 * 30 gives 4, as in Python).
int64_t resolve_warmup_steps(double warmup_steps, double warmup_ratio, int64_t total_steps);

struct LrScheduleOptions {
  LrSchedulerType type = LrSchedulerType::kLinear;  // Default: linear (transformers' default)
  double learning_rate = 1e-4;                       // the optimizer's base lr. Default: 1e-4
  int64_t warmup_steps = 0;                          // Default: 0 (see resolve_warmup_steps)
  int64_t total_steps = 0;                           // optimizer steps of the whole run; needed by linear/cosine*
  double num_cycles = 0.5;                           // cosine waves. Default: 0.5 (half a cosine down to 0)
  // cosine_with_min_lr only, exactly one of them: the floor as an absolute lr or as a ratio of learning_rate.
  std::optional<double> min_lr;
  std::optional<double> min_lr_rate;
};

// A schedule is a pure function of the step: resuming at step k needs no state beyond the options.
class LrSchedule {
 public:
  // Validates the options (UsageError naming the flag at fault).
  explicit LrSchedule(LrScheduleOptions options);

  // The multiplier LambdaLR applies to the base lr after `step` scheduler steps (step 0 = first update).
  double factor(int64_t step) const;
  // learning_rate * factor(step): what torch.optim.lr_scheduler.LambdaLR.get_last_lr() reports.
  double lr(int64_t step) const { return options_.learning_rate * factor(step); }

  const LrScheduleOptions& options() const { return options_; }

 private:
  LrScheduleOptions options_;
  double min_lr_rate_ = 0.0;  // resolved for cosine_with_min_lr
};

}  // namespace swift::train
