// The flag reader (src/cli/flags.cpp) on any command line or config file: with the input's first byte even, the
// rest is a YAML/JSON config file given as the first argument (as `swift sft config.yaml`); odd, the rest is the
// arguments themselves, split at NUL bytes. Every flag is then read as its type, as a command would.
#include "fuzz_input.h"
#include "swift/cli/flags.h"
#include "swift/core/error.h"

#include <vector>

namespace {

using swift::cli::FlagSpec;
using swift::cli::FlagType;

// One flag of each kind and shape sft has (an alias included).
const std::vector<FlagSpec>& specs() {
  static const std::vector<FlagSpec> s = {
      {"model", FlagType::kString, "", "model"},
      {"train_type", FlagType::kString, "lora", "tuner", {"sft_type"}},
      {"learning_rate", FlagType::kFloat, "1e-4", "lr"},
      {"max_steps", FlagType::kInt, "-1", "steps"},
      {"gradient_checkpointing", FlagType::kBool, "true", "checkpointing"},
      {"dataset", FlagType::kList, "", "datasets"},
      {"target_modules", FlagType::kList, "all-linear", "modules"},
      {"lora_alpha", FlagType::kFloat, "32", "alpha"},
      {"seed", FlagType::kInt, "42", "seed"},
  };
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::vector<std::string> args;
  const std::string rest(swift::fuzz::as_text(data + 1, size - 1));
  if (data[0] % 2 == 0) {
    args.push_back(swift::fuzz::write_file("config.yaml", rest).string());
  } else {
    size_t start = 0;
    for (size_t i = 0; i <= rest.size(); ++i) {
      if (i == rest.size() || rest[i] == '\0') {
        args.push_back(rest.substr(start, i - start));
        start = i + 1;
      }
    }
  }
  try {
    const auto flags = swift::cli::parse_flags("sft", specs(), args);
    for (const auto& spec : specs()) {
      try {
        switch (spec.type) {
          case FlagType::kString: (void)flags.str(spec.name); break;
          case FlagType::kInt: (void)flags.integer(spec.name); break;
          case FlagType::kFloat: (void)flags.number(spec.name); break;
          case FlagType::kBool: (void)flags.boolean(spec.name); break;
          case FlagType::kList: (void)flags.list(spec.name); break;
        }
      } catch (const swift::UserError&) {
      }
    }
  } catch (const swift::UserError&) {
  }
  return 0;
}
