// Loading the rows of a training job and the template that encodes them (see training_rows.h).
#include "swift/data/training_rows.h"

#include "swift/template/agent_template.h"
#include "swift/template/select.h"
#include "swift/template/template_meta.h"

namespace swift::data {

TrainingTemplate training_template(const DataOptions& options, const tokenizer::Tokenizer& tokenizer,
                                   const std::filesystem::path& model_dir, const std::string& family_default,
                                   const std::string& model_type) {
  TrainingTemplate t;  // name "": plain text
  if (options.use_chat_template) {
    t.name = templates::choose_template(options.template_name, {model_dir}, family_default,
                                        "the default for model_type " + model_type).name;
  }
  const auto scale = effective_loss_scale(options, t.name);
  templates::TemplateOptions template_options;
  template_options.system = options.system;
  template_options.row_kind = options.row_kind;
  template_options.add_non_thinking_prefix = options.add_non_thinking_prefix;
  template_options.loss_rule = scale.rule;
  template_options.ignore_empty_think = scale.ignore_empty_think;
  if (!options.agent_template.empty()) template_options.agent_template = templates::parse_agent_template(options.agent_template);
  t.chat = std::make_unique<templates::Template>(
      t.name.empty() ? templates::plain_text_template_meta() : templates::find_template_meta(t.name), tokenizer,
      template_options);
  return t;
}

std::string resolved_loss_scale(const DataOptions& options, const std::string& template_name) {
  return templates::loss_scale_name(effective_loss_scale(options, template_name));
}

templates::LossScale effective_loss_scale(const DataOptions& options, const std::string& template_name) {
  templates::LossScale scale = templates::parse_loss_scale(options.loss_scale);
  // As ms-swift's TemplateArguments._set_loss_scale: a hybrid thinking template (qwen3: it thinks, and has an empty
  // think block for replies that do not) puts no loss on that block unless --disable_ignore_empty_think.
  if (!template_name.empty() && !options.disable_ignore_empty_think) {
    const auto& meta = templates::find_template_meta(template_name);
    if (meta.is_thinking && !meta.non_thinking_prefix.empty()) scale.ignore_empty_think = true;
  }
  return scale;
}

CacheInfo cache_identity(const DataOptions& options, const std::string& template_name, const tokenizer::Tokenizer& tokenizer) {
  CacheInfo info;
  info.template_name = template_name;
  info.loss_scale = resolved_loss_scale(options, template_name);
  info.system = options.system;
  info.agent_template = options.agent_template;
  info.tokenizer_fingerprint = tokenizer_fingerprint(tokenizer);
  return info;
}

TrainRows load_train_rows(const DataOptions& options) {
  const auto reading = options.reading();
  TrainRows rows;
  if (!options.datasets.empty()) rows.train = load_datasets(options.datasets, options.data_seed, "--dataset", reading);
  if (!options.val_datasets.empty())
    rows.val = load_datasets(options.val_datasets, options.data_seed, "--val_dataset", reading);
  auto held_out = split_off_validation(rows.train, options.split_dataset_ratio, options.data_seed);
  rows.val.insert(rows.val.end(), std::make_move_iterator(held_out.begin()), std::make_move_iterator(held_out.end()));
  return rows;
}

}  // namespace swift::data
