// Normalizers with Hugging Face tokenizers' semantics (tokenizers/src/normalizers/*.rs).
#include "swift/tokenizer/normalizer.h"

#include <algorithm>
#include <vector>

#include "json_util.h"
#include "swift/tokenizer/regex.h"
#include "swift/tokenizer/unicode.h"

namespace swift::tokenizer {
namespace {

using detail::json;

// Applies a character-by-character map: the origin region maps to its own image exactly.
template <typename Fn>
void map_chars(NormalizedText& s, Fn&& fn) {
  std::string_view text = s.text;
  uint32_t origin = std::min<uint32_t>(s.origin_len, uint32_t(text.size()));
  std::string head = fn(text.substr(0, origin));
  std::string tail = fn(text.substr(origin));
  s.origin_len = origin ? uint32_t(head.size()) : 0;
  s.text = std::move(head) + tail;
}

class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(NormalForm form) : form_(form) {}
  void normalize(NormalizedText& s) const override {
    std::string out = normalize_unicode(s.text, form_);
    if (s.origin_len && !out.empty()) {
      // Composition may join the first character with what follows: the origin covers at least the first
      // output character and the image of the original origin region.
      size_t first = utf8_len(static_cast<unsigned char>(out[0]));
      size_t image = normalize_unicode(std::string_view(s.text).substr(0, s.origin_len), form_).size();
      s.origin_len = uint32_t(std::min(out.size(), std::max(first, image)));
    } else {
      s.origin_len = 0;
    }
    s.text = std::move(out);
  }

 private:
  NormalForm form_;
};

class Lowercase final : public Normalizer {
 public:
  void normalize(NormalizedText& s) const override {
    map_chars(s, [](std::string_view t) { return to_lower(t); });
  }
};

class StripAccents final : public Normalizer {
 public:
  void normalize(NormalizedText& s) const override {
    map_chars(s, [](std::string_view t) {
      std::string out;
      out.reserve(t.size());
      for (size_t i = 0; i < t.size();) {
        size_t start = i;
        uint32_t cp = next_code_point(t, i);
        if (!is_combining_mark(cp)) out.append(t.substr(start, i - start));
      }
      return out;
    });
  }
};

// Nmt: drops control characters and maps unusual spaces to ' ' (tokenizers' do_nmt).
class Nmt final : public Normalizer {
 public:
  void normalize(NormalizedText& s) const override {
    map_chars(s, [](std::string_view t) {
      std::string out;
      out.reserve(t.size());
      for (size_t i = 0; i < t.size();) {
        size_t start = i;
        uint32_t cp = next_code_point(t, i);
        if ((cp >= 0x1 && cp <= 0x8) || cp == 0xB || (cp >= 0xE && cp <= 0x1F) || cp == 0x7F || cp == 0x8F ||
            cp == 0x9F) {
          continue;
        }
        bool space = cp == 0x9 || cp == 0xA || cp == 0xC || cp == 0xD || cp == 0x1680 ||
                     (cp >= 0x200B && cp <= 0x200F) || cp == 0x2028 || cp == 0x2029 || cp == 0x2581 ||
                     cp == 0xFEFF || cp == 0xFFFD;
        if (space) {
          out.push_back(' ');
        } else {
          out.append(t.substr(start, i - start));
        }
      }
      return out;
    });
  }
};

// Strip: removes leading/trailing White_Space characters.
class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(NormalizedText& s) const override {
    std::string_view t = s.text;
    size_t begin = 0, end = t.size();
    if (left_) {
      while (begin < end) {
        size_t i = begin;
        if (!is_white_space(next_code_point(t, i))) break;
        begin = i;
      }
    }
    if (right_) {
      while (end > begin) {
        size_t i = end - 1;
        while (i > begin && (static_cast<unsigned char>(t[i]) & 0xC0) == 0x80) --i;
        size_t j = i;
        if (!is_white_space(next_code_point(t, j))) break;
        end = i;
      }
    }
    if (begin == 0 && end == t.size()) return;
    s.origin_len = s.origin_len > begin ? uint32_t(std::min<size_t>(s.origin_len - begin, end - begin)) : 0;
    s.text = std::string(t.substr(begin, end - begin));
  }

