// swift infer: chat with a model in the terminal, or answer every row of --val_dataset into --result_path.
// Top to bottom: flags -> model, tokenizer, template -> sampling defaults -> interactive loop or batch loop.
#include <ATen/ATen.h>
#include <torch/utils.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <unistd.h>  // getpid

#include "swift/cli/common_setup.h"
#include "swift/core/device.h"
#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/core/progress.h"
#include "swift/data/dataset.h"
#include "swift/io/hf_config.h"
#include "swift/model/checkpoint.h"
#include "swift/model/family_registry.h"
#include "swift/model/generator.h"
#include "swift/recipes/commands.h"
#include "swift/template/agent_template.h"
#include "swift/serve/inference_model.h"
#include "swift/data/example.h"
#include "swift/data/batch.h"
#include "swift/template/message.h"
#include "swift/template/select.h"
#include "swift/template/template.h"
#include "swift/template/template_meta.h"
#include "swift/tokenizer/tokenizer.h"
#include "swift/tuners/lora.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace swift::recipes {

std::vector<cli::FlagSpec> infer_flags() {
  using cli::FlagType;
  std::vector<cli::FlagSpec> flags = serve::inference_model_flags();
  flags.push_back({"val_dataset", FlagType::kList, "", "batch mode: .jsonl/.json/.csv files (path#N samples N rows)"});
  flags.push_back({"result_path", FlagType::kString, "", "batch mode output JSONL (default: infer_result/<time>.jsonl)"});
  for (auto& f : serve::generation_flags()) flags.push_back(f);
  std::vector<cli::FlagSpec> rest = {
      {"stream", FlagType::kBool, "true", "print tokens as they come (interactive mode)"},
      {"logprobs", FlagType::kBool, "false", "record each token's log-probability in the results"},
      {"top_logprobs", FlagType::kInt, "0", "and this many alternatives per token"},
      {"max_model_len", FlagType::kInt, "0", "prompt + reply tokens at most (0: max_position_embeddings)",
       {"vllm_max_model_len", "lmdeploy_session_len"}},
      {"max_batch_size", FlagType::kInt, "16", "rows generated together in batch mode", {"vllm_max_num_seqs"}},
      {"continue_final_message", FlagType::kBool, "false",
       "batch mode: a row's final assistant message is the start of the reply, continued (vLLM's "
       "continue_final_message), instead of its label"},
  };
  for (auto& f : rest) flags.push_back(f);
  for (auto& f : cli::common_flags()) flags.push_back(f);
  return flags;
}

