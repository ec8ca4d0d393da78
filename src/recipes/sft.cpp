// swift sft / swift pt: supervised fine-tuning and (continued) pretraining, full or LoRA.
// Top to bottom: flags -> run folder -> model (+ LoRA) -> data -> optimizer and schedule -> loop -> save.
// pt is the same job with plain text instead of a chat template and loss on every token.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <torch/serialize.h>
#include <torch/utils.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <random>
#include <cmath>
#include <deque>
#include <filesystem>

#include "swift/core/atomic_write.h"
#include "swift/core/device.h"
#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/core/progress.h"
#include "swift/data/dataset.h"
#include "swift/io/hf_config.h"
#include "swift/model/checkpoint.h"
#include "swift/model/family_registry.h"
#include "swift/recipes/commands.h"
#include "swift/template/message.h"
#include "swift/template/select.h"
#include "swift/template/template.h"
#include "swift/template/template_meta.h"
#include "swift/tokenizer/tokenizer.h"
#include "swift/train/loss.h"
#include "swift/train/loss_plot.h"
#include "swift/train/tensorboard_writer.h"
#include "swift/train/lr_schedule.h"
#include "swift/train/run_dir.h"
#include "swift/train/sft_data.h"
#include "swift/tuners/lora.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace swift::recipes {

