// Normalizers of tokenizer.json ("normalizer"): NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, Prepend,
// Replace, Nmt, ByteLevel and Sequence, with Hugging Face tokenizers' semantics.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace swift::tokenizer {

// A piece of text on its way through the pipeline. origin_len counts the leading bytes of `text` that stem
// from the first character of the original input (0 when the piece starts later): Hugging Face tracks full
// offsets, and Metaspace's prepend_scheme "first" only asks whether a piece starts at original offset 0.
struct NormalizedText {
  std::string text;
  uint32_t origin_len = 0;
};

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(NormalizedText& s) const = 0;

  // Builds the normalizer described by `j` (a tokenizer.json "normalizer" value; null gives nullptr).
  // `where` names the JSON path in errors (DataError for unknown types or bad fields).
  static std::unique_ptr<Normalizer> from_json(const nlohmann::json& j, const std::string& where = "normalizer");
};

// Applies `n` (may be null) to a plain string; for tests and added-token contents.
std::string normalize_string(const Normalizer* n, std::string text);

}  // namespace swift::tokenizer
