// The tokenizer of a Hugging Face model folder behind one interface: tokenizer.json (byte-level BPE as in
// Qwen2/2.5/3 and Llama 3, SentencePiece-style BPE with byte fallback as in Mistral and Llama 2) or a
// SentencePiece tokenizer.model, plus tokenizer_config.json.
//
//   auto tok = swift::tokenizer::Tokenizer::load("/models/Qwen3-0.6B");
//   std::vector<int64_t> ids = tok->encode("Hello world");       // ids identical to HF tokenizers
//   std::string text = tok->decode(ids);
//   swift::tokenizer::StreamDecoder stream(*tok);                 // token-by-token text for `swift infer`
//
// Thread-safety: all const methods may be called from many threads at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "swift/tokenizer/tokenizer_config.h"

namespace swift::tokenizer {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Loads `path`: a model folder (tokenizer.json preferred, else tokenizer.model; tokenizer_config.json and
  // chat_template.jinja when present) or one of those files directly. DataError naming the file when it is
  // missing or malformed.
  static std::unique_ptr<Tokenizer> load(const std::filesystem::path& path);
  // A tokenizer.json given as text; `source` names it in errors.
  static std::unique_ptr<Tokenizer> from_json(std::string_view tokenizer_json, TokenizerConfig config = {},
                                              const std::string& source = "tokenizer.json");

  // Token ids of `text` (UTF-8; invalid bytes are read as U+FFFD). add_special_tokens adds what the
  // post-processor adds (BOS for Mistral/Llama 2), as Hugging Face's encode(text, add_special_tokens=...).
  virtual std::vector<int64_t> encode(std::string_view text, bool add_special_tokens = false) const = 0;
  // Text of `ids`; unknown ids are skipped, special tokens too when skip_special_tokens.
  virtual std::string decode(const int64_t* ids, size_t n, bool skip_special_tokens = false) const = 0;
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens = false) const {
    return decode(ids.data(), ids.size(), skip_special_tokens);
  }
  // Encodes every text on `num_threads` threads (<= 0: all cores); the result is in input order and equals
  // encode() of each text.
  std::vector<std::vector<int64_t>> encode_batch(const std::vector<std::string>& texts, int num_threads = 1,
                                                 bool add_special_tokens = false) const;

  // The id of a token string (added tokens included), if any.
  virtual std::optional<int64_t> token_to_id(std::string_view token) const = 0;
  // The token string of `id` (the vocabulary's spelling, e.g. "Ġhello"); "" for an unknown id.
  virtual std::string id_to_token(int64_t id) const = 0;
  // One past the largest id, added tokens included.
  virtual int64_t vocab_size() const = 0;
  // Whether `id` is a special token (skipped by decode(..., skip_special_tokens=true)).
  virtual bool is_special(int64_t id) const = 0;
  // Whether the text of `id` can still change with the ids that follow it beyond completing a UTF-8 character:
  // byte-fallback tokens (<0xXX>), which decode together with the byte tokens after them. StreamDecoder holds
  // them back.
  virtual bool decode_depends_on_next(int64_t /*id*/) const { return false; }

  const TokenizerConfig& config() const { return config_; }
  // Ids of the config's special tokens, when set and in the vocabulary.
  std::optional<int64_t> bos_id() const;
  std::optional<int64_t> eos_id() const;
  std::optional<int64_t> pad_id() const;

 protected:
  explicit Tokenizer(TokenizerConfig config) : config_(std::move(config)) {}
  TokenizerConfig config_;

 private:
  std::optional<int64_t> id_of(const std::optional<std::string>& token) const;
};

// Incremental detokenization for streaming generation: push() ids one at a time and get text pieces that never
// end in half a UTF-8 character; the pieces, followed by flush(), concatenate to decode(all ids). Follows Hugging
// Face's DecodeStream: it re-decodes a short window (the previous piece's ids as context, so decoders that strip
// a leading space or join bytes see the same neighbours as in a full decode). Unlike DecodeStream it also holds
// back runs of byte-fallback tokens until they end, since an invalid byte turns its whole run into U+FFFDs.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false);
  // New text completed by `id` ("" while a character or word is incomplete).
  std::string push(int64_t id);
  // The text still held back (incomplete bytes decode as U+FFFD); then starts over.
  std::string flush();
  void reset();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_tokens_;
  std::vector<int64_t> ids_;  // context ids (already emitted) followed by pending ones
  std::string prefix_;        // decode of the context ids
  size_t prefix_index_ = 0;   // number of context ids in ids_
  bool in_byte_run_ = false;  // the last id with text was a byte-fallback token
};

}  // namespace swift::tokenizer
