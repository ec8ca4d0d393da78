// PCRE2 wrapper matching like Hugging Face tokenizers' Oniguruma regexes (see regex.h).
#include "swift/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdio>
#include <mutex>

#include "swift/core/error.h"
#include "swift/tokenizer/unicode.h"
#include "unicode_tables.h"

namespace swift::tokenizer {
namespace {

// \s in Oniguruma is Unicode White_Space; PCRE2's \s also takes U+180E, so it is spelled out.
constexpr const char* kWhiteSpaceClass = "\\t-\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}"
                                         "\\x{202F}\\x{205F}\\x{3000}";

std::string error_text(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

// Code points of an Oniguruma table that this PCRE2's \p{name} misses (PCRE2 may carry an older Unicode),
// as class ranges to append next to \p{name}.
std::string missing_ranges(const char* property, const detail::CodePointRange* ranges, size_t n) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(property), PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_ANCHORED, &err, &offset, nullptr);
  SWIFT_ASSERT(code != nullptr, "cannot compile " + std::string(property));
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
  std::string out;
  int64_t run_lo = -1, run_hi = -1;
  auto flush = [&] {
    if (run_lo < 0) return;
    char buf[64];
    if (run_lo == run_hi) {
      std::snprintf(buf, sizeof(buf), "\\x{%X}", unsigned(run_lo));
    } else {
      std::snprintf(buf, sizeof(buf), "\\x{%X}-\\x{%X}", unsigned(run_lo), unsigned(run_hi));
    }
    out += buf;
    run_lo = run_hi = -1;
  };
  for (size_t r = 0; r < n; ++r) {
    for (uint32_t cp = ranges[r].lo; cp <= ranges[r].hi; ++cp) {
      std::string ch = utf8_encode(cp);
      int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(ch.data()), ch.size(), 0, 0, md, nullptr);
      if (rc >= 0) continue;
      if (run_hi >= 0 && int64_t(cp) == run_hi + 1) {
        run_hi = cp;
      } else {
        flush();
        run_lo = run_hi = cp;
      }
    }
  }
  flush();
  pcre2_match_data_free(md);
  pcre2_code_free(code);
  return out;
}

const std::string& letter_extra() {
  static const std::string s = missing_ranges("\\p{L}", detail::kLetterRanges, detail::kLetterRangesSize);
  return s;
}
const std::string& number_extra() {
  static const std::string s = missing_ranges("\\p{N}", detail::kNumberRanges, detail::kNumberRangesSize);
  return s;
}

// Per-thread match state: PCRE2 match data and a JIT stack big enough for long whitespace runs.
struct MatchState {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(64 * 1024, 32 * 1024 * 1024, nullptr);
  MatchState() { pcre2_jit_stack_assign(context, nullptr, stack); }
  ~MatchState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

MatchState& match_state() {
  thread_local MatchState state;
  return state;
}

}  // namespace

