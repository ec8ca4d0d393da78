// A reward model scoring GRPO's completions (see reward_model_scorer.h).
#include "swift/rlhf/reward_model_scorer.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <algorithm>

#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/model/decoder.h"
#include "swift/model/family_registry.h"
#include "swift/quant/quantized_loading.h"
#include "swift/template/agent_template.h"
#include "swift/template/select.h"
#include "swift/template/template.h"
#include "swift/tokenizer/tokenizer.h"
#include "swift/tuners/lora.h"

namespace swift::rlhf {

std::string reward_model_name(const std::filesystem::path& dir) {
  const std::filesystem::path clean = dir.lexically_normal();
  const std::string name = (clean.has_filename() ? clean : clean.parent_path()).filename().string();
  return name.empty() ? dir.string() : name;
}

namespace {

class RewardModelScorer : public RewardFunction {
 public:
  RewardModelScorer(const RewardModelSpec& spec, model::LoadOptions load, int64_t batch_size)
      : name_(reward_model_name(spec.dir)), batch_size_(std::max<int64_t>(batch_size, 1)) {
    const std::string where = "--reward_model " + spec.dir.string();
    model_ = with_context("loading the reward model " + spec.dir.string(),
                          [&] { return quant::load_model(spec.dir, load, std::nullopt); });
    for (const auto& adapter : spec.adapters)
      with_context("loading --reward_adapters " + adapter.string(), [&] { return tuners::load_adapter(model_, adapter); });
    SWIFT_CHECK(model_->is_sequence_classifier(), UsageError,
                where + " has no score head (it is a causal LM" + (spec.adapters.empty() ? "" : ", and its adapters add none") + ")",
                "give a reward model: a *ForSequenceClassification folder, e.g. what swift rlhf --rlhf_type rm writes (or "
                "its base with --reward_adapters ADAPTER)");
    model_->eval();
    for (auto& p : model_->parameters()) p.set_requires_grad(false);
    tokenizer_ = with_context("loading the tokenizer of " + spec.dir.string(), [&] { return tokenizer::Tokenizer::load(spec.dir); });
    const std::string& model_type = model_->config().model_type;
    const auto* family = model::find_model_family(model_type, {});
    const auto has_token = [&](const std::string& t) { return tokenizer_->token_to_id(t).has_value(); };
    std::vector<std::filesystem::path> checkpoint_dirs(spec.adapters.begin(), spec.adapters.end());
    checkpoint_dirs.push_back(spec.dir);
    const auto choice = templates::choose_template(spec.template_name, checkpoint_dirs, family ? family->template_for(has_token) : "",
                                                   "the default for model_type " + model_type);
    chat_ = std::make_unique<templates::Template>(templates::find_template_meta(choice.name), *tokenizer_);
    if (const auto missing = chat_->missing_token())
      throw UsageError(where + ": template '" + choice.name + "' needs the token " + *missing + ", which its tokenizer lacks",
                       "name the reward model's template with --reward_template");
    pad_id_ = tokenizer_->pad_id().value_or(0);
    log_info("reward model ", spec.dir.string(), ": rewards logged as ", name_, ", template ", choice.name, " (", choice.source, ")");
  }

  std::string name() const override { return name_; }

  std::vector<std::optional<double>> score(const std::vector<ScoredCompletion>& batch) const override {
    torch::NoGradGuard no_grad;
    std::vector<std::optional<double>> out;
    out.reserve(batch.size());
    for (size_t start = 0; start < batch.size(); start += static_cast<size_t>(batch_size_)) {
      const size_t end = std::min(batch.size(), start + static_cast<size_t>(batch_size_));
      std::vector<std::vector<int64_t>> rows;
      for (size_t i = start; i < end; ++i) rows.push_back(encode(batch[i]));
      size_t longest = 0;
      for (const auto& r : rows) longest = std::max(longest, r.size());
      // Right-padded, as ms-swift's collator pads: the score is read at each row's last real token.
      at::Tensor ids = at::full({static_cast<int64_t>(rows.size()), static_cast<int64_t>(longest)}, pad_id_, at::kLong);
      at::Tensor mask = at::zeros_like(ids);
      for (size_t r = 0; r < rows.size(); ++r) {
        const auto n = static_cast<int64_t>(rows[r].size());
        ids[static_cast<int64_t>(r)].narrow(0, 0, n).copy_(at::tensor(rows[r], at::kLong));
        mask[static_cast<int64_t>(r)].narrow(0, 0, n).fill_(1);
      }
      model::ForwardArgs args;
      args.input_ids = ids.to(model_->device());
      const at::Tensor scores = model::sequence_scores(model_, args, mask).select(1, 0).to(at::kCPU, at::kDouble).contiguous();
      for (int64_t r = 0; r < scores.numel(); ++r) out.emplace_back(scores.data_ptr<double>()[r]);
    }
    return out;
  }

 private:
  // The prompt's conversation (and its tools) with the completion as the assistant's reply, as the reward model's
  // template encodes a training row.
  std::vector<int64_t> encode(const ScoredCompletion& c) const {
    SWIFT_CHECK(c.row && c.row->contains("messages"), DataError, "the reward model " + name_ + " reads each prompt's conversation",
                "GRPO rows carry it; this is a bug if you see it");
    nlohmann::json messages = c.row->at("messages");
    messages.push_back({{"role", "assistant"}, {"content", c.text}});
    const templates::Tools tools = templates::row_tools(*c.row);  // the row's tools, as the policy's prompt had them
    return chat_->encode(templates::conversation_from_json(messages), &tools).input_ids;
  }

  std::string name_;
  int64_t batch_size_;
  mutable model::CausalLM model_{nullptr};  // scoring runs the module (no state changes)
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  std::unique_ptr<templates::Template> chat_;
  int64_t pad_id_ = 0;
};

}  // namespace

std::unique_ptr<RewardFunction> reward_model_scorer(const RewardModelSpec& spec, model::LoadOptions load, int64_t batch_size) {
  return std::make_unique<RewardModelScorer>(spec, std::move(load), batch_size);
}

}  // namespace swift::rlhf
