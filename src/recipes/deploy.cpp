// swift deploy: serve a model behind the OpenAI API with continuous batching.
// Top to bottom: flags -> model, tokenizer, template -> context length and sampling defaults -> scheduler thread
// -> HTTP server until SIGINT/SIGTERM -> let in-flight requests finish -> exit 0.
#include <signal.h>
#include <unistd.h>

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <ctime>
#include <filesystem>
#include <mutex>
#include <thread>

#include "swift/cli/common_setup.h"
#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/model/checkpoint.h"
#include "swift/recipes/commands.h"
#include "swift/recipes/deploy.h"
#include "swift/serve/inference_model.h"
#include "swift/serve/completion_service.h"
#include "swift/serve/http_server.h"
#include "swift/serve/multi_lora.h"
#include "swift/serve/openai_protocol.h"
#include "swift/serve/scheduler.h"
#include "swift/template/template.h"

namespace fs = std::filesystem;

namespace swift::recipes {

std::vector<cli::FlagSpec> deploy_flags() {
  using cli::FlagType;
  std::vector<cli::FlagSpec> flags = serve::inference_model_flags();
  std::vector<cli::FlagSpec> own = {
      {"host", FlagType::kString, "0.0.0.0", "address to listen on (127.0.0.1: this machine only)"},
      {"port", FlagType::kInt, "8000", "port to listen on (0: any free port, printed at start)"},
      {"api_key", FlagType::kString, "", "require 'Authorization: Bearer <key>' on /v1/* (default: no key)"},
      {"served_model_name", FlagType::kString, "", "model id in the API (default: the --model folder's name)"},
      {"max_batch_size", FlagType::kInt, "32", "sequences decoded together; the rest wait in the queue",
       {"vllm_max_num_seqs"}},
      {"max_waiting", FlagType::kInt, "256", "sequences that may wait beyond the running batch; more get 429"},
      {"max_model_len", FlagType::kInt, "0",
       "prompt + reply tokens at most (0: max_position_embeddings, times the rope_scaling factor where it extends "
       "the context, as vLLM)", {"vllm_max_model_len", "lmdeploy_session_len"}},
      {"max_logprobs", FlagType::kInt, "20", "most top_logprobs / logprobs / prompt_logprobs a request may ask"},
      {"request_timeout", FlagType::kFloat, "60",
       "seconds a request may take to arrive whole (else 408), and a client to take each part of an answer (else "
       "it is dropped)"},
  };
  for (auto& f : own) flags.push_back(f);
  for (auto& f : serve::generation_flags()) flags.push_back(f);
  for (auto& f : cli::common_flags()) flags.push_back(f);
  return flags;
}

int64_t default_max_model_len(const model::ModelConfig& c) {
  const auto& rope = c.rope;
  if (rope.type == "linear" || rope.type == "dynamic")
    return static_cast<int64_t>(static_cast<double>(c.max_position_embeddings) * rope.factor);
  if (rope.type == "yarn") {
    const int64_t original = rope.original_max_position_embeddings > 0 ? rope.original_max_position_embeddings
                                                                       : c.max_position_embeddings;
    return static_cast<int64_t>(static_cast<double>(original) * rope.factor);
  }
  // longrope: continuous batching cannot yet recompute one row's cache when it passes the original length.
  if (rope.type == "longrope") return std::min(c.max_position_embeddings, rope.original_max_position_embeddings);
  return c.max_position_embeddings;
}

namespace {

// SIGINT/SIGTERM: the handler only writes the signal number to a pipe (async-signal-safe, and whichever thread
// LibTorch's pools let take the signal); a watcher thread reads it: the first stops the server gracefully
// (in-flight requests finish), a second cancels what still runs.
int g_signal_pipe[2] = {-1, -1};

extern "C" void on_stop_signal(int sig) {
  const char byte = static_cast<char>(sig);
  [[maybe_unused]] auto n = ::write(g_signal_pipe[1], &byte, 1);
}

class SignalWatcher {
 public:
  SignalWatcher(serve::HttpServer& server, serve::Scheduler& scheduler) {
    SWIFT_CHECK(::pipe(g_signal_pipe) == 0, DeviceError, "cannot create a pipe for signal handling", "check ulimit -n");
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the server
    thread_ = std::thread([&server, &scheduler] {
      for (int count = 0;;) {
        char sig = 0;
        if (::read(g_signal_pipe[0], &sig, 1) != 1 || sig == 0) return;  // 0: the watcher is being destroyed
        if (++count == 1) {
          log_info("received ", sig == SIGINT ? "SIGINT" : "SIGTERM", ": finishing in-flight requests (again to cancel them)");
          server.stop();
        } else {
          log_info("cancelling in-flight requests");
          scheduler.shutdown(/*drain=*/false);
        }
      }
    });
  }
  ~SignalWatcher() {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    const char zero = 0;
    [[maybe_unused]] auto n = ::write(g_signal_pipe[1], &zero, 1);
    thread_.join();
    ::close(g_signal_pipe[0]);
    ::close(g_signal_pipe[1]);
  }