std::string onig_to_pcre2(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '[') {
      if (in_class) {
        // POSIX class such as [:alpha:] inside a class: copy through its closing ":]".
        if (i + 1 < p.size() && p[i + 1] == ':') {
          size_t close = p.find(":]", i + 2);
          if (close != std::string_view::npos) {
            out.append(p.substr(i, close + 2 - i));
            i = close + 1;
            continue;
          }
        }
        out.push_back(c);
        continue;
      }
      in_class = true;
      out.push_back(c);
      // A ']' right after '[' or '[^' is a literal.
      if (i + 1 < p.size() && p[i + 1] == '^') out.push_back(p[++i]);
      if (i + 1 < p.size() && p[i + 1] == ']') out.push_back(p[++i]);
      continue;
    }
    if (c == ']' && in_class) {
      in_class = false;
      out.push_back(c);
      continue;
    }
    if (c != '\\' || i + 1 >= p.size()) {
      out.push_back(c);
      continue;
    }
    char e = p[i + 1];
    if (e == 's') {
      out += in_class ? std::string(kWhiteSpaceClass) : "[" + std::string(kWhiteSpaceClass) + "]";
      ++i;
      continue;
    }
    if (e == 'S' && !in_class) {
      out += "[^" + std::string(kWhiteSpaceClass) + "]";
      ++i;
      continue;
    }
    if (e == 'h' || e == 'H') {  // Oniguruma: hexadecimal digit
      if (in_class && e == 'h') {
        out += "0-9a-fA-F";
      } else if (!in_class) {
        out += e == 'h' ? "[0-9a-fA-F]" : "[^0-9a-fA-F]";
      } else {
        out += "\\H";
      }
      ++i;
      continue;
    }
    if ((e == 'p' || e == 'P') && i + 2 < p.size()) {
      // \p{L}, \pL, \p{N}, \pN (and \P...): add what this PCRE2's tables lack.
      std::string name;
      size_t end = i + 2;
      if (p[i + 2] == '{') {
        size_t close = p.find('}', i + 3);
        if (close != std::string_view::npos) {
          name = std::string(p.substr(i + 3, close - i - 3));
          end = close;
        }
      } else {
        name = std::string(1, p[i + 2]);
      }
      const std::string* extra = nullptr;
      if (name == "L") extra = &letter_extra();
      if (name == "N") extra = &number_extra();
      std::string original(p.substr(i, end + 1 - i));
      i = end;
      if (extra == nullptr || extra->empty()) {
        out += original;
      } else if (in_class && e == 'p') {
        out += "\\p{" + name + "}" + *extra;
      } else if (!in_class) {
        out += std::string(e == 'p' ? "[" : "[^") + "\\p{" + name + "}" + *extra + "]";
      } else {
        out += original;
      }
      continue;
    }
    // Any other escape is copied whole (so "\\[" never opens a class).
    out.push_back(c);
    out.push_back(e);
    ++i;
  }
  return out;
}

Regex::Regex(std::string_view pattern) : pattern_(pattern), compiled_(onig_to_pcre2(pattern)) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(compiled_.data()), compiled_.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &err, &offset, nullptr);
  SWIFT_CHECK(code != nullptr, DataError,
              "regex '" + pattern_ + "' does not compile: " + error_text(err) + " at offset " +
                  std::to_string(offset),
              "the pattern uses syntax PCRE2 lacks; report it with the model name");
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // without JIT support pcre2_match interprets
  code_ = code;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void Regex::find_all(std::string_view text, std::vector<Span>& out) const {
  auto* code = static_cast<pcre2_code*>(code_);
  MatchState& st = match_state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  const size_t n = text.size();
  size_t last_end = 0;
  int64_t last_match_end = -1;
  PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
  while (last_end <= n) {
    int rc = pcre2_match(code, subject, n, last_end, PCRE2_NO_UTF_CHECK, st.data, st.context);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      // The JIT stack ran out (pathological input): the interpreter keeps its backtracking on the heap.
      rc = pcre2_match(code, subject, n, last_end, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, st.data, st.context);
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    SWIFT_CHECK(rc >= 0, DataError,
                "regex '" + pattern_ + "' failed on a " + std::to_string(n) + "-byte text: " + error_text(rc),
                "the input has a pathological run for this pattern; split the text into shorter pieces");
    size_t s = ov[0], e = ov[1];
    if (s == e && last_match_end == int64_t(e)) {
      // An empty match right after the previous match: step one character (no infinite loop).
      if (last_end >= n) break;
      last_end += utf8_len(static_cast<unsigned char>(text[last_end]));
      continue;
    }
    last_end = e;
    last_match_end = int64_t(e);
    out.emplace_back(uint32_t(s), uint32_t(e));
  }
}

Pattern Pattern::literal(std::string text) {
  Pattern p;
  p.literal_ = std::move(text);
  return p;
}

Pattern Pattern::regex(std::string_view pattern) {
  Pattern p;
  p.regex_ = std::make_shared<const Regex>(pattern);
  return p;
}

void Pattern::find_all(std::string_view text, std::vector<Span>& out) const {
  if (regex_) {
    regex_->find_all(text, out);
    return;
  }
  if (literal_.empty()) return;
  size_t pos = 0;
  while ((pos = text.find(literal_, pos)) != std::string_view::npos) {
    out.emplace_back(uint32_t(pos), uint32_t(pos + literal_.size()));
    pos += literal_.size();
  }
}

}  // namespace swift::tokenizer