namespace {

// infer's flags, typed once.
struct InferOptions {
  serve::InferenceOptions model;
  serve::GenerationOptions generation;
  std::vector<std::string> val_dataset;  // batch mode (or the conversations a reward model scores)
  std::string result_path;               // batch output (default infer_result/<time>.jsonl)
  bool stream = true;
  bool logprobs = false;
  int64_t top_logprobs = 0;
  int64_t max_model_len = 0;             // 0: max_position_embeddings
  int64_t max_batch_size = 16;
  bool continue_final_message = false;   // batch mode: a final assistant message is continued, not the label
  uint64_t seed = 42;
};

InferOptions infer_options(const cli::Flags& flags, const std::string& device) {
  cli::Problems problems;
  InferOptions o;
  o.model = serve::inference_options(flags, device, problems);
  o.generation = serve::generation_options(flags);
  o.val_dataset = flags.list("val_dataset");
  o.result_path = flags.str("result_path");
  o.stream = flags.boolean("stream");
  o.logprobs = flags.boolean("logprobs");
  o.top_logprobs = flags.integer("top_logprobs");
  problems.check(o.top_logprobs >= 0 && o.top_logprobs <= 20, "--top_logprobs must be 0..20", "as the OpenAI API allows");
  o.max_model_len = flags.integer("max_model_len");
  o.max_batch_size = flags.integer("max_batch_size");
  o.continue_final_message = flags.boolean("continue_final_message");
  problems.at_least("max_model_len", o.max_model_len, 0, "0 takes max_position_embeddings");
  problems.at_least("max_batch_size", o.max_batch_size, 1, "rows generated together, e.g. 16");
  o.seed = static_cast<uint64_t>(flags.integer("seed"));
  problems.raise();
  return o;
}

// Everything a conversation turn needs.
struct Session {
  model::CausalLM model;  // what the generator runs (a reward model only scores)
  model::Generator generator;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<templates::Template> chat;  // the chat template, or plain text with --use_chat_template false
  model::SamplingParams sampling;
  int64_t max_model_len = 0;
  std::optional<bool> enable_thinking;
  bool stream = true;
};

Session open_session(const InferOptions& o) {
  serve::InferenceModel m = serve::load_inference_model(o.model);
  Session s{m.model, model::Generator(m.model), nullptr, nullptr, {}, 0, m.enable_thinking, true};
  s.sampling = serve::sampling_defaults(o.generation, m, o.seed);
  s.sampling.logprobs = o.logprobs || o.top_logprobs > 0;
  s.sampling.top_logprobs = o.top_logprobs;
  s.max_model_len = o.max_model_len > 0 ? o.max_model_len : m.model->config().max_position_embeddings;
  s.stream = o.stream;
  s.tokenizer = std::move(m.tokenizer);
  s.chat = std::move(m.chat);
  return s;
}

// The prompt ids of a conversation: the next reply opened after a user (or tool) turn, a final assistant message
// continued (ms-swift's engines).
std::vector<int64_t> prompt_ids(const Session& s, const templates::Conversation& messages,
                                const templates::Tools* tools = nullptr) {
  return s.chat->encode_prompt(messages, s.enable_thinking, templates::PromptEnd::kAuto, tools);
}

// Sampling for one batch: new tokens capped by --max_model_len.
model::SamplingParams params_for(const Session& s, int64_t longest_prompt, const std::string& where) {
  SWIFT_CHECK(longest_prompt < s.max_model_len, DataError,
              where + ": the prompt has " + std::to_string(longest_prompt) + " tokens, --max_model_len is " +
                  std::to_string(s.max_model_len),
              "raise --max_model_len or shorten the conversation");
  model::SamplingParams p = s.sampling;
  p.max_new_tokens = std::min(p.max_new_tokens, s.max_model_len - longest_prompt);
  return p;
}

json bytes_of(const std::string& text) {
  json out = json::array();
  for (unsigned char c : text) out.push_back(static_cast<int>(c));
  return out;
}

// OpenAI chat-completions style: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}, ...]}.
json logprobs_json(const Session& s, const std::vector<model::TokenLogprob>& logprobs) {
  json content = json::array();
  for (const auto& t : logprobs) {
    const std::string token = s.tokenizer->decode(std::vector<int64_t>{t.token});
    json top = json::array();
    for (const auto& alt : t.top) {
      const std::string alt_text = s.tokenizer->decode(std::vector<int64_t>{alt.token});
      top.push_back({{"token", alt_text}, {"logprob", alt.logprob}, {"bytes", bytes_of(alt_text)}});
    }
    content.push_back({{"token", token}, {"logprob", t.logprob}, {"bytes", bytes_of(token)}, {"top_logprobs", top}});
  }
  return {{"content", content}};
}

std::string default_result_path() {
  const std::time_t now = std::time(nullptr);
  std::ostringstream name;
  name << "infer_result/" << std::put_time(std::localtime(&now), "%Y%m%d-%H%M%S") << ".jsonl";
  return name.str();
}

// --result_path (default infer_result/<time>.jsonl). Rows are appended to a temporary sibling as they finish and
// renamed into place at the end, so an interrupted run never leaves a result file that looks complete.
class ResultFile {
 public:
  explicit ResultFile(const std::string& result_path)
      : path_(result_path.empty() ? default_result_path() : result_path),
        tmp_(path_.string() + ".tmp-" + std::to_string(::getpid())) {
    std::error_code ec;
    if (path_.has_parent_path()) fs::create_directories(path_.parent_path(), ec);
    SWIFT_CHECK(!ec, DataError, "cannot create the folder of --result_path " + path_.string() + ": " + ec.message(),
                "give a --result_path in a folder that can be created (not under a file)");
    out_.open(tmp_, std::ios::trunc);
    SWIFT_CHECK(out_.good(), DataError, "cannot write " + tmp_.string(), "check that --result_path is writable");
  }
  void write(const nlohmann::ordered_json& row) { out_ << row.dump() << "\n"; }
  // After each batch: what was written is on disk.
  void flush() {
    out_.flush();
    SWIFT_CHECK(out_.good(), DataError, "writing " + tmp_.string() + " failed", "check the disk has room");
  }
  void commit(size_t rows, const std::string& what) {
    out_.close();
    fs::rename(tmp_, path_);
    log_info("wrote ", rows, " ", what, " to ", path_.string());
  }

