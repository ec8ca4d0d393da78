// ModelScope: file listings and file URLs.
#include "swift/hub/modelscope_protocol.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

#include "swift/core/error.h"
#include "swift/hub/hub_errors.h"
#include "swift/hub/sha256.h"

using nlohmann::json;

namespace swift::hub {

namespace {
std::string type_segment(RepoType type) { return type == RepoType::kDataset ? "datasets" : "models"; }

const json* field(const json& j, const char* upper, const char* lower) {
  if (j.contains(upper)) return &j[upper];
  if (j.contains(lower)) return &j[lower];
  return nullptr;
}
}  // namespace

std::string modelscope_files_url(const std::string& endpoint, RepoType type, const std::string& repo_id,
                                 const std::string& revision, int page) {
  const std::string base = endpoint + "/api/v1/" + type_segment(type) + "/" + repo_id;
  if (type == RepoType::kDataset)
    return base + "/repo/tree?Revision=" + url_encode_query_value(revision) + "&Recursive=True&PageNumber=" +
           std::to_string(page) + "&PageSize=" + std::to_string(kModelScopePageSize);
  return base + "/repo/files?Revision=" + url_encode_query_value(revision) + "&Recursive=True";
}

std::string modelscope_file_url(const std::string& endpoint, RepoType type, const std::string& repo_id,
                                const std::string& revision, const std::string& path) {
  return endpoint + "/api/v1/" + type_segment(type) + "/" + repo_id + "/repo?Revision=" + url_encode_query_value(revision) +
         "&FilePath=" + url_encode_query_value(path);
}

size_t modelscope_parse_files(const std::string& text, const std::string& endpoint, RepoListing& listing) {
  const json j = json::parse(text, nullptr, false);
  const std::string where = endpoint + "'s answer for " + listing.repo_id;
  SWIFT_CHECK(j.is_object(), DataError, where + " is not JSON", "check MODELSCOPE_ENDPOINT / MODELSCOPE_DOMAIN");
  if (const json* ok = field(j, "Success", "success"); ok && ok->is_boolean() && !ok->get<bool>()) {
    const json* message = field(j, "Message", "message");
    throw UsageError("ModelScope (" + endpoint + ") has no " + repo_type_name(listing.type) + " " + listing.repo_id +
                         " at revision " + listing.revision + ": " +
                         (message && message->is_string() ? message->get<std::string>() : std::string("no reason given")),
                     "check the path or the id (--use_hf true or USE_HF=1 looks on Hugging Face instead); a private "
                     "repository needs --hub_token or MODELSCOPE_API_TOKEN");
  }
  const json* data = field(j, "Data", "data");
  const json* files = nullptr;
  if (data && data->is_array()) files = data;
  else if (data && data->is_object()) files = field(*data, "Files", "files");
  SWIFT_CHECK(files && files->is_array(), DataError, where + " has no file list (Data.Files)",
              "check MODELSCOPE_ENDPOINT / MODELSCOPE_DOMAIN: it must be ModelScope or a mirror of its API");
  for (const auto& entry : *files) {
    if (!entry.is_object()) continue;
    const json* type = field(entry, "Type", "type");
    if (type && type->is_string() && type->get<std::string>() == "tree") continue;
    const json* path = field(entry, "Path", "path");
    if (!path) path = field(entry, "Name", "name");
    if (!path || !path->is_string() || path->get<std::string>().empty()) continue;
    RemoteFile f;
    f.path = path->get<std::string>();
    SWIFT_CHECK(f.path.front() != '/' && ("/" + f.path + "/").find("/../") == std::string::npos, DataError,
                where + " lists a file outside the repository: '" + f.path + "'", "check MODELSCOPE_ENDPOINT");
    if (const json* size = field(entry, "Size", "size"); size && size->is_number_integer()) f.size = size->get<int64_t>();
    if (const json* sha = field(entry, "Sha256", "sha256"); sha && sha->is_string() && is_sha256_hex(sha->get<std::string>())) {
      f.sha256 = sha->get<std::string>();
      std::transform(f.sha256.begin(), f.sha256.end(), f.sha256.begin(), [](unsigned char c) { return std::tolower(c); });
    }
    f.url = modelscope_file_url(endpoint, listing.type, listing.repo_id, listing.revision, f.path);
    listing.files.push_back(std::move(f));
  }
  return files->size();
}

RepoListing modelscope_list_repo(HttpClient& http, const std::string& endpoint, RepoType type, const std::string& repo_id,
                                 const std::string& revision) {
  RepoListing listing;
  listing.hub = Hub::kModelScope;
  listing.type = type;
  listing.repo_id = repo_id;
  listing.revision = revision;
  constexpr int kMaxPages = 10000;  // 2M files: past that the server is not paging
  for (int page = 1; page <= kMaxPages; ++page) {
    const HttpResponse response = http.get(modelscope_files_url(endpoint, type, repo_id, revision, page));
    raise_for_status(response, {Hub::kModelScope, type, repo_id, revision, endpoint, ""});
    const size_t entries = modelscope_parse_files(response.body, endpoint, listing);
    if (type != RepoType::kDataset || entries < static_cast<size_t>(kModelScopePageSize)) break;
  }
  return listing;
}

}  // namespace swift::hub
