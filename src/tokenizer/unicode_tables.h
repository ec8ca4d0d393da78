// Unicode class tables generated from Hugging Face tokenizers (see gen_unicode_tables.py): sorted, disjoint
// inclusive ranges of code points.
#pragma once

#include <cstddef>
#include <cstdint>

namespace swift::tokenizer::detail {

struct CodePointRange {
  uint32_t lo;
  uint32_t hi;
};

extern const CodePointRange kLetterRanges[];  // \p{L} as Oniguruma matches it
extern const size_t kLetterRangesSize;
extern const CodePointRange kNumberRanges[];  // \p{N} as Oniguruma matches it (= Rust char::is_numeric)
extern const size_t kNumberRangesSize;
// Code points Hugging Face tokenizers' normalizers (an older Unicode) leave alone but utf8proc decomposes or
// treats as combining marks.
extern const CodePointRange kNormalizationInertRanges[];
extern const size_t kNormalizationInertRangesSize;
// Starters that utf8proc composes with the preceding character and tokenizers' NFC/NFKC does not.
extern const CodePointRange kCompositionInertRanges[];
extern const size_t kCompositionInertRangesSize;

}  // namespace swift::tokenizer::detail
