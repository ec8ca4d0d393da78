// Decoders of tokenizer.json ("decoder"): ByteLevel, ByteFallback, Metaspace, Fuse, Strip, Replace, BPEDecoder,
// WordPiece and Sequence, with Hugging Face tokenizers' semantics: each step rewrites the list of token strings
// (decode_chain) and the result is their concatenation.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <vector>

namespace swift::tokenizer {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
  std::string decode(std::vector<std::string> tokens) const;
  // Whether this decoder (or a step of it) is ByteFallback, which decodes a run of <0xXX> tokens together: the
  // text of such a token depends on the byte tokens after it.
  virtual bool joins_byte_tokens() const { return false; }

  // null gives nullptr; DataError for unknown types or bad fields, naming `where`.
  static std::unique_ptr<Decoder> from_json(const nlohmann::json& j, const std::string& where = "decoder");
};

// "<0xXX>" (either case of hex digits) -> the byte, as ByteFallback reads it.
bool parse_byte_token(const std::string& token, unsigned char* byte);

}  // namespace swift::tokenizer
