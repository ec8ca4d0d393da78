// ms-swift's built-in reward functions (see reward_functions.h).
#include "swift/rlhf/reward_functions.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cmath>
#include <functional>
#include <set>

#include "swift/core/error.h"
#include "swift/tokenizer/unicode.h"

namespace swift::rlhf {

namespace {

// Python's str.isspace: Unicode White_Space plus the information separators U+001C..U+001F.
bool python_space(uint32_t cp) { return tokenizer::is_white_space(cp) || (cp >= 0x1c && cp <= 0x1f); }

// Python's str.split(): the runs of non-space characters.
std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  for (size_t i = 0; i < text.size();) {
    const size_t start = i;
    const uint32_t cp = tokenizer::next_code_point(text, i);
    if (python_space(cp)) {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else {
      word.append(text, start, i - start);
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

// The position after the whitespace (Python's \s) at `pos`.
size_t skip_space(const std::string& text, size_t pos) {
  while (pos < text.size()) {
    size_t next = pos;
    if (!python_space(tokenizer::next_code_point(text, next))) break;
    pos = next;
  }
  return pos;
}

// --- accuracy: the answer of a text and its value ---

// The contents of every \boxed{...} (balanced braces), in order.
std::vector<std::string> boxed_contents(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = text.find("\\boxed"); at != std::string::npos; at = text.find("\\boxed", at + 1)) {
    size_t open = skip_space(text, at + 6);
    if (open >= text.size() || text[open] != '{') continue;
    int depth = 0;
    for (size_t i = open; i < text.size(); ++i) {
      if (text[i] == '{') ++depth;
      if (text[i] == '}' && --depth == 0) {
        out.push_back(text.substr(open + 1, i - open - 1));
        break;
      }
    }
  }
  return out;
}

std::string strip(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return is_digit(c) || std::isalpha(static_cast<unsigned char>(c)); }

// The end of the number written at s[pos] (a sign when `signed_ok`, digits with thousands separators or plain, a
// decimal part), or npos. Hand-written rather than std::regex, whose recursion a long completion could exhaust.
size_t scan_number(const std::string& s, size_t pos, bool signed_ok) {
  size_t i = pos;
  if (signed_ok && i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  const size_t digits = i;
  while (i < s.size() && is_digit(s[i])) ++i;
  if (i == digits) return std::string::npos;
  if (i - digits <= 3)  // 1,234,567
    while (i + 4 <= s.size() && s[i] == ',' && is_digit(s[i + 1]) && is_digit(s[i + 2]) && is_digit(s[i + 3]) &&
           (i + 4 == s.size() || !is_digit(s[i + 4])))
      i += 4;
  if (i + 1 < s.size() && s[i] == '.' && is_digit(s[i + 1])) {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i;
  }
  return i;
}

// The value of a text that is one number, nothing else; nullopt for anything else or a value no double holds.
std::optional<double> whole_number(std::string s) {
  if (s.empty() || scan_number(s, 0, true) != s.size()) return std::nullopt;
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  errno = 0;
  const double v = std::strtod(s.c_str(), nullptr);
  if (errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  return v;
}

// A number-like answer: an integer or decimal (thousands separators allowed), a fraction a/b or \frac{a}{b}, signed;
// a percentage keeps its number and says so (math_verify reads a solution's 50\% as 0.5 or 50, an answer's as 50).
struct Number {
  double value = 0;
  bool percent = false;
  bool integer = false;  // written without a decimal part or fraction: compared exactly
};
std::optional<Number> numeric_value(std::string s) {
  if (s.size() > 64) return std::nullopt;  // an answer, not a paragraph
  Number n;
  for (const std::string sign : {"\\%", "%"})
    if (s.size() > sign.size() && s.compare(s.size() - sign.size(), sign.size(), sign) == 0) {
      s.resize(s.size() - sign.size());
      n.percent = true;
      break;
    }
  if (const auto v = whole_number(s)) {
    n.value = *v;
    n.integer = s.find('.') == std::string::npos;
    return n;
  }
  // [+-]\frac{a}{b}
  const size_t sign = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  if (s.compare(sign, 6, "\\frac{") == 0) {
    const size_t mid = s.find("}{", sign + 6), close = s.size() - 1;
    if (mid != std::string::npos && s[close] == '}' && mid + 2 <= close) {
      const auto a = whole_number(s.substr(sign + 6, mid - sign - 6)), b = whole_number(s.substr(mid + 2, close - mid - 2));
      if (a && b && *b != 0) {
        n.value = *a / *b * (sign && s[0] == '-' ? -1 : 1);
        return n;
      }
    }
    return std::nullopt;
  }
  if (const size_t slash = s.find('/'); slash != std::string::npos && s.find('/', slash + 1) == std::string::npos) {
    const auto a = whole_number(s.substr(0, slash)), b = whole_number(s.substr(slash + 1));
    if (a && b && *b != 0 && s[slash + 1] != '-' && s[slash + 1] != '+') {
      n.value = *a / *b;
      return n;
    }
  }
  return std::nullopt;
}

// \text{...}, \mbox{...}, \mathrm{...} (no braces inside): removed when what is left is a number (units: 5\text{ cm}),
// else replaced by their content (multiple choice: (\text{A}) is (A)).
std::string without_text_commands(const std::string& s) {
  std::string removed, unwrapped;
  size_t i = 0;
  while (i < s.size()) {
    size_t command = std::string::npos, open = std::string::npos;
    for (const char* name : {"\\text{", "\\mbox{", "\\mathrm{"}) {
      const size_t at = s.find(name, i);
      if (at != std::string::npos && at < command) {
        command = at;
        open = at + std::string(name).size();
      }
    }
    const size_t close = command == std::string::npos ? std::string::npos : s.find('}', open);
    if (close == std::string::npos || s.find('{', open) < close) {
      removed += s.substr(i);
      unwrapped += s.substr(i);
      break;
    }
    removed += s.substr(i, command - i);
    unwrapped += s.substr(i, command - i) + s.substr(open, close - open);
    i = close + 1;
  }
  return numeric_value(strip(removed)) ? removed : unwrapped;
}

// An answer's text without what only typesets it: $, spacing commands, \left/\right, degrees, \text{} units; the
// right side of an equation (x = 5); no spaces or final full stop.
std::string normalise(std::string s) {
  for (const char* typesetting : {"$", "\\left", "\\right", "\\!", "\\,", "\\;", "\\:", "\\ ", "^\\circ", "^{\\circ}",
                                  "\\displaystyle"})
    replace_all(s, typesetting, "");
  replace_all(s, "\\dfrac", "\\frac");
  replace_all(s, "\\tfrac", "\\frac");
  s = strip(without_text_commands(s));
  if (const auto eq = s.rfind('='); eq != std::string::npos && eq + 1 < s.size()) s = strip(s.substr(eq + 1));
  std::string compact;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) compact += c;
  while (!compact.empty() && compact.back() == '.') compact.pop_back();
  return compact;
}

// The last number written in a text; a sign counts only where no letter or digit comes before it (12-5 ends in 5).
std::optional<std::string> last_number(const std::string& text) {
  std::optional<std::string> last;
  for (size_t i = 0; i < text.size();) {
    const bool sign = (text[i] == '-' || text[i] == '+') && i + 1 < text.size() && is_digit(text[i + 1]) &&
                      (i == 0 || !is_alnum(text[i - 1]));
    if (!sign && !is_digit(text[i])) {
      ++i;
      continue;
    }
    const size_t end = scan_number(text, i, sign);
    last = text.substr(i, end - i);
    i = end;
  }
  return last;
}

// The position after "answer is" / "answer:" (any case) at or after `from`, past spaces and a colon; npos if none.
size_t after_stated_answer(const std::string& text, size_t from) {
  std::string lower = text.substr(from);  // ASCII lowercase: positions stay those of `text`
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (size_t at = lower.find("answer"); at != std::string::npos; at = lower.find("answer", at + 1)) {
    size_t i = at + 6;
    if (lower.compare(i, 3, " is") == 0) i += 3;
    else if (i >= lower.size() || lower[i] != ':') continue;
    while (i < lower.size() && (lower[i] == ' ' || lower[i] == ':' || lower[i] == '\t' || lower[i] == '\n')) ++i;
    return from + i;
  }
  return std::string::npos;
}

// The answer a text gives, as math_verify's first match finds it in the common cases: every \boxed{}; else the
// $...$ after "answer is"; and unless `anchored_latex_only`: the number after "answer is" / "answer:", the last
// $...$, the whole text when it is one number, else the last number in it. Empty: no answer.
std::vector<std::string> extract_answers(const std::string& text, bool anchored_latex_only) {
  std::vector<std::string> boxed = boxed_contents(text);
  if (!boxed.empty()) return boxed;
  for (size_t at = after_stated_answer(text, 0); at != std::string::npos; at = after_stated_answer(text, at)) {
    if (at < text.size() && text[at] == '$') {
      const size_t close = text.find('$', at + 1);
      if (close != std::string::npos && close > at + 1) return {text.substr(at + 1, close - at - 1)};
    }
    if (at >= text.size()) break;
  }
  if (anchored_latex_only) return {};
  if (const size_t at = after_stated_answer(text, 0); at != std::string::npos && at < text.size()) {
    size_t end = scan_number(text, at, true);
    if (end != std::string::npos) {
      if (end + 1 < text.size() && text[end] == '/' && is_digit(text[end + 1])) end = scan_number(text, end + 1, false);
      return {text.substr(at, end - at)};
    }
  }
  std::optional<std::string> math;  // the last $...$ pair
  for (size_t open = text.find('$'); open != std::string::npos;) {
    const size_t close = text.find('$', open + 1);
    if (close == std::string::npos) break;
    if (close > open + 1) math = text.substr(open + 1, close - open - 1);
    open = text.find('$', close + 1);
  }
  if (math) return {*math};
  if (numeric_value(normalise(text))) return {text};
  if (auto number = last_number(text)) return {*number};
  return {};
}

// math_verify's comparison for these answers: numbers written as integers exactly, others rounded to 6 decimals
// (a solution's percentage as its hundredth or its number, an answer's as its number); anything else equal once
// normalised. Several boxed answers compare as sets.
bool same_answer(const std::string& gold, const std::string& given) {
  const std::string g = normalise(gold), a = normalise(given);
  const auto x = numeric_value(g), y = numeric_value(a);
  if (!x || !y) return !x && !y && g == a;
  const auto round6 = [](double v) { return std::round(v * 1e6) / 1e6; };
  std::vector<double> accepted{x->value};
  if (x->percent) accepted.push_back(x->value / 100);
  for (const double v : accepted)
    if (x->integer && !x->percent ? v == y->value : round6(v) == round6(y->value)) return true;
  return false;
}
bool same_answers(const std::vector<std::string>& gold, const std::vector<std::string>& given) {
  if (given.empty() || gold.size() != given.size()) return false;
  for (const auto& g : gold)
    if (std::none_of(given.begin(), given.end(), [&](const std::string& a) { return same_answer(g, a); })) return false;
  return true;
}

// The text inside the first <answer>...</answer>, stripped; nullopt without one.
std::optional<std::string> answer_tag(const std::string& text) {
  const size_t open = text.find("<answer>");
  if (open == std::string::npos) return std::nullopt;
  const size_t close = text.find("</answer>", open + 8);
  if (close == std::string::npos) return std::nullopt;
  return strip(text.substr(open + 8, close - open - 8));
}

// --- the functions by name ---

const std::string& solution_of(const ScoredCompletion& c, const std::string& function) {
  SWIFT_CHECK(c.row && c.row->contains("solution") && (*c.row)["solution"].is_string(), DataError,
              "--reward_funcs " + function + " reads each row's \"solution\" column (a string), and a row has none",
              "give every row a solution (the reference answer), as AI-MO/NuminaMath-TIR has");
  return (*c.row)["solution"].get_ref<const std::string&>();
}

// A built-in: one reward per completion, each from the completion alone.
class PerCompletion : public RewardFunction {
 public:
  using Score = std::function<double(const ScoredCompletion&)>;
  PerCompletion(std::string name, Score score) : name_(std::move(name)), score_(std::move(score)) {}
  std::string name() const override { return name_; }
  std::vector<std::optional<double>> score(const std::vector<ScoredCompletion>& batch) const override {
    std::vector<std::optional<double>> out;
    for (const auto& c : batch) {
      ScoredCompletion valid = c;  // a completion cut inside a character is scored as Python decodes it
      valid.text = tokenizer::utf8_lossy(c.text);
      out.emplace_back(score_(valid));
    }
    return out;
  }

 private:
  std::string name_;
  Score score_;
};

}  // namespace

double format_reward(const std::string& text) {
  // ^<think>.*?</think>\s*<answer>.*?</answer>(?![\s\S]) under re.DOTALL: some </think> after the opening tag is
  // followed, past whitespace, by <answer>, and the text ends with </answer> after that.
  static const std::string think = "<think>", end_think = "</think>", answer = "<answer>", end_answer = "</answer>";
  if (text.rfind(think, 0) != 0 || text.size() < end_answer.size() ||
      text.compare(text.size() - end_answer.size(), end_answer.size(), end_answer) != 0)
    return 0.0;
  const size_t last_close = text.size() - end_answer.size();
  for (size_t at = text.find(end_think, think.size()); at != std::string::npos; at = text.find(end_think, at + 1)) {
    const size_t open = skip_space(text, at + end_think.size());
    if (text.compare(open, answer.size(), answer) == 0 && open + answer.size() <= last_close) return 1.0;
  }
  return 0.0;
}

double repetition_reward(const std::string& text, int64_t n_grams, double max_penalty) {
  const std::vector<std::string> words = split_words(tokenizer::to_lower(text));
  const auto n = static_cast<size_t>(n_grams);
  if (text.empty() || split_words(text).size() < n) return 0.0;
  std::set<std::vector<std::string>> distinct;
  const size_t total = words.size() - n + 1;
  for (size_t i = 0; i < total; ++i) distinct.emplace(words.begin() + static_cast<std::ptrdiff_t>(i), words.begin() + static_cast<std::ptrdiff_t>(i + n));
  return (1.0 - static_cast<double>(distinct.size()) / static_cast<double>(total)) * max_penalty;
}

double cosine_reward(bool correct, int64_t tokens, const RewardSettings& s) {
  // Correct answers go from min_len_value_correct (short) down to max_len_value_correct; wrong ones from
  // min_len_value_wrong up to max_len_value_wrong.
  const double at_long = correct ? s.cosine_max_len_value_correct : s.cosine_max_len_value_wrong;
  const double at_short = correct ? s.cosine_min_len_value_correct : s.cosine_min_len_value_wrong;
  const double progress = (1 - std::cos(static_cast<double>(tokens) * M_PI / static_cast<double>(s.cosine_max_len))) / 2;
  return at_short - (at_short - at_long) * progress;
}

double soft_overlong_reward(int64_t tokens, int64_t soft_max_length, int64_t soft_cache_length) {
  const double exceed = static_cast<double>(tokens - (soft_max_length - soft_cache_length));
  return std::min(-exceed / static_cast<double>(soft_cache_length), 0.0);
}

double accuracy_reward(const std::string& completion, const std::string& solution) {
  const std::optional<std::string> tagged_solution = answer_tag(solution);
  const std::vector<std::string> gold = extract_answers(tagged_solution ? *tagged_solution : solution, false);
  if (gold.empty()) return 0.0;  // a solution without an answer teaches nothing: 0, as ms-swift
  const std::optional<std::string> tagged = answer_tag(completion);
  // Inside <answer> anything goes; elsewhere only a \boxed{} or a stated "answer is $...$" counts.
  const std::vector<std::string> given = tagged ? extract_answers(*tagged, false) : extract_answers(completion, true);
  return same_answers(gold, given) ? 1.0 : 0.0;
}

std::unique_ptr<RewardFunction> builtin_reward(const std::string& name, const RewardSettings& settings) {
  const RewardSettings s = settings;
  // Under ms-swift's class names, which its metrics use.
  if (name == "accuracy")
    return std::make_unique<PerCompletion>("MathAccuracy", [](const ScoredCompletion& c) {
      return accuracy_reward(c.text, solution_of(c, "accuracy"));
    });
  if (name == "format")
    return std::make_unique<PerCompletion>("Format", [](const ScoredCompletion& c) { return format_reward(c.text); });
  if (name == "cosine") {
    SWIFT_CHECK(s.cosine_max_len > 0, UsageError, "--cosine_max_len must be positive",
                "give the token length at which the cosine schedule ends");
    return std::make_unique<PerCompletion>("CosineReward", [s](const ScoredCompletion& c) {
      return cosine_reward(accuracy_reward(c.text, solution_of(c, "cosine")) >= 1, c.tokens, s);
    });
  }
  if (name == "repetition") {
    SWIFT_CHECK(s.repetition_n_grams > 0, UsageError, "--repetition_n_grams must be positive", "use 3, ms-swift's default");
    return std::make_unique<PerCompletion>("RepetitionPenalty", [s](const ScoredCompletion& c) {
      return repetition_reward(c.text, s.repetition_n_grams, s.repetition_max_penalty);
    });
  }
  if (name == "soft_overlong") {
    SWIFT_CHECK(s.soft_cache_length.has_value(), UsageError, "--reward_funcs soft_overlong needs --soft_cache_length",
                "give the length of the band before --soft_max_length over which the penalty grows");
    SWIFT_CHECK(*s.soft_cache_length > 0 && *s.soft_cache_length < s.soft_max_length, UsageError,
                "--soft_cache_length " + std::to_string(*s.soft_cache_length) + " must be between 0 and --soft_max_length " +
                    std::to_string(s.soft_max_length),
                "as ms-swift requires soft_cache_length < soft_max_length");
    return std::make_unique<PerCompletion>("SoftOverlong", [s](const ScoredCompletion& c) {
      return soft_overlong_reward(c.tokens, s.soft_max_length, *s.soft_cache_length);
    });
  }
  throw UsageError("--reward_funcs " + name + " is not a built-in reward function",
                   "use accuracy, format, cosine, repetition or soft_overlong, or external:COMMAND (docs/grpo.md)");
}

std::unique_ptr<RewardFunction> reward_function(const std::string& name, const RewardSettings& settings) {
  static const std::string external = "external:";
  if (name.rfind(external, 0) == 0) return external_reward(name.substr(external.size()), settings.reward_timeout);
  if (name.rfind("http://", 0) == 0 || name.rfind("https://", 0) == 0) return http_reward(name, settings.reward_timeout);
  return builtin_reward(name, settings);
}

}  // namespace swift::rlhf
