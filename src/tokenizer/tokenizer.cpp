// Tokenizer::load (folder layout, file choice, errors naming the file) and the shared helpers: batch encoding on
// threads and special-token ids.
#include "swift/tokenizer/tokenizer.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "json_util.h"
#include "swift/core/logging.h"
#include "swift/tokenizer/hf_tokenizer.h"
#include "swift/tokenizer/sentencepiece_tokenizer.h"

namespace swift::tokenizer {

namespace fs = std::filesystem;

std::unique_ptr<Tokenizer> Tokenizer::from_json(std::string_view text, TokenizerConfig config,
                                                const std::string& source) {
  detail::json j;
  try {
    j = detail::json::parse(text.begin(), text.end());
  } catch (const detail::json::exception& e) {
    throw DataError(source + " is not valid JSON: " + e.what(),
                    "the file may be truncated; re-download tokenizer.json from the model repository");
  }
  return with_context(source, [&]() -> std::unique_ptr<Tokenizer> {
    return std::make_unique<HfTokenizer>(j, std::move(config));
  });
}

namespace {

// chat_template.jinja (transformers >= 4.43 writes it beside the config) or the older chat_template.json.
void load_chat_template_file(const fs::path& dir, TokenizerConfig& config) {
  if (config.chat_template) return;
  if (fs::is_regular_file(dir / "chat_template.jinja")) {
    config.chat_template = read_text_file(dir / "chat_template.jinja");
    return;
  }
  fs::path json_file = dir / "chat_template.json";
  if (fs::is_regular_file(json_file)) {
    std::string text = read_text_file(json_file);
    detail::json j = detail::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("chat_template") && j["chat_template"].is_string()) {
      config.chat_template = j["chat_template"].get<std::string>();
    } else {
      throw DataError(json_file.string() + ": expected {\"chat_template\": \"...\"}",
                      "fix or delete the file; tokenizer_config.json's chat_template is used otherwise");
    }
  }
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::load(const fs::path& path) {
  SWIFT_CHECK(fs::exists(path), DataError, "tokenizer path " + path.string() + " does not exist",
              "pass a Hugging Face model folder (with tokenizer.json or tokenizer.model)");
  fs::path dir = fs::is_directory(path) ? path : path.parent_path();
  TokenizerConfig config;
  if (fs::is_regular_file(dir / "tokenizer_config.json")) config = load_tokenizer_config(dir / "tokenizer_config.json");
  load_chat_template_file(dir, config);

  fs::path file;
  if (fs::is_directory(path)) {
    if (fs::is_regular_file(path / "tokenizer.json")) {
      file = path / "tokenizer.json";
    } else if (fs::is_regular_file(path / "tokenizer.model")) {
      file = path / "tokenizer.model";
    } else {
      throw DataError("no tokenizer in " + path.string() + ": expected tokenizer.json or tokenizer.model",
                      "download the tokenizer files too, e.g. `huggingface-cli download <model> tokenizer.json "
                      "tokenizer_config.json --local-dir " + path.string() + "`");
    }
  } else {
    file = path;
  }
  std::unique_ptr<Tokenizer> tok;
  if (file.extension() == ".json") {
    tok = from_json(read_text_file(file), std::move(config), file.string());
  } else {
    tok = load_sentencepiece(file, std::move(config));
  }
  log_debug("tokenizer: loaded ", file.string(), " (", tok->vocab_size(), " tokens)");
  return tok;
}

std::vector<std::vector<int64_t>> Tokenizer::encode_batch(const std::vector<std::string>& texts, int num_threads,
                                                          bool add_special_tokens) const {
  std::vector<std::vector<int64_t>> out(texts.size());
  if (num_threads <= 0) num_threads = int(std::max(1u, std::thread::hardware_concurrency()));
  num_threads = int(std::min<size_t>(size_t(num_threads), (texts.size() + 15) / 16));
  if (num_threads <= 1) {
    for (size_t i = 0; i < texts.size(); ++i) out[i] = encode(texts[i], add_special_tokens);
    return out;
  }
  // Workers take chunks of texts from a shared counter, so one long text does not stall a whole slice.
  constexpr size_t kChunk = 16;
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    try {
      for (size_t begin; (begin = next.fetch_add(kChunk)) < texts.size();) {
        size_t end = std::min(texts.size(), begin + kChunk);
        for (size_t i = begin; i < end; ++i) out[i] = encode(texts[i], add_special_tokens);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      next = texts.size();
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < num_threads; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  return out;
}

std::optional<int64_t> Tokenizer::id_of(const std::optional<std::string>& token) const {
  if (!token) return std::nullopt;
  return token_to_id(*token);
}
std::optional<int64_t> Tokenizer::bos_id() const { return id_of(config_.bos_token); }
std::optional<int64_t> Tokenizer::eos_id() const { return id_of(config_.eos_token); }
std::optional<int64_t> Tokenizer::pad_id() const { return id_of(config_.pad_token); }

}  // namespace swift::tokenizer
