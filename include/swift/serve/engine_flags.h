// ms-swift's --infer_backend and the flags of the engines it can hand inference to (vLLM, SGLang, LMDeploy), as
// swift's one built-in engine takes them, so that pasted infer / deploy command lines run. The limits they share
// with swift are aliases of its own flags (--vllm_max_model_len is --max_model_len, --vllm_max_num_seqs is
// --max_batch_size: see infer.cpp / deploy.cpp); the rest are read here and each explained by a log line.
#pragma once

#include <string>
#include <vector>

#include "swift/cli/flags.h"

namespace swift::serve {

// --infer_backend and the engine flags that have no swift equivalent.
std::vector<cli::FlagSpec> engine_flags();

// One log line per engine flag given (and for --infer_backend other than transformers/pt): what serves the
// requests instead and what the flag changes. UsageError for a backend ms-swift does not have.
std::vector<std::string> engine_notes(const cli::Flags& flags);

}  // namespace swift::serve