 private:
  bool left_, right_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(NormalizedText& s) const override {
    if (s.text.empty()) return;
    s.text.insert(0, prefix_);
    if (s.origin_len) s.origin_len += uint32_t(prefix_.size());
  }

 private:
  std::string prefix_;
};

class Replace final : public Normalizer {
 public:
  Replace(Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void normalize(NormalizedText& s) const override {
    std::vector<Span> matches;
    pattern_.find_all(s.text, matches);
    if (matches.empty()) return;
    std::string out;
    out.reserve(s.text.size() + matches.size() * content_.size());
    // Track where the original first character's bytes end up (see NormalizedText::origin_len).
    size_t origin = s.origin_len, new_origin = 0, last = 0;
    for (const Span& m : matches) {
      size_t seg = out.size();
      out.append(s.text, last, m.first - last);
      if (last < origin) new_origin = seg + (std::min<size_t>(m.first, origin) - last);
      out.append(content_);
      if (m.first < origin) new_origin = out.size();
      last = m.second;
    }
    size_t seg = out.size();
    out.append(s.text, last, std::string::npos);
    if (last < origin) new_origin = seg + (origin - last);
    s.origin_len = uint32_t(new_origin);
    s.text = std::move(out);
  }

 private:
  Pattern pattern_;
  std::string content_;
};

// The GPT-2 byte alphabet as a normalizer (each byte becomes one printable character).
class ByteLevelNormalizer final : public Normalizer {
 public:
  void normalize(NormalizedText& s) const override;
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  void normalize(NormalizedText& s) const override {
    for (const auto& n : steps_) n->normalize(s);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

// Defined in pre_tokenizer.cpp: the byte -> character table of the GPT-2 byte alphabet.
void byte_level_map(std::string_view in, std::string& out);

void ByteLevelNormalizer::normalize(NormalizedText& s) const {
  map_chars(s, [](std::string_view t) {
    std::string out;
    byte_level_map(t, out);
    return out;
  });
}

Pattern pattern_from_json(const json& j, const std::string& where) {
  detail::expect_object(j, where);
  if (j.contains("String")) return Pattern::literal(detail::get_string(j, "String", where));
  if (j.contains("Regex")) return Pattern::regex(detail::get_string(j, "Regex", where));
  detail::fail(where, "expected {\"String\": ...} or {\"Regex\": ...}");
}

std::unique_ptr<Normalizer> Normalizer::from_json(const json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  std::string type = detail::type_of(j, where);
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(NormalForm::kNFC);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(NormalForm::kNFD);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(NormalForm::kNFKC);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(NormalForm::kNFKD);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "StripAccents") return std::make_unique<StripAccents>();
  if (type == "Nmt") return std::make_unique<Nmt>();
  if (type == "ByteLevel") return std::make_unique<ByteLevelNormalizer>();
  if (type == "Strip") {
    return std::make_unique<Strip>(detail::get_bool(j, "strip_left", false, where),
                                   detail::get_bool(j, "strip_right", false, where));
  }
  if (type == "Prepend") return std::make_unique<Prepend>(detail::get_string(j, "prepend", where));
  if (type == "Replace") {
    return std::make_unique<Replace>(pattern_from_json(detail::required(j, "pattern", where), where + ".pattern"),
                                     detail::get_string(j, "content", where));
  }
  if (type == "Sequence") {
    const json& list = detail::required(j, "normalizers", where);
    if (!list.is_array()) detail::fail(where + ".normalizers", "expected a list");
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto n = from_json(list[i], where + ".normalizers[" + std::to_string(i) + "]");
      if (n) steps.push_back(std::move(n));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  detail::fail(where, "unsupported normalizer type '" + type + "'",
               "supported: NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, Prepend, Replace, Nmt, ByteLevel, "
               "Sequence; this tokenizer.json needs a normalizer swift does not implement (BertNormalizer, "
               "Precompiled): use the model's tokenizer.model instead if it has one");
}

std::string normalize_string(const Normalizer* n, std::string text) {
  if (!n) return text;
  NormalizedText s{std::move(text), 0};
  n->normalize(s);
  return std::move(s.text);
}

}  // namespace swift::tokenizer
