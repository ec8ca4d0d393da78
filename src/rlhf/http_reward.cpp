// A reward function behind an HTTP endpoint (see reward_functions.h, http_reward): each generation batch is one POST
// of the external command's JSON lines; the answer is one reward (or null) per line, or a JSON array of them.
#include <curl/curl.h>

#include <algorithm>
#include <mutex>

#include "swift/core/error.h"
#include "swift/rlhf/external_scorer.h"
#include "swift/rlhf/reward_functions.h"

namespace swift::rlhf {

namespace {

// The endpoint's name for the metrics: the last part of its path ("http://host:8000/score": score), else "Http".
std::string endpoint_name(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (path == std::string::npos) return "Http";
  std::string last = url.substr(path);
  last = last.substr(0, last.find_first_of("?#"));
  while (!last.empty() && last.back() == '/') last.pop_back();
  last = last.substr(last.find_last_of('/') + 1);
  return last.empty() ? "Http" : last;
}

size_t append_body(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

class HttpScorer : public RewardFunction {
 public:
  HttpScorer(std::string url, double timeout_s) : url_(std::move(url)), name_(endpoint_name(url_)), timeout_s_(timeout_s) {
    static std::once_flag curl_ready;
    std::call_once(curl_ready, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  }
  std::string name() const override { return name_; }

  std::vector<std::optional<double>> score(const std::vector<ScoredCompletion>& batch) const override {
    try {
      const std::vector<std::optional<double>> rewards = parse_scorer_answer(answer_lines(post(scorer_input(batch))), batch.size());
      failures_.succeeded();
      return rewards;
    } catch (const ScorerFailure& e) {
      return failures_.failed(e, batch.size(), "");
    }
  }

 private:
  // The response body of one POST; ScorerFailure on a transport error, a timeout or a status other than 2xx.
  std::string post(const std::string& body) const {
    CURL* curl = curl_easy_init();
    if (!curl) throw ScorerFailure("libcurl could not start a request");
    char error[CURL_ERROR_SIZE] = "";
    std::string response;
    curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/x-ndjson");
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue wait before large bodies
    curl_easy_setopt(curl, CURLOPT_URL, url_.c_str());
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, std::max(1L, static_cast<long>(timeout_s_ * 1000)));  // 0 would be none
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response);
    const CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    if (rc == CURLE_OPERATION_TIMEDOUT)
      throw ScorerFailure("no answer within --reward_timeout " + std::to_string(static_cast<int64_t>(timeout_s_)) + " s");
    if (rc != CURLE_OK) throw ScorerFailure(std::string("the request failed: ") + (error[0] ? error : curl_easy_strerror(rc)));
    if (status < 200 || status >= 300)
      throw ScorerFailure("it answered HTTP " + std::to_string(status) + ": '" + response.substr(0, 120) + "'");
    return response;
  }

  // A JSON array's items, else the body's non-empty lines.
  static std::vector<std::string> answer_lines(const std::string& body) {
    std::vector<std::string> lines;
    const nlohmann::json whole = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (whole.is_array()) {
      for (const auto& v : whole) lines.push_back(v.dump());
      return lines;
    }
    size_t start = 0;
    while (start < body.size()) {
      size_t end = body.find('\n', start);
      if (end == std::string::npos) end = body.size();
      std::string line = body.substr(start, end - start);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) lines.push_back(line);
      start = end + 1;
    }
    return lines;
  }

  std::string url_, name_;
  double timeout_s_;
  mutable ScorerFailures failures_{"the reward endpoint " + url_, name_,
                                   "check that it answers a POST of JSON lines (docs/grpo.md, External reward functions)"};
};

}  // namespace

std::unique_ptr<RewardFunction> http_reward(const std::string& url, double timeout_s) {
  SWIFT_CHECK(timeout_s > 0, UsageError, "--reward_timeout must be positive", "e.g. 300 (seconds per generation batch)");
  return std::make_unique<HttpScorer>(url, timeout_s);
}

}  // namespace swift::rlhf