namespace {

std::vector<cli::FlagSpec> train_flags(bool pretrain) {
  using cli::FlagType;
  std::vector<cli::FlagSpec> flags = {
      {"model", FlagType::kString, "", "Hugging Face model folder to start from"},
      {"init_strategy", FlagType::kString, "", "train from scratch: initialise a folder that has only config.json"},
      {"train_type", FlagType::kString, pretrain ? "full" : "lora", "full or lora", {"tuner_type", "sft_type"}},
      {"dataset", FlagType::kList, "", "training data: .jsonl/.json/.csv files (path#N samples N rows) or built-ins "
                                       "(swift/self-cognition, swift/arithmetic)"},
      {"val_dataset", FlagType::kList, "", "validation data (same forms)"},
      {"split_dataset_ratio", FlagType::kFloat, "0", "hold out this fraction of --dataset for validation"},
      {"columns", FlagType::kString, "", "rename columns first, as JSON: '{\"src\": \"query\", \"tgt\": \"response\"}'"},
      {"model_name", FlagType::kList, "", "for swift/self-cognition: the model's name (Chinese, then English)"},
      {"model_author", FlagType::kList, "", "for swift/self-cognition: the author (Chinese, then English)"},
      {"template", FlagType::kString, "", "chat template (default: the checkpoint's args.json, else the family's)"},
      {"system", FlagType::kString, "", "system prompt replacing the template's default"},
      {"use_chat_template", FlagType::kBool, pretrain ? "false" : "true", "false: plain text, as pretraining"},
      {"loss_scale", FlagType::kString, pretrain ? "all" : "default", "which tokens carry loss: default, last_round, all"},
      {"max_length", FlagType::kInt, "0", "tokens per sample at most (0: the model's max_position_embeddings)"},
      {"truncation_strategy", FlagType::kString, "delete", "longer samples: delete, left or right"},
      {"packing", FlagType::kBool, "false", "pack samples into rows of --packing_length tokens (no cross-sample attention)"},
      {"packing_length", FlagType::kInt, "0", "tokens per packed row (0: --max_length)"},
      {"dataset_num_proc", FlagType::kInt, "1", "threads that tokenise the dataset"},
      {"num_train_epochs", FlagType::kFloat, "1", "passes over the data (ignored when --max_steps > 0)"},
      {"max_steps", FlagType::kInt, "-1", "optimizer steps (overrides --num_train_epochs when > 0)"},
      {"per_device_train_batch_size", FlagType::kInt, "1", "samples per micro-batch", {"batch_size"}},
      {"per_device_eval_batch_size", FlagType::kInt, "1", "samples per evaluation batch"},
      {"gradient_accumulation_steps", FlagType::kInt, "0", "micro-batches per optimizer step (0: enough for 16 samples)"},
      {"learning_rate", FlagType::kFloat, "", "peak learning rate (default 1e-4 for lora, 1e-5 for full)"},
      {"weight_decay", FlagType::kFloat, "0.1", "AdamW weight decay (not on biases and norms)"},
      {"adam_beta1", FlagType::kFloat, "0.9", "AdamW beta1"},
      {"adam_beta2", FlagType::kFloat, "0.95", "AdamW beta2"},
      {"adam_epsilon", FlagType::kFloat, "1e-8", "AdamW epsilon"},
      {"lr_scheduler_type", FlagType::kString, "cosine", "linear, cosine, constant, constant_with_warmup, cosine_with_min_lr"},
      {"min_lr_rate", FlagType::kFloat, "", "cosine_with_min_lr: the floor as a fraction of --learning_rate"},
      {"warmup_ratio", FlagType::kFloat, "0.05", "fraction of steps spent warming up"},
      {"warmup_steps", FlagType::kFloat, "0", "warm-up steps (overrides --warmup_ratio when > 0)"},
      {"max_grad_norm", FlagType::kFloat, "1.0", "clip gradients to this norm (0: off); the logged norm is before clipping"},
      {"gradient_checkpointing", FlagType::kBool, "true", "recompute decoder layers in backward instead of keeping activations (less memory, same gradients)"},
      {"lora_rank", FlagType::kInt, "8", "LoRA rank r"},
      {"lora_alpha", FlagType::kFloat, "32", "LoRA alpha (scaling alpha / r)"},
      {"lora_dropout", FlagType::kFloat, "0.05", "dropout on the LoRA input"},
      {"target_modules", FlagType::kList, "all-linear", "modules to adapt: all-linear or names (q_proj v_proj ...)"},
      {"target_regex", FlagType::kString, "", "regex over module names (instead of --target_modules)"},
      {"modules_to_save", FlagType::kList, "", "modules trained in full next to LoRA (embed_tokens, lm_head)"},
      {"use_rslora", FlagType::kBool, "false", "rank-stabilised scaling alpha / sqrt(r)"},
      {"init_weights", FlagType::kString, "true", "LoRA init: true (B = 0), gaussian, false"},
      {"output_dir", FlagType::kString, "", "run folder root (default: output/<model name>)"},
      {"add_version", FlagType::kBool, "true", "put the run in <output_dir>/v<N>-<time>/"},
      {"logging_steps", FlagType::kInt, "5", "log every N optimizer steps"},
      {"eval_steps", FlagType::kInt, "0", "evaluate every N steps (0: at --save_steps)"},
      {"save_steps", FlagType::kInt, "500", "save a checkpoint every N steps (and always at the end)"},
      {"save_total_limit", FlagType::kInt, "0", "keep only the newest N checkpoints (0: all)"},
      {"save_only_model", FlagType::kBool, "false", "checkpoints without optimizer and trainer state"},
      {"data_seed", FlagType::kInt, "", "seed for data order and sampling (default: --seed)"},
      {"resume_from_checkpoint", FlagType::kString, "", "continue a run exactly from its checkpoint-N folder"},
      {"resume_only_model", FlagType::kBool, "false", "with --resume_from_checkpoint: take only the weights, start at step 0"},
      {"ignore_data_skip", FlagType::kBool, "false", "with --resume_from_checkpoint: restart the data from the beginning"},
  };
  for (auto& f : cli::common_flags()) flags.push_back(f);
  return flags;
}

// bf16 compute over fp32 master weights (full fine-tuning with --torch_dtype bfloat16): LibTorch's autocast
// runs matmuls in bf16 while parameters, gradients and AdamW state stay fp32. Scoped to one forward pass.
class AutocastScope {
 public:
  AutocastScope(c10::DeviceType device, std::optional<c10::ScalarType> dtype) : device_(device), active_(dtype.has_value()) {
    if (!active_) return;
    was_enabled_ = at::autocast::is_autocast_enabled(device_);
    previous_dtype_ = at::autocast::get_autocast_dtype(device_);
    at::autocast::set_autocast_dtype(device_, *dtype);
    at::autocast::set_autocast_enabled(device_, true);
  }
  ~AutocastScope() {
    if (!active_) return;
    at::autocast::set_autocast_enabled(device_, was_enabled_);
    at::autocast::set_autocast_dtype(device_, previous_dtype_);
    at::autocast::clear_cache();  // cached bf16 copies of the weights are stale after the optimizer step
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  c10::DeviceType device_;
  bool active_;
  bool was_enabled_ = false;
  c10::ScalarType previous_dtype_ = c10::kBFloat16;
};

// What the loop needs, built once.
struct Job {
  bool pretrain = false;
  bool lora = false;
  fs::path model_dir, run_dir;
  model::CausalLM model{nullptr};
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<templates::Template> chat;
  std::string template_name;
  tuners::LoraConfig lora_config;
  std::vector<train::Example> train, val;
  int64_t pad_id = 0;
  std::optional<c10::ScalarType> autocast;  // full fine-tuning in bf16: compute dtype over fp32 weights
  std::optional<c10::ScalarType> save_dtype;  // how full checkpoints are stored (--torch_dtype)
  uint64_t data_seed = 0;                     // --data_seed, else --seed
};

// AdamW with weight decay on every trainable weight but biases and norm weights (as transformers' Trainer).
std::unique_ptr<torch::optim::AdamW> make_optimizer(model::CausalLM& m, const cli::Flags& f, double lr) {
  std::vector<torch::Tensor> decay, no_decay;
  for (auto& item : m->named_parameters()) {
    if (!item.value().requires_grad()) continue;
    const std::string& n = item.key();
    const bool exempt = n.find("norm") != std::string::npos || (n.size() > 5 && n.compare(n.size() - 5, 5, ".bias") == 0);
    (exempt ? no_decay : decay).push_back(item.value());
  }
  auto options = [&](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(lr)
                                                            .betas({f.number("adam_beta1"), f.number("adam_beta2")})
                                                            .eps(f.number("adam_epsilon"))
                                                            .weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (!decay.empty()) groups.emplace_back(decay, options(f.number("weight_decay")));
  if (!no_decay.empty()) groups.emplace_back(no_decay, options(0.0));
  SWIFT_CHECK(!groups.empty(), UsageError, "nothing to train: no parameter requires a gradient",
              "check --train_type and --target_modules");
  return std::make_unique<torch::optim::AdamW>(groups, *options(f.number("weight_decay")));
}

void set_lr(torch::optim::AdamW& opt, double lr) {
  for (auto& group : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
}

struct EvalResult {
  double loss = 0, token_acc = 0;
};

EvalResult evaluate(Job& job, int64_t batch_size) {
  torch::NoGradGuard no_grad;
  job.model->eval();
  double loss = 0;
  int64_t tokens = 0, correct = 0;
  for (size_t start = 0; start < job.val.size(); start += static_cast<size_t>(batch_size)) {
    std::vector<const train::Example*> items;
    for (size_t i = start; i < std::min(job.val.size(), start + static_cast<size_t>(batch_size)); ++i)
      items.push_back(&job.val[i]);
    auto batch = train::collate(items, job.pad_id);
    model::ForwardArgs args;
    args.input_ids = batch.input_ids.to(job.model->device());
    args.attention_mask = batch.attention_mask.to(job.model->device());
    if (batch.segment_ids.defined()) {
      args.position_ids = batch.position_ids.to(job.model->device());
      args.segment_ids = batch.segment_ids.to(job.model->device());
    }
    AutocastScope autocast(job.model->device().type(), job.autocast);
    auto sums = train::causal_lm_loss_sums_from_hidden(job.model->forward_hidden(args), batch.labels,
                                                       [&](const at::Tensor& h) { return job.model->logits(h); });
    loss += sums.loss_sum.item<double>();
    tokens += sums.tokens;
    correct += sums.correct;
  }
  job.model->train();
  return {tokens ? loss / tokens : 0.0, tokens ? static_cast<double>(correct) / tokens : 0.0};
}

void save_checkpoint(Job& job, const cli::Flags& flags, int64_t step, const torch::optim::AdamW& optimizer,
                     const train::BatchSampler& sampler, std::deque<fs::path>& saved) {
  const fs::path dir = job.run_dir / ("checkpoint-" + std::to_string(step));
  AtomicDir out(dir);  // a crash mid-save never leaves a checkpoint that looks complete
  if (job.lora) {
    tuners::save_adapter(job.model, job.lora_config, out.path());
  } else {
    model::SaveOptions save;
    save.dtype = job.save_dtype;
    model::save_model(job.model, out.path(), save, job.model_dir);
  }
  json args = flags.to_json();
  args["template"] = job.template_name.empty() ? json(nullptr) : json(job.template_name);
  args["model"] = fs::absolute(job.model_dir).string();
  io::write_json_file(out.path() / "args.json", args);
  if (!flags.boolean("save_only_model")) {
    torch::save(optimizer, (out.path() / "optimizer.pt").string());
    // Dropout draws from the default CPU generator: its state makes the continuation bit-exact.
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    at::Tensor rng_state;
    {
      std::lock_guard<std::mutex> lock(generator.mutex());
      rng_state = generator.get_state();
    }
    torch::save(rng_state, (out.path() / "rng_state.pt").string());
    io::write_json_file(out.path() / "trainer_state.json",
                        {{"global_step", step}, {"epoch", sampler.epoch()}, {"data_position", sampler.position()}});
  }
  out.commit();
  saved.push_back(dir);
  const int64_t limit = flags.integer("save_total_limit");
  while (limit > 0 && static_cast<int64_t>(saved.size()) > limit) {
    fs::remove_all(saved.front());
    saved.pop_front();
  }
  log_info("saved ", dir.string());
}

Job build_job(const cli::Flags& flags, bool pretrain, const CommonSetup& setup) {
  Job job;
  job.pretrain = pretrain;
  job.model_dir = flags.str("model");
  SWIFT_CHECK(!job.model_dir.empty(), UsageError, "swift " + flags.command() + " needs --model",
              "e.g. --model configs/models/qwen3-tiny --init_strategy normal");
  const std::string train_type = flags.str("train_type");
  SWIFT_CHECK(train_type == "full" || train_type == "lora", UsageError,
              "--train_type " + train_type + " is not available", "use full or lora (qlora comes with quantisation)");
  job.lora = train_type == "lora";
  SWIFT_CHECK(!flags.list("dataset").empty(), UsageError, "swift " + flags.command() + " needs --dataset",
              "e.g. --dataset data.jsonl or --dataset swift/self-cognition --model_name Tiny --model_author Me");

  model::LoadOptions load;
  load.device = parse_device(setup.device);
  load.init_strategy = flags.str("init_strategy");
  load.seed = static_cast<uint64_t>(flags.integer("seed"));
  // Full fine-tuning keeps fp32 master weights: --torch_dtype bfloat16 then means bf16 compute (autocast) and
  // bf16 checkpoints. LoRA keeps the frozen base in --torch_dtype and the adapter in fp32.
  const auto dtype = parse_dtype(flags.str("torch_dtype"));
  SWIFT_CHECK(job.lora || !dtype || *dtype != c10::kHalf, UsageError,
              "full fine-tuning in float16 needs loss scaling, which swift does not do yet",
              "use --torch_dtype bfloat16 (same speed class, no scaling needed) or float32");
  load.dtype = job.lora ? dtype : std::optional<c10::ScalarType>(c10::kFloat);
  if (!job.lora && dtype && *dtype == c10::kBFloat16) {
    job.autocast = c10::kBFloat16;
    job.save_dtype = c10::kBFloat16;
  }
  const fs::path resume = flags.str("resume_from_checkpoint");
  if (!resume.empty()) {
    SWIFT_CHECK(fs::is_directory(resume), DataError, "--resume_from_checkpoint " + resume.string() + " is not a folder",
                "give a checkpoint-<step> folder of an earlier run");
    const bool adapter = fs::exists(resume / "adapter_config.json");
    SWIFT_CHECK(adapter == job.lora, UsageError,
                "--resume_from_checkpoint " + resume.string() + " holds a " + (adapter ? "LoRA adapter" : "full model") +
                    " but --train_type is " + train_type,
                "resume with the --train_type of the run that wrote it");
  }
  // A full checkpoint is a complete model folder: its weights replace --model's.
  job.model = model::load_model(!resume.empty() && !job.lora ? resume : job.model_dir, load);
  job.tokenizer = with_context("loading the tokenizer of " + job.model_dir.string(),
                               [&] { return tokenizer::Tokenizer::load(job.model_dir); });

  templates::TemplateOptions options;
  if (flags.given("system")) options.system = flags.str("system");
  options.loss_rule = templates::parse_loss_rule(flags.str("loss_scale"));
  if (flags.boolean("use_chat_template")) {
    const auto* family = model::find_model_family(job.model->config().model_type, {});
    const auto choice = templates::choose_template(flags.str("template"), {job.model_dir},
                                                   family ? family->default_template : "",
                                                   "the default for model_type " + job.model->config().model_type);
    job.template_name = choice.name;
    job.chat = std::make_unique<templates::Template>(templates::find_template_meta(choice.name), *job.tokenizer, options);
  } else {
    job.template_name = "";
    job.chat = std::make_unique<templates::Template>(templates::plain_text_template_meta(), *job.tokenizer, options);
  }
  job.pad_id = job.tokenizer->pad_id().value_or(job.tokenizer->eos_id().value_or(0));

  if (job.lora) {
    job.lora_config.r = flags.integer("lora_rank");
    job.lora_config.lora_alpha = flags.number("lora_alpha");
    job.lora_config.lora_dropout = flags.number("lora_dropout");
    job.lora_config.target_modules = flags.list("target_modules");
    if (!flags.str("target_regex").empty()) job.lora_config.target_regex = flags.str("target_regex");
    job.lora_config.modules_to_save = flags.list("modules_to_save");
    job.lora_config.use_rslora = flags.boolean("use_rslora");
    const std::string init = flags.str("init_weights");
    SWIFT_CHECK(init == "true" || init == "gaussian" || init == "false", UsageError,
                "--init_weights " + init + " is not supported", "use true (B = 0), gaussian or false");
    job.lora_config.init_weights = init == "true"       ? tuners::LoraInit::kDefault
                                   : init == "gaussian" ? tuners::LoraInit::kGaussian
                                                        : tuners::LoraInit::kRandom;
    job.lora_config.base_model_name_or_path = fs::absolute(job.model_dir).string();
    job.lora_config.lora_dtype = c10::kFloat;  // trainable weights stay fp32 whatever the base (as PEFT's autocast)
    if (resume.empty()) {
      const auto wrapped = tuners::apply_lora(job.model, job.lora_config, static_cast<uint64_t>(flags.integer("seed")));
      log_info("LoRA r=", job.lora_config.r, " alpha=", job.lora_config.lora_alpha, " on ", wrapped.size(), " modules");
    } else {  // the checkpoint's adapter, config and weights
      job.lora_config = tuners::load_adapter(job.model, resume, c10::kFloat);
      job.lora_config.lora_dtype = c10::kFloat;
      log_info("LoRA from ", resume.string(), ": r=", job.lora_config.r, " on ", tuners::lora_modules(job.model).size(), " modules");
    }
  }
  int64_t n_trainable = 0, n_total = 0;
  for (auto& p : job.model->parameters()) {
    n_total += p.numel();
    if (p.requires_grad()) n_trainable += p.numel();
  }
  log_info("parameters: ", n_trainable, " trainable of ", n_total, " (", 100.0 * n_trainable / n_total, "%)");

  // Data.
  job.data_seed = static_cast<uint64_t>(flags.given("data_seed") ? flags.integer("data_seed") : flags.integer("seed"));
  const uint64_t data_seed = job.data_seed;
  data::DatasetOptions data_options;
  data_options.builtin = {flags.list("model_name"), flags.list("model_author"), data_seed};
  data_options.columns = data::parse_columns(flags.str("columns"));
  auto rows = data::load_datasets(flags.list("dataset"), data_seed, "--dataset", data_options);
  std::vector<json> val_rows;
  if (!flags.list("val_dataset").empty()) val_rows = data::load_datasets(flags.list("val_dataset"), data_seed, "--val_dataset", data_options);
  const double split = flags.number("split_dataset_ratio");
  SWIFT_CHECK(split >= 0 && split < 1, UsageError, "--split_dataset_ratio must be in [0, 1)", "e.g. 0.05");
  if (split > 0) {
    std::mt19937_64 rng(data_seed);
    std::shuffle(rows.begin(), rows.end(), rng);
    const size_t n_val = std::max<size_t>(1, static_cast<size_t>(std::llround(split * rows.size())));
    SWIFT_CHECK(n_val < rows.size(), DataError, "--split_dataset_ratio leaves no training rows", "lower it");
    val_rows.insert(val_rows.end(), rows.end() - static_cast<long>(n_val), rows.end());
    rows.resize(rows.size() - n_val);
  }
  int64_t max_length = flags.integer("max_length");
  if (max_length <= 0) max_length = job.model->config().max_position_embeddings;
  const auto truncation = train::parse_truncation(flags.str("truncation_strategy"));
  train::EncodeReport report;
  const int num_proc = static_cast<int>(std::max<int64_t>(1, flags.integer("dataset_num_proc")));
  job.train = train::encode_rows(rows, *job.chat, max_length, truncation, report, "--dataset", num_proc);
  log_info("train data: ", report.summary());
  if (!val_rows.empty()) {
    train::EncodeReport val_report;
    job.val = train::encode_rows(val_rows, *job.chat, max_length, truncation, val_report, "--val_dataset", num_proc);
    log_info("validation data: ", val_report.summary());
  }
  if (flags.boolean("packing")) {
    int64_t packing_length = flags.integer("packing_length");
    if (packing_length <= 0) packing_length = max_length;
    const size_t samples = job.train.size();
    job.train = train::pack_examples(job.train, packing_length);
    log_info("packing: packed ", samples, " samples into ", job.train.size(), " rows of at most ", packing_length,
             " tokens");
    if (!job.val.empty()) {
      const size_t val_samples = job.val.size();
      job.val = train::pack_examples(job.val, packing_length);
      log_info("packing: packed ", val_samples, " validation samples into ", job.val.size(), " rows");
    }
  }
  return job;
}

int run_training(const std::vector<std::string>& args, bool pretrain) {
  const std::string command = pretrain ? "pt" : "sft";
  const auto flags = cli::parse_flags(command, train_flags(pretrain), args);
  const auto setup = apply_common_flags(flags);
  // LibTorch seeds its default generator from the OS; dropout draws from it, so seed it (as transformers'
  // set_seed does) or two runs of the same command differ.
  torch::manual_seed(static_cast<uint64_t>(flags.integer("seed")));
  Job job = build_job(flags, pretrain, setup);
  job.model->set_gradient_checkpointing(flags.boolean("gradient_checkpointing"));

  // Steps and schedule.
  const int64_t batch_size = std::max<int64_t>(1, flags.integer("per_device_train_batch_size"));
  int64_t accumulation = flags.integer("gradient_accumulation_steps");
  if (accumulation <= 0) accumulation = std::max<int64_t>(1, (16 + batch_size - 1) / batch_size);  // as ms-swift
  train::BatchSampler sampler(job.train.size(), batch_size, job.data_seed);
  const int64_t steps_per_epoch = std::max<int64_t>(1, sampler.batches_per_epoch() / accumulation);
  int64_t total_steps = flags.integer("max_steps");
  if (total_steps <= 0) total_steps = std::max<int64_t>(1, std::llround(flags.number("num_train_epochs") * steps_per_epoch));
  const double lr = flags.given("learning_rate") ? flags.number("learning_rate") : (job.lora ? 1e-4 : 1e-5);
  train::LrScheduleOptions schedule_options;
  schedule_options.type = train::parse_lr_scheduler_type(flags.str("lr_scheduler_type"));
  schedule_options.learning_rate = lr;
  schedule_options.total_steps = total_steps;
  schedule_options.warmup_steps =
      train::resolve_warmup_steps(flags.number("warmup_steps"), flags.number("warmup_ratio"), total_steps);
  if (schedule_options.type == train::LrSchedulerType::kCosineWithMinLr)
    schedule_options.min_lr_rate = flags.given("min_lr_rate") ? flags.number("min_lr_rate") : 0.1;
  const train::LrSchedule schedule(schedule_options);
  auto optimizer = make_optimizer(job.model, flags, lr);
  std::vector<torch::Tensor> params;
  for (auto& [name, tensor] : tuners::trainable_parameters(job.model)) params.push_back(tensor);

  // Run folder.
  fs::path output_dir = flags.str("output_dir");
  if (output_dir.empty()) output_dir = fs::path("output") / fs::absolute(job.model_dir).lexically_normal().filename();
  job.run_dir = train::create_run_dir(output_dir, flags.boolean("add_version"));
  json args_json = flags.to_json();
  args_json["template"] = job.template_name.empty() ? json(nullptr) : json(job.template_name);
  args_json["model"] = fs::absolute(job.model_dir).string();
  io::write_json_file(job.run_dir / "args.json", args_json);
  train::JsonlLog log(job.run_dir / "logging.jsonl");
  train::TensorBoardWriter tensorboard(job.run_dir / "runs");
  train::PlotSeries loss_curve{"train/loss", {}, {}, std::nullopt, 0.9};
  train::PlotSeries eval_curve{"eval/loss", {}, {}, std::nullopt, 0.0};
  log_info("run folder ", job.run_dir.string(), ": ", total_steps, " steps of ", accumulation, " x ", batch_size,
           " samples, lr ", lr, " (", flags.str("lr_scheduler_type"), ", ", schedule_options.warmup_steps, " warm-up)");

  int64_t start_step = 0;
  const fs::path resume = flags.str("resume_from_checkpoint");
  if (!resume.empty() && !flags.boolean("resume_only_model")) {
    const fs::path state_path = resume / "trainer_state.json";
    SWIFT_CHECK(fs::exists(state_path) && fs::exists(resume / "optimizer.pt"), DataError,
                resume.string() + " has no trainer state (saved with --save_only_model?)",
                "pass --resume_only_model true to start from its weights at step 0");
    const json state = io::read_json_file(state_path);
    start_step = state.at("global_step").get<int64_t>();
    SWIFT_CHECK(start_step < total_steps, UsageError,
                "the checkpoint is at step " + std::to_string(start_step) + " of " + std::to_string(total_steps),
                "raise --max_steps / --num_train_epochs to train further");
    torch::load(*optimizer, (resume / "optimizer.pt").string());
    if (fs::exists(resume / "rng_state.pt")) {
      at::Tensor rng;
      torch::load(rng, (resume / "rng_state.pt").string());
      at::Generator generator = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(generator.mutex());
      generator.set_state(rng);
    }
    if (!flags.boolean("ignore_data_skip"))
      sampler.set_position(state.at("epoch").get<int64_t>(), state.at("data_position").get<size_t>());
    log_info("resumed from ", resume.string(), " at step ", start_step);
  }

  const int64_t logging_steps = std::max<int64_t>(1, flags.integer("logging_steps"));
  const int64_t save_steps = std::max<int64_t>(1, flags.integer("save_steps"));
  const int64_t eval_steps = flags.integer("eval_steps") > 0 ? flags.integer("eval_steps") : save_steps;
  const double max_grad_norm = flags.number("max_grad_norm");
  std::deque<fs::path> saved;

  job.model->train();
  Progress progress("train", total_steps - start_step);
  const auto start = std::chrono::steady_clock::now();
  double window_loss = 0, window_grad_norm = 0;
  int64_t window_tokens = 0, window_correct = 0, window_steps = 0;
  for (int64_t step = start_step; step < total_steps; ++step) {
    // One optimizer step: `accumulation` micro-batches, the loss normalised by all their label tokens.
    std::vector<train::Batch> micro;
    int64_t step_tokens = 0;
    for (int64_t k = 0; k < accumulation; ++k) {
      std::vector<const train::Example*> items;
      for (size_t i : sampler.next()) items.push_back(&job.train[i]);
      micro.push_back(train::collate(items, job.pad_id));
      step_tokens += micro.back().label_tokens;
    }
    for (auto& b : micro) {
      model::ForwardArgs fa;
      fa.input_ids = b.input_ids.to(job.model->device());
      fa.attention_mask = b.attention_mask.to(job.model->device());
      if (b.segment_ids.defined()) {
        fa.position_ids = b.position_ids.to(job.model->device());
        fa.segment_ids = b.segment_ids.to(job.model->device());
      }
      train::LossSums sums;
      {
        AutocastScope autocast(job.model->device().type(), job.autocast);
        sums = train::causal_lm_loss_sums_from_hidden(job.model->forward_hidden(fa), b.labels,
                                                      [&](const at::Tensor& h) { return job.model->logits(h); });
      }
      (sums.loss_sum / static_cast<double>(std::max<int64_t>(step_tokens, 1))).backward();
      window_loss += sums.loss_sum.item<double>();
      window_tokens += sums.tokens;
      window_correct += sums.correct;
    }
    const double grad_norm = max_grad_norm > 0 ? torch::nn::utils::clip_grad_norm_(params, max_grad_norm)
                                               : torch::nn::utils::clip_grad_norm_(params, 1e30);
    set_lr(*optimizer, schedule.lr(step));
    optimizer->step();
    optimizer->zero_grad();
    window_grad_norm += grad_norm;
    ++window_steps;
    progress.advance();

    const int64_t done = step + 1;
    if (done % logging_steps == 0 || done == total_steps) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      nlohmann::ordered_json row = {
          {"loss", window_tokens ? window_loss / window_tokens : 0.0},
          {"token_acc", window_tokens ? static_cast<double>(window_correct) / window_tokens : 0.0},
          {"grad_norm", window_grad_norm / window_steps},
          {"learning_rate", schedule.lr(step)},
          {"memory(GiB)", train::peak_memory_gib()},
          {"train_speed(iter/s)", (done - start_step) / elapsed},
          {"epoch", static_cast<double>(done) / steps_per_epoch},
          {"global_step/max_steps", std::to_string(done) + "/" + std::to_string(total_steps)},
          {"percentage", 100.0 * done / total_steps},
          {"elapsed_time", train::format_duration(elapsed)},
          {"remaining_time", train::format_duration(elapsed / (done - start_step) * (total_steps - done))}};
      log.write(row);
      log_info(train::format_log_row(row));
      tensorboard.add_scalars({{"train/loss", row["loss"].get<double>()},
                               {"train/token_acc", row["token_acc"].get<double>()},
                               {"train/grad_norm", row["grad_norm"].get<double>()},
                               {"train/learning_rate", row["learning_rate"].get<double>()}},
                              done);
      loss_curve.steps.push_back(static_cast<double>(done));
      loss_curve.values.push_back(row["loss"].get<double>());
      window_loss = window_grad_norm = 0;
      window_tokens = window_correct = window_steps = 0;
    }
    if (!job.val.empty() && (done % eval_steps == 0 || done == total_steps)) {
      const auto e = evaluate(job, flags.integer("per_device_eval_batch_size"));
      nlohmann::ordered_json row = {{"eval_loss", e.loss}, {"eval_token_acc", e.token_acc},
                                    {"global_step/max_steps", std::to_string(done) + "/" + std::to_string(total_steps)}};
      log.write(row);
      log_info(train::format_log_row(row));
      tensorboard.add_scalars({{"eval/loss", e.loss}, {"eval/token_acc", e.token_acc}}, done);
      eval_curve.steps.push_back(static_cast<double>(done));
      eval_curve.values.push_back(e.loss);
    }
    if (done % save_steps == 0 || done == total_steps) save_checkpoint(job, flags, done, *optimizer, sampler, saved);
  }
  progress.finish();
  train::write_loss_plot(job.run_dir / "images" / "train_loss.png", {loss_curve});
  if (!eval_curve.values.empty()) train::write_loss_plot(job.run_dir / "images" / "eval_loss.png", {eval_curve});
  log_info("last checkpoint: ", saved.empty() ? std::string("none") : saved.back().string());
  return 0;
}

}  // namespace

std::vector<cli::FlagSpec> sft_flags() { return train_flags(false); }
std::vector<cli::FlagSpec> pt_flags() { return train_flags(true); }
int run_sft(const std::vector<std::string>& args) { return run_training(args, false); }
int run_pt(const std::vector<std::string>& args) { return run_training(args, true); }

}  // namespace swift::recipes
