// The table of subcommands `swift` offers. Only commands that work are listed.
#include "swift/recipes/commands.h"

namespace swift::recipes {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"sft", "Supervised fine-tuning, full or LoRA, on chat data (ms-swift's command line).", sft_flags, run_sft},
      {"pt", "Pretraining / continued pretraining on plain text, loss on every token.", pt_flags, run_pt},
      {"rlhf", "Preference alignment on chosen/rejected pairs: DPO, CPO, SimPO, ORPO (LoRA, QLoRA or full).",
       rlhf_flags, run_rlhf},
      {"infer", "Chat with a model, or answer every row of --val_dataset into a JSONL file.", infer_flags, run_infer},
      {"export", "Write a model as a Hugging Face folder: re-shard, cast dtype, or initialise from config.json.",
       export_flags, run_export},
      {"merge-lora", "Fold a LoRA/DoRA adapter into its base model (swift export --merge_lora true; ms-swift's alias).",
       export_flags, run_merge_lora},
      {"deploy", "Serve a model behind the OpenAI API (chat, completions, streaming) with continuous batching.",
       deploy_flags, run_deploy},
  };
  return table;
}

}  // namespace swift::recipes