 private:
  std::thread thread_;
};

}  // namespace

namespace {

// deploy's flags, typed once.
struct DeployOptions {
  serve::InferenceOptions model;
  serve::GenerationOptions generation;
  std::string host = "0.0.0.0", api_key, served_model_name;
  int64_t port = 8000, max_batch_size = 32, max_waiting = 256, max_logprobs = 20;
  int64_t max_model_len = 0;  // 0: the model's (default_max_model_len)
  double request_timeout = 60;  // seconds
  uint64_t seed = 42;
};

DeployOptions deploy_options(const cli::Flags& flags, const std::string& device) {
  cli::Problems problems;
  DeployOptions o;
  o.model = serve::inference_options(flags, device, problems);
  o.generation = serve::generation_options(flags);
  o.host = flags.str("host");
  o.port = flags.integer("port");
  o.api_key = flags.str("api_key");
  o.served_model_name = flags.str("served_model_name");
  o.max_batch_size = flags.integer("max_batch_size");
  o.max_waiting = flags.integer("max_waiting");
  o.max_logprobs = flags.integer("max_logprobs");
  o.max_model_len = flags.integer("max_model_len");
  o.request_timeout = flags.number("request_timeout");
  o.seed = static_cast<uint64_t>(flags.integer("seed"));
  problems.in_range("request_timeout", o.request_timeout, 0.1, 86400.0, "e.g. 60 (seconds)");
  problems.check(o.port >= 0 && o.port <= 65535, "--port must be 0..65535", "e.g. --port 8000");
  problems.check(o.max_batch_size >= 1, "--max_batch_size must be at least 1", "e.g. 32");
  problems.check(o.max_waiting >= 1, "--max_waiting must be at least 1", "e.g. 256");
  problems.check(o.max_logprobs >= 0, "--max_logprobs must be >= 0", "e.g. 20");
  problems.check(o.max_model_len >= 0, "--max_model_len must be >= 0", "0 takes the model's");
  problems.raise();
  return o;
}

}  // namespace

int run_deploy(const std::vector<std::string>& args) {
  const auto flags = cli::parse_flags("deploy", deploy_flags(), args);
  const auto setup = cli::apply_common_flags(flags);
  const DeployOptions o = deploy_options(flags, setup.device);  // every problem at once, before loading
  serve::InferenceModel m = serve::load_inference_model(o.model);

  serve::ServiceOptions options;
  options.model_root = m.model_dir;
  options.model_id = o.served_model_name;
  if (options.model_id.empty()) {  // the folder's name; a hub id's name (not its snapshot folder's, a commit)
    auto dir = fs::path(o.model.model_given.empty() ? m.model_dir : o.model.model_given);
    options.model_id = (dir.has_filename() ? dir.filename() : dir.parent_path().filename()).string();
  }
  const auto& rope = m.model->config().rope;
  SWIFT_CHECK(rope.type != "longrope" || o.max_model_len <= rope.original_max_position_embeddings, UsageError,
              "--max_model_len " + std::to_string(o.max_model_len) + ": swift deploy serves longrope models (Phi-3 128k) "
              "up to original_max_position_embeddings (" + std::to_string(rope.original_max_position_embeddings) +
              ") tokens per request for now",
              "lower --max_model_len, or use swift infer, which recomputes the cache at that length as transformers does");
  options.max_model_len = o.max_model_len > 0 ? o.max_model_len : default_max_model_len(m.model->config());
  if (rope.type == "longrope" && o.max_model_len == 0)
    log_info("deploy: longrope model served up to ", options.max_model_len, " tokens per request (its original length)");
  options.vocab_size = m.model->config().vocab_size;
  options.defaults = serve::sampling_defaults(o.generation, m, o.seed);
  options.stop_words = o.generation.stop_words;
  options.enable_thinking = m.enable_thinking;
  options.limits.max_logprobs = o.max_logprobs;

  // --adapters name=path: each served as its own model id next to the base, chosen per batch row.
  std::vector<serve::NamedAdapter> named;
  for (const auto& a : o.model.named_adapters) {
    const auto eq = a.find('=');
    named.push_back({a.substr(0, eq), a.substr(eq + 1)});
    SWIFT_CHECK(!named.back().name.empty() && !named.back().path.empty() && named.back().name != options.model_id,
                UsageError, "--adapters '" + a + "' needs a name and a folder, and a name other than the base model's",
                "e.g. --adapters my-lora=runs/sft/checkpoint-100");
    options.adapters.emplace_back(named.back().name, named.back().path);
  }
  std::unique_ptr<serve::MultiLora> multi_lora;
  if (!named.empty())
    multi_lora = std::make_unique<serve::MultiLora>(m.model, named, [&] { return model::load_model(m.model_dir, m.load_options); });

  serve::SchedulerOptions sched;
  if (multi_lora) sched.select_adapters = [&multi_lora](const std::vector<int64_t>& ids) { multi_lora->set_rows(ids); };
  sched.max_batch_size = o.max_batch_size;
  sched.max_waiting = static_cast<size_t>(o.max_waiting);

  serve::HttpOptions http;
  http.host = o.host;
  http.port = static_cast<int>(o.port);
  http.api_key = o.api_key;
  http.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.request_timeout * 1000));
  // Each connection holds a thread while its request waits or runs: enough for a full batch and queue.
  http.threads = static_cast<int>(std::min<int64_t>(1024, sched.max_batch_size + static_cast<int64_t>(sched.max_waiting) + 8));

  // A reward model: each chat request's whole conversation is scored (one at a time; the model is small next to
  // a generation batch), answered as ms-swift's engine answers for a seq_cls model.
  std::mutex scoring;
  if (m.model->is_sequence_classifier()) {
    http.score_chat = [&m, &scoring, &options](const serve::ChatRequest& request) {
      templates::Encoded encoded;
      try {
        encoded = m.chat->encode(request.messages);
      } catch (const UserError& e) {
        throw serve::ApiError(400, e.what(), "messages");
      }
      const auto n = static_cast<int64_t>(encoded.input_ids.size());
      if (n > options.max_model_len)
        throw serve::ApiError(400, "the conversation has " + std::to_string(n) + " tokens, more than max_model_len " +
                                       std::to_string(options.max_model_len), "messages", "context_length_exceeded");
      double score = 0;
      {
        std::lock_guard<std::mutex> lock(scoring);
        torch::NoGradGuard no_grad;
        model::ForwardArgs args;
        args.input_ids = at::tensor(encoded.input_ids, at::kLong).unsqueeze(0).to(m.model->device());
        score = model::sequence_scores(m.model, args, at::ones_like(args.input_ids)).flatten()[0].item<double>();
      }
      return nlohmann::json{
          {"id", "chatcmpl-score"}, {"object", "chat.completion"},
          {"created", static_cast<int64_t>(std::time(nullptr))}, {"model", options.model_id},
          {"choices", nlohmann::json::array({{{"index", 0},
                                              {"message", {{"role", "assistant"}, {"content", score}}},
                                              {"finish_reason", "stop"},
                                              {"logprobs", nullptr}}})},
          {"usage", {{"prompt_tokens", n}, {"completion_tokens", 0}, {"total_tokens", n}}}};
    };
    log_info("a reward model: /v1/chat/completions answers each conversation's reward (the message content)");
  }

  serve::Scheduler scheduler(m.model, sched);
  serve::CompletionService service(scheduler, *m.tokenizer, *m.chat, options);
  serve::HttpServer server(service, http);
  const int port = server.bind();
  {
    SignalWatcher watcher(server, scheduler);
    log_info("serving '", options.model_id, "' on http://", http.host, ":", port, " (max_model_len ",
             options.max_model_len, ", max_batch_size ", sched.max_batch_size, ")");
    server.serve();
  }
  scheduler.shutdown(/*drain=*/true);
  const auto stats = scheduler.stats();
  log_info("server stopped after ", stats.steps, " decode steps (largest batch ", stats.largest_batch, ")");
  return 0;
}

}  // namespace swift::recipes
