// The hubs' environment variables, read as huggingface_hub (constants.py), modelscope_hub (config.py) and ms-swift
// (USE_HF) read them.
#include "swift/hub/hub_settings.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace swift::hub {

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

fs::path home() {
  const std::string h = env("HOME");
  return h.empty() ? fs::path("/") : fs::path(h);
}

// "~/x" as the shell would expand it (Python's os.path.expanduser).
fs::path expand_user(const std::string& path) {
  if (path == "~" || path.rfind("~/", 0) == 0) return home() / path.substr(std::min<size_t>(2, path.size()));
  return path;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

std::string without_trailing_slashes(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

long positive_seconds(const char* name, long fallback) {
  const std::string v = env(name);
  if (v.empty()) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  return (end && *end == '\0' && n > 0) ? n : fallback;
}

bool is_rank_zero() {
  for (const char* name : {"RANK", "LOCAL_RANK"}) {
    const std::string v = env(name);
    if (!v.empty() && v != "0") return false;
  }
  return true;
}

}  // namespace

bool env_true(const char* name) {
  std::string v = trim(env(name));
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  return v == "1" || v == "true" || v == "yes" || v == "on" || v == "t" || v == "y";
}

HubEnvironment HubEnvironment::from_process() {
  HubEnvironment e;
  e.use_hf = env_true("USE_HF");
  e.offline = env_true("HF_HUB_OFFLINE") || env_true("TRANSFORMERS_OFFLINE") || env_true("MODELSCOPE_OFFLINE");

  const std::string hf_endpoint = without_trailing_slashes(trim(env("HF_ENDPOINT")));
  e.hf_endpoint = hf_endpoint.empty() ? "https://huggingface.co" : hf_endpoint;
  // modelscope_hub: MODELSCOPE_ENDPOINT, then the older MODELSCOPE_DOMAIN (a bare domain gets https://).
  std::string ms = trim(env("MODELSCOPE_ENDPOINT"));
  if (ms.empty()) ms = trim(env("MODELSCOPE_DOMAIN"));
  if (ms.empty()) ms = "https://modelscope.cn";
  std::string lower = ms;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower.rfind("http://", 0) != 0 && lower.rfind("https://", 0) != 0) ms = "https://" + ms;
  e.modelscope_endpoint = without_trailing_slashes(ms);

  const std::string xdg = env("XDG_CACHE_HOME");
  const fs::path hf_home = !env("HF_HOME").empty() ? expand_user(env("HF_HOME"))
                                                   : (xdg.empty() ? home() / ".cache" : fs::path(xdg)) / "huggingface";
  if (!env("HF_HUB_CACHE").empty()) e.hf_cache = expand_user(env("HF_HUB_CACHE"));
  else if (!env("HUGGINGFACE_HUB_CACHE").empty()) e.hf_cache = expand_user(env("HUGGINGFACE_HUB_CACHE"));
  else e.hf_cache = hf_home / "hub";
  e.modelscope_cache = !env("MODELSCOPE_CACHE").empty() ? expand_user(env("MODELSCOPE_CACHE"))
                                                       : home() / ".cache" / "modelscope";

  e.hf_token = trim(env("HF_TOKEN"));
  if (e.hf_token.empty()) e.hf_token = trim(env("HUGGING_FACE_HUB_TOKEN"));
  if (e.hf_token.empty()) {  // `hf auth login` / `huggingface-cli login` saved it here
    const fs::path token_file = !env("HF_TOKEN_PATH").empty() ? expand_user(env("HF_TOKEN_PATH")) : hf_home / "token";
    std::ifstream in(token_file);
    std::stringstream text;
    if (in) text << in.rdbuf();
    e.hf_token = trim(text.str());
  }
  e.modelscope_token = trim(env("MODELSCOPE_API_TOKEN"));

  e.connect_timeout_s = positive_seconds("SWIFT_HUB_CONNECT_TIMEOUT", 10);
  e.stall_timeout_s = positive_seconds("HF_HUB_DOWNLOAD_TIMEOUT", 30);
  e.progress = !env_true("HF_HUB_DISABLE_PROGRESS_BARS") && is_rank_zero();
  return e;
}

Hub choose_hub(const HubOptions& options, const HubEnvironment& env, std::optional<Hub> prefix) {
  if (prefix) return *prefix;
  const bool use_hf = options.use_hf.value_or(env.use_hf);
  return use_hf ? Hub::kHuggingFace : Hub::kModelScope;
}

std::string revision_for(Hub hub, const std::string& revision) {
  if (hub == Hub::kHuggingFace) return revision.empty() || revision == "master" ? "main" : revision;
  return revision.empty() || revision == "main" ? "master" : revision;
}

std::string token_for(Hub hub, const HubOptions& options, const HubEnvironment& env) {
  if (!options.token.empty()) return options.token;
  return hub == Hub::kHuggingFace ? env.hf_token : env.modelscope_token;
}

}  // namespace swift::hub
