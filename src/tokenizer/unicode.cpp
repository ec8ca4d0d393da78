// UTF-8 helpers and Unicode classes (utf8proc for categories and normal forms, tables generated from
// Hugging Face tokenizers for \p{L} / \p{N}).
#include "swift/tokenizer/unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <vector>
#include <stdexcept>

#include "unicode_tables.h"

namespace swift::tokenizer {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

std::string utf8_encode(uint32_t cp) {
  std::string out;
  append_utf8(out, cp);
  return out;
}

size_t count_code_points(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

namespace {

inline bool is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length of the valid UTF-8 sequence at s[i], or 0 with `bad` set to the number of bytes forming the maximal
// invalid subpart (at least 1) that one U+FFFD replaces.
inline size_t valid_sequence(const unsigned char* s, size_t n, size_t i, size_t& bad) {
  unsigned char b = s[i];
  if (b < 0x80) return 1;
  size_t width = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b >= 0xC2 && b <= 0xDF) {
    width = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    width = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    width = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    bad = 1;
    return 0;
  }
  if (i + 1 >= n || s[i + 1] < lo || s[i + 1] > hi) {
    bad = 1;
    return 0;
  }
  for (size_t k = 2; k < width; ++k) {
    if (i + k >= n || !is_cont(s[i + k])) {
      bad = k;
      return 0;
    }
  }
  return width;
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  size_t n = text.size(), i = 0;
  while (i < n) {
    if (s[i] < 0x80) {
      ++i;
      continue;
    }
    size_t bad = 0;
    size_t len = valid_sequence(s, n, i, bad);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

void append_utf8_lossy(std::string& out, std::string_view bytes) {
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t n = bytes.size(), i = 0, run = 0;  // run: start of the pending valid span
  while (i < n) {
    if (s[i] < 0x80) {
      ++i;
      continue;
    }
    size_t bad = 0;
    size_t len = valid_sequence(s, n, i, bad);
    if (len) {
      i += len;
      continue;
    }
    out.append(bytes.data() + run, i - run);
    out.append(kReplacementUtf8);
    i += bad;
    run = i;
  }
  out.append(bytes.data() + run, n - run);
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  append_utf8_lossy(out, bytes);
  return out;
}

bool is_white_space(uint32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0: case 0x1680:
    case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

namespace {
bool in_ranges(const detail::CodePointRange* ranges, size_t n, uint32_t cp) {
  const auto* end = ranges + n;
  const auto* it = std::upper_bound(ranges, end, cp,
                                    [](uint32_t v, const detail::CodePointRange& r) { return v < r.lo; });
  return it != ranges && (it - 1)->hi >= cp;
}
}  // namespace

bool is_letter(uint32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return in_ranges(detail::kLetterRanges, detail::kLetterRangesSize, cp);
}

bool is_numeric(uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return in_ranges(detail::kNumberRanges, detail::kNumberRangesSize, cp);
}

bool is_combining_mark(uint32_t cp) {
  auto cat = utf8proc_category(utf8proc_int32_t(cp));
  return cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_MC || cat == UTF8PROC_CATEGORY_ME;
}

bool is_word_char(uint32_t cp) {
  if (cp < 0x80) return is_letter(cp) || (cp >= '0' && cp <= '9') || cp == '_';
  if (is_letter(cp) || is_combining_mark(cp)) return true;
  auto cat = utf8proc_category(utf8proc_int32_t(cp));
  if (cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_PC) return true;
  // Join_Control and the circled/squared letters that Unicode counts as Alphabetic.
  return cp == 0x200C || cp == 0x200D || (cp >= 0x24B6 && cp <= 0x24E9) || (cp >= 0x1F130 && cp <= 0x1F149) ||
         (cp >= 0x1F150 && cp <= 0x1F169) || (cp >= 0x1F170 && cp <= 0x1F189);
}

namespace {

std::string utf8proc_normalize(std::string_view s, NormalForm form) {
  if (s.empty()) return {};
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::kNFC: options |= UTF8PROC_COMPOSE; break;
    case NormalForm::kNFD: options |= UTF8PROC_DECOMPOSE; break;
    case NormalForm::kNFKC: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case NormalForm::kNFKD: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  utf8proc_uint8_t* out = nullptr;
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                    utf8proc_ssize_t(s.size()), &out, utf8proc_option_t(options));
  if (n < 0) throw std::runtime_error(std::string("utf8proc: ") + utf8proc_errmsg(n));
  std::string result(reinterpret_cast<const char*>(out), size_t(n));
  std::free(out);
  return result;
}

// Characters to keep verbatim, normalizing the text around them (exact, since each is a starter that never
// composes): those Hugging Face's normalizers do not know (its Unicode is older than utf8proc's), the second
// halves of compositions it does not make, and U+11A7, which utf8proc <= 2.8 wrongly composes into a preceding
// LV syllable.
bool keep_verbatim(uint32_t cp, NormalForm form) {
  bool composing = form == NormalForm::kNFC || form == NormalForm::kNFKC;
  if (composing && (cp == 0x11A7 || in_ranges(detail::kCompositionInertRanges, detail::kCompositionInertRangesSize, cp))) {
    return true;
  }
  return in_ranges(detail::kNormalizationInertRanges, detail::kNormalizationInertRangesSize, cp);
}

}  // namespace

namespace {

bool composes(NormalForm form) { return form == NormalForm::kNFC || form == NormalForm::kNFKC; }

// Whether `cp` can change under `form` or change its neighbours (reordering, composition with what precedes).
bool compute_may_change(uint32_t cp, NormalForm form) {
  const utf8proc_property_t* p = utf8proc_get_property(utf8proc_int32_t(cp));
  if (p->combining_class != 0) return true;
  bool second = p->comb_index != UINT16_MAX && p->comb_index >= 0x8000;
  bool hangul_vt = (cp >= 0x1161 && cp <= 0x1175) || (cp >= 0x11A8 && cp <= 0x11C2);
  if (composes(form) && (second || hangul_vt)) return true;
  bool hangul_syllable = cp >= 0xAC00 && cp <= 0xD7A3;
  if (hangul_syllable) return !composes(form);
  if (p->decomp_seqindex == UINT16_MAX) return false;
  std::string c = utf8_encode(cp);
  return utf8proc_normalize(c, form) != c;
}

// compute_may_change for the BMP, tabulated once per form.
const std::vector<bool>& may_change_table(NormalForm form) {
  static std::once_flag once[4];
  static std::vector<bool> tables[4];
  int f = int(form);
  std::call_once(once[f], [&] {
    tables[f].resize(0x10000);
    for (uint32_t cp = 0; cp < 0x10000; ++cp) {
      tables[f][cp] = (cp < 0xD800 || cp > 0xDFFF) && compute_may_change(cp, form);
    }
  });
  return tables[f];
}

// Quick check: true when normalizing `s` under `form` certainly leaves it unchanged.
bool is_normalized(std::string_view s, NormalForm form) {
  const std::vector<bool>* table = nullptr;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80 || (form == NormalForm::kNFC && c < 0xCC)) {  // NFC never changes anything below U+0300
      i += utf8_len(c);
      continue;
    }
    uint32_t cp = next_code_point(s, i);
    if (cp < 0x10000) {
      if (!table) table = &may_change_table(form);
      if ((*table)[cp]) return false;
    } else if (compute_may_change(cp, form)) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string normalize_unicode(std::string_view s, NormalForm form) {
  if (is_normalized(s, form)) return std::string(s);
  std::string out;
  size_t segment = 0;
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0xCC) {  // below U+0300: never kept verbatim
      i += utf8_len(static_cast<unsigned char>(s[i]));
      continue;
    }
    size_t start = i;
    if (!keep_verbatim(next_code_point(s, i), form)) continue;
    out += utf8proc_normalize(s.substr(segment, start - segment), form);
    out.append(s.substr(start, i - start));
    segment = i;
  }
  if (segment == 0) return utf8proc_normalize(s, form);
  out += utf8proc_normalize(s.substr(segment), form);
  return out;
}

std::string to_lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out.push_back(char(c >= 'A' && c <= 'Z' ? c + 32 : c));
      ++i;
      continue;
    }
    uint32_t cp = next_code_point(s, i);
    if (cp == 0x130) {  // the one unconditional multi-character lowercase mapping (SpecialCasing.txt)
      out.append("i\xCC\x87");
      continue;
    }
    append_utf8(out, uint32_t(utf8proc_tolower(utf8proc_int32_t(cp))));
  }
  return out;
}

}  // namespace swift::tokenizer