 private:
  fs::path path_, tmp_;
  std::ofstream out_;
};

// Batch mode: every row's conversation up to its last assistant reply is the prompt; that reply is the label (as
// ms-swift's infer), or with --continue_final_message the start of the reply the model continues.
int run_batch(Session& s, const InferOptions& o) {
  const auto rows = data::load_datasets(o.val_dataset, o.seed, "--val_dataset");
  ResultFile out(o.result_path);

  const size_t batch = static_cast<size_t>(o.max_batch_size);
  Progress progress("infer", static_cast<int64_t>(rows.size()));
  for (size_t start = 0; start < rows.size(); start += batch) {
    const size_t end = std::min(rows.size(), start + batch);
    std::vector<templates::Conversation> prompts;
    std::vector<std::optional<std::string>> labels;
    std::vector<std::vector<int64_t>> ids;
    int64_t longest = 0;
    for (size_t i = start; i < end; ++i) {
      const std::string where = "--val_dataset row " + std::to_string(i + 1);
      auto conversation = with_context(where, [&] { return templates::conversation_from_json(rows[i]["messages"]); });
      std::optional<std::string> label;
      if (!o.continue_final_message && !conversation.empty() && conversation.back().role == templates::Role::kAssistant) {
        label = conversation.back().content;
        conversation.pop_back();
      }
      SWIFT_CHECK(!conversation.empty() && conversation.back().role != templates::Role::kSystem &&
                      (conversation.size() > 1 || conversation[0].role != templates::Role::kAssistant),
                  DataError, where + " has no user message to answer", "each row needs at least one user message");
      const templates::Tools tools = with_context(where, [&] { return templates::row_tools(rows[i]); });
      ids.push_back(with_context(where, [&] { return prompt_ids(s, conversation, &tools); }));
      longest = std::max<int64_t>(longest, static_cast<int64_t>(ids.back().size()));
      prompts.push_back(std::move(conversation));
      labels.push_back(label);
    }
    const auto params = params_for(s, longest, "--val_dataset rows " + std::to_string(start + 1) + "-" + std::to_string(end));
    const auto results = s.generator.generate(ids, params);
    for (size_t k = 0; k < results.size(); ++k) {
      const auto& r = results[k];
      nlohmann::ordered_json row = {{"messages", templates::conversation_to_json(prompts[k])},
                  {"response", s.chat->reply_text(s.tokenizer->decode(r.tokens, /*skip_special_tokens=*/true), s.enable_thinking)},
                  {"labels", labels[k] ? json(*labels[k]) : json(nullptr)},
                  {"finish_reason", r.finish_reason},
                  {"usage", {{"prompt_tokens", r.prompt_tokens},
                             {"completion_tokens", static_cast<int64_t>(r.tokens.size())},
                             {"total_tokens", r.prompt_tokens + static_cast<int64_t>(r.tokens.size())}}}};
      if (params.logprobs) row["logprobs"] = logprobs_json(s, r.logprobs);
      out.write(row);
    }
    out.flush();
    progress.advance(static_cast<int64_t>(end - start));
  }
  progress.finish();
  out.commit(rows.size(), "results");
  return 0;
}

// A reward model (a *ForSequenceClassification folder, or an adapter of PEFT's SEQ_CLS task): each row's whole
// conversation, reply included, encoded as in training and scored at its last token. As ms-swift, the score is
// the row's "response" (a number).
int run_scoring(Session& s, const InferOptions& o) {
  SWIFT_CHECK(!o.val_dataset.empty(), UsageError,
              "this is a reward model: it scores conversations rather than chatting",
              "give the conversations to score with --val_dataset (rows with the reply to score)");
  const auto rows = data::load_datasets(o.val_dataset, o.seed, "--val_dataset");
  ResultFile out(o.result_path);
  const size_t batch = static_cast<size_t>(o.max_batch_size);
  const int64_t pad_id = s.tokenizer->pad_id().value_or(s.tokenizer->eos_id().value_or(0));
  torch::NoGradGuard no_grad;
  Progress progress("score", static_cast<int64_t>(rows.size()));
  for (size_t start = 0; start < rows.size(); start += batch) {
    const size_t end = std::min(rows.size(), start + batch);
    std::vector<data::Example> encoded;
    for (size_t i = start; i < end; ++i) {
      const std::string where = "--val_dataset row " + std::to_string(i + 1);
      const templates::Tools tools = with_context(where, [&] { return templates::row_tools(rows[i]); });
      auto e = with_context(where, [&] { return s.chat->encode(templates::conversation_from_json(rows[i]["messages"]), &tools); });
      data::Example example;
      example.input_ids = std::move(e.input_ids);
      example.labels.assign(example.input_ids.size(), -100);
      encoded.push_back(std::move(example));
    }
    std::vector<const data::Example*> items;
    for (const auto& e : encoded) items.push_back(&e);
    const auto b = data::collate(items, pad_id);
    model::ForwardArgs args;
    args.input_ids = b.input_ids.to(s.model->device());
    const at::Tensor scores = model::sequence_scores(s.model, args, b.attention_mask).cpu();
    for (size_t k = 0; k < encoded.size(); ++k) {
      const at::Tensor row_scores = scores[static_cast<int64_t>(k)];
      const json score = row_scores.numel() == 1 ? json(row_scores.item<double>())
                                                 : json(std::vector<double>(row_scores.data_ptr<float>(),
                                                                            row_scores.data_ptr<float>() + row_scores.numel()));
      const auto tokens = static_cast<int64_t>(encoded[k].input_ids.size());
      nlohmann::ordered_json row = {{"messages", rows[start + k]["messages"]},
                                    {"response", score},
                                    {"finish_reason", "stop"},
                                    {"usage", {{"prompt_tokens", tokens}, {"completion_tokens", 0}, {"total_tokens", tokens}}}};
      out.write(row);
    }
    out.flush();
    progress.advance(static_cast<int64_t>(end - start));
  }
  progress.finish();
  out.commit(rows.size(), "scores");
  return 0;
}

// Interactive chat on stdin/stdout: multi-turn history; `clear` starts over, `exit` or end of input quits.
int run_interactive(Session& s) {
  templates::Conversation history;
  std::cout << "swift infer: type a message; 'clear' resets the conversation, 'exit' (or Ctrl-D) quits.\n";
  std::string line;
  while (true) {
    std::cout << "<<< " << std::flush;
    if (!std::getline(std::cin, line)) break;
    if (line == "exit" || line == "quit") break;
    if (line == "clear") {
      history.clear();
      std::cout << "(conversation cleared)\n";
      continue;
    }
    if (line.empty()) continue;
    history.push_back({templates::Role::kUser, line, std::nullopt, std::nullopt, {}});
    const auto ids = prompt_ids(s, history);
    const auto params = params_for(s, static_cast<int64_t>(ids.size()), "the conversation");
    tokenizer::StreamDecoder stream(*s.tokenizer, /*skip_special_tokens=*/true);
    std::cout << ">>> " << std::flush;
    std::string streamed;  // what has been printed of the reply
    auto print = [&](const std::string& piece) {
      const std::string shown = streamed.empty() ? s.chat->reply_text(piece, s.enable_thinking) : piece;
      streamed += shown;
      std::cout << shown << std::flush;
    };
    auto on_token = [&](size_t, int64_t token, bool is_stop) {
      if (s.stream && !is_stop) print(stream.push(token));
    };
    const auto result = s.generator.generate({ids}, params, on_token)[0];
    const std::string reply = s.chat->reply_text(s.tokenizer->decode(result.tokens, /*skip_special_tokens=*/true), s.enable_thinking);
    if (s.stream) print(stream.flush());
    else std::cout << reply;
    std::cout << "\n";
    history.push_back({templates::Role::kAssistant, reply, std::nullopt, std::nullopt, {}});
  }
  std::cout << "\n";
  return 0;
}

}  // namespace

int run_infer(const std::vector<std::string>& args) {
  const auto flags = cli::parse_flags("infer", infer_flags(), args);
  const auto setup = cli::apply_common_flags(flags);
  const InferOptions options = infer_options(flags, setup.device);  // every problem at once, before loading
  Session session = open_session(options);
  if (session.model->is_sequence_classifier()) return run_scoring(session, options);
  return options.val_dataset.empty() ? run_interactive(session) : run_batch(session, options);
}

}  // namespace swift::recipes
