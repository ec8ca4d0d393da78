// ms-swift's built-in reward functions (see reward_functions.h).
#include "swift/rlhf/reward_functions.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <regex>
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

// An answer's text without what only typesets it: $, spacing commands, \left/\right, degrees, units in \text{}.
std::string normalise(std::string s) {
  for (const char* typesetting : {"$", "\\left", "\\right", "\\!", "\\,", "\\;", "\\:", "\\ ", "^\\circ", "^{\\circ}",
                                  "\\displaystyle"})
    replace_all(s, typesetting, "");
  replace_all(s, "\\dfrac", "\\frac");
  replace_all(s, "\\tfrac", "\\frac");
  static const std::regex text_unit(R"(\\(text|mbox|mathrm)\{[^{}]*\})");
  const std::string without_units = strip(std::regex_replace(s, text_unit, ""));
  if (!without_units.empty()) s = without_units;  // "5\text{ cm}" is 5; "\text{yes}" stays itself
  s = strip(s);
  if (const auto eq = s.rfind('='); eq != std::string::npos && eq + 1 < s.size()) s = strip(s.substr(eq + 1));  // x = 5
  std::string compact;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) compact += c;
  while (!compact.empty() && compact.back() == '.') compact.pop_back();
  return compact;
}

// The value of a number-like answer: an integer or decimal (thousands separators allowed), a fraction a/b or
// \frac{a}{b}, signed, or a percentage (its hundredth).
std::optional<double> numeric_value(std::string s) {
  bool percent = false;
  for (const char* sign : {"\\%", "%"})
    if (s.size() > std::string(sign).size() && s.rfind(sign) == s.size() - std::string(sign).size()) {
      s.resize(s.size() - std::string(sign).size());
      percent = true;
      break;
    }
  static const std::regex number(R"(^([+-]?)(\d{1,3}(?:,\d{3})+|\d+)?(\.\d+)?$)");
  static const std::regex fraction(R"(^([+-]?)\\frac\{([^{}]+)\}\{([^{}]+)\}$)");
  static const std::regex slash(R"(^([+-]?\d+(?:\.\d+)?)/(\d+(?:\.\d+)?)$)");
  std::smatch m;
  std::optional<double> value;
  if (std::regex_match(s, m, number) && (m[2].matched || m[3].matched)) {
    std::string digits = m[2].str();
    digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
    value = std::stod((digits.empty() ? "0" : digits) + m[3].str()) * (m[1] == "-" ? -1 : 1);
  } else if (std::regex_match(s, m, fraction)) {
    const auto a = numeric_value(m[2]), b = numeric_value(m[3]);
    if (a && b && *b != 0) value = *a / *b * (m[1] == "-" ? -1 : 1);
  } else if (std::regex_match(s, m, slash)) {
    const double b = std::stod(m[2]);
    if (b != 0) value = std::stod(m[1]) / b;
  }
  if (value && percent) *value /= 100;
  return value;
}

// The last number written in a text (digits with an optional sign, decimals and thousands separators).
std::optional<std::string> last_number(const std::string& text) {
  static const std::regex number(R"([+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[+-]?\d+(?:\.\d+)?)");
  std::optional<std::string> last;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), number); it != std::sregex_iterator(); ++it) last = it->str();
  return last;
}

// The answer a text gives, as math_verify's first match finds it for the common cases: every \boxed{}; else the
// $...$ after "answer is"; and unless `anchored_latex_only`: the number after "answer is" / "answer:", the last
// $...$, the whole text when it is a number or fraction, else the last number in it. Empty: no answer.
std::vector<std::string> extract_answers(const std::string& text, bool anchored_latex_only) {
  std::vector<std::string> boxed = boxed_contents(text);
  if (!boxed.empty()) return boxed;
  static const std::regex stated_latex(R"(answer is\s*:?\s*\$([^$]+)\$)", std::regex::icase);
  std::smatch m;
  if (std::regex_search(text, m, stated_latex)) return {m[1].str()};
  if (anchored_latex_only) return {};
  static const std::regex stated(R"(answer(?: is|:)\s*:?\s*([+-]?\d[\d,]*(?:\.\d+)?(?:/\d+)?))", std::regex::icase);
  if (std::regex_search(text, m, stated)) return {m[1].str()};
  static const std::regex inline_math(R"(\$([^$]+)\$)");
  std::optional<std::string> math;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), inline_math); it != std::sregex_iterator(); ++it) math = (*it)[1].str();
  if (math) return {*math};
  if (numeric_value(normalise(text))) return {text};
  if (auto number = last_number(text)) return {*number};
  return {};
}

// math_verify's comparison for these answers: numbers equal to 6 decimals, anything else equal once normalised;
// several boxed answers compare as sets.
bool same_answer(const std::vector<std::string>& gold, const std::vector<std::string>& given) {
  const auto key = [](const std::string& answer) {
    const std::string text = normalise(answer);
    if (const auto v = numeric_value(text)) return std::string(1, '#').append(std::to_string(std::llround(*v * 1e6)));
    return text;
  };
  std::set<std::string> a, b;
  for (const auto& g : gold) a.insert(key(g));
  for (const auto& g : given) b.insert(key(g));
  return !b.empty() && a == b;
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
    for (const auto& c : batch) out.emplace_back(score_(c));
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
  return same_answer(gold, given) ? 1.0 : 0.0;
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
                   "use accuracy, format, cosine, repetition or soft_overlong (or an external scorer)");
}

}  // namespace swift::rlhf
