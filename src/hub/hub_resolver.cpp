// Model and dataset ids: the caches first, then the chosen hub.
#include "swift/hub/hub_resolver.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/hub/cache_layout.h"
#include "swift/hub/dataset_files.h"
#include "swift/hub/file_lock.h"
#include "swift/hub/hf_protocol.h"
#include "swift/hub/model_files.h"
#include "swift/hub/modelscope_protocol.h"
#include "swift/hub/snapshot_download.h"

namespace fs = std::filesystem;

namespace swift::hub {

namespace {

Hub other(Hub hub) { return hub == Hub::kHuggingFace ? Hub::kModelScope : Hub::kHuggingFace; }

// Every place a lookup tried, for the message when nothing fits.
struct Searched {
  std::vector<std::string> places;
  void add(const fs::path& path, const std::string& why) { places.push_back(path.string() + " (" + why + ")"); }
  std::string text() const {
    std::string out;
    for (const auto& p : places) out += "\n    " + p;
    return out;
  }
};

// The folders of `id` at `revision` in `hub`'s cache that may hold it, best first (none when it has none).
std::vector<fs::path> cached_folders(Hub hub, RepoType type, const std::string& id, const std::string& revision,
                                     const HubEnvironment& env, Searched& searched) {
  std::vector<fs::path> folders;
  if (hub == Hub::kHuggingFace) {
    const HfCacheLayout cache(env.hf_cache);
    if (const auto commit = cache.cached_commit(type, id, revision)) {
      folders.push_back(cache.snapshot_dir(type, id, *commit));
    } else {
      searched.add(cache.ref_file(type, id, revision), "no such ref");
    }
  } else {
    const ModelScopeCacheLayout cache(env.modelscope_cache);
    folders.push_back(cache.snapshot_dir(type, id, revision));
    if (revision == "master")
      for (const auto& legacy : cache.legacy_dirs(type, id)) folders.push_back(legacy);
  }
  return folders;
}

std::optional<fs::path> cached_model(Hub hub, const std::string& id, const std::string& revision,
                                     const HubEnvironment& env, Searched& searched) {
  for (const auto& dir : cached_folders(hub, RepoType::kModel, id, revision, env, searched)) {
    if (!fs::exists(dir)) {
      searched.add(dir, "absent");
      continue;
    }
    const auto missing = missing_model_parts(dir);
    if (missing.empty()) return dir;
    std::string lacks;
    for (const auto& m : missing) lacks += (lacks.empty() ? "" : ", ") + m;
    searched.add(dir, "lacks " + lacks);
  }
  return std::nullopt;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  if (in) text << in.rdbuf();
  return text.str();
}

// The data files of a cached dataset folder for the subsets asked for; nullopt when it has none.
std::optional<std::vector<fs::path>> cached_dataset_files(const fs::path& dir, const DatasetId& id, Searched& searched) {
  if (!fs::is_directory(dir)) {
    searched.add(dir, "absent");
    return std::nullopt;
  }
  std::vector<std::string> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (fs::is_regular_file(it->path())) files.push_back(it->path().lexically_relative(dir).generic_string());
  }
  try {
    std::vector<fs::path> paths;
    for (const auto& f : select_dataset_files(files, read_text(dir / "README.md"), id.subsets, id.repo_id))
      paths.push_back(dir / f);
    return paths;
  } catch (const UsageError&) {
    throw;  // a subset it does not have: the same answer online
  } catch (const DataError& e) {
    searched.add(dir, e.message());
    return std::nullopt;
  }
}

HttpClient make_client(Hub hub, const HubOptions& options, const HubEnvironment& env) {
  std::vector<std::string> headers;
  const std::string token = token_for(hub, options, env);
  if (!token.empty()) {
    headers.push_back("Authorization: Bearer " + token);
    if (hub == Hub::kModelScope) headers.push_back("Cookie: m_session_id=" + token);  // older endpoints read the cookie
  }
  return HttpClient(HttpTimeouts{env.connect_timeout_s, env.stall_timeout_s}, headers);
}

RepoListing list_repo(Hub hub, HttpClient& http, RepoType type, const std::string& id, const std::string& revision,
                      const HubEnvironment& env) {
  return hub == Hub::kHuggingFace ? hf_list_repo(http, env.hf_endpoint, type, id, revision)
                                  : modelscope_list_repo(http, env.modelscope_endpoint, type, id, revision);
}

fs::path download(Hub hub, const RepoListing& listing, const std::vector<RemoteFile>& files, HttpClient& http,
                  const HubEnvironment& env) {
  const DownloadSettings settings{env.progress, 3};
  if (hub == Hub::kHuggingFace)
    return download_to_hf_cache(HfCacheLayout(env.hf_cache), listing, files, http, env.hf_endpoint, settings);
  return download_to_modelscope_cache(ModelScopeCacheLayout(env.modelscope_cache), listing, files, http,
                                      env.modelscope_endpoint, settings);
}

// One download of a repository at a time (ranks of one job, two jobs on one machine): the later one then finds it
// in the cache.
fs::path repo_lock_path(Hub hub, RepoType type, const std::string& id, const HubEnvironment& env) {
  if (hub == Hub::kHuggingFace) return HfCacheLayout(env.hf_cache).lock_file(type, id, "swift-download");
  return ModelScopeCacheLayout(env.modelscope_cache).repo_lock(type, id);
}

[[noreturn]] void offline_miss(const std::string& flag, const std::string& what, const Searched& searched) {
  throw DataError(flag + " " + what + " is not a local path and is not in the caches, and downloads are off "
                      "(HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE or MODELSCOPE_OFFLINE is set); looked at:" + searched.text(),
                  "download it once with the network on (unset the offline variable), or pass the folder's path");
}

}  // namespace

fs::path resolve_model_id(const std::string& repo_id, const HubOptions& options, const HubEnvironment& env,
                          const std::string& flag) {
  const Hub hub = choose_hub(options, env);
  Searched searched;
  for (const Hub h : {hub, other(hub)}) {
    if (const auto dir = cached_model(h, repo_id, revision_for(h, options.revision), env, searched)) {
      log_info(flag, " ", repo_id, ": ", dir->string(), " (", hub_name(h), " cache)");
      return *dir;
    }
  }
  if (env.offline) offline_miss(flag, repo_id, searched);
  const std::string revision = revision_for(hub, options.revision);
  FileLock lock(repo_lock_path(hub, RepoType::kModel, repo_id, env), repo_id);
  Searched again;  // another process may have finished it while this one waited
  if (const auto dir = cached_model(hub, repo_id, revision, env, again)) return *dir;
  HttpClient http = make_client(hub, options, env);
  const RepoListing listing = with_context(flag + " " + repo_id, [&] { return list_repo(hub, http, RepoType::kModel, repo_id, revision, env); });
  std::string note;
  const auto files = select_model_files(listing.files, &note);
  if (!note.empty()) log_warn(flag, " ", repo_id, ": ", note, "; fetching its config and tokenizer only");
  const fs::path dir = with_context(flag + " " + repo_id, [&] { return download(hub, listing, files, http, env); });
  log_info(flag, " ", repo_id, ": ", dir.string());
  return dir;
}

std::string resolve_model(const std::string& id_or_path, const HubOptions& options, const std::string& flag) {
  if (id_or_path.empty() || fs::exists(id_or_path) || !is_repo_id(id_or_path)) return id_or_path;
  return resolve_model_id(id_or_path, options, HubEnvironment::from_process(), flag).string();
}

std::vector<fs::path> resolve_dataset_id(const DatasetId& id, const HubOptions& options, const HubEnvironment& env,
                                         const std::string& flag) {
  const Hub hub = choose_hub(options, env, id.hub);
  const std::string what = id.repo_id;
  Searched searched;
  const std::vector<Hub> hubs = id.hub ? std::vector<Hub>{hub} : std::vector<Hub>{hub, other(hub)};
  for (const Hub h : hubs)
    for (const auto& dir : cached_folders(h, RepoType::kDataset, id.repo_id, revision_for(h, options.revision), env, searched))
      if (auto files = cached_dataset_files(dir, id, searched)) {
        log_info(flag, " ", what, ": ", dir.string(), " (", hub_name(h), " cache)");
        return *files;
      }
  if (env.offline) offline_miss(flag, what, searched);
  const std::string revision = revision_for(hub, options.revision);
  FileLock lock(repo_lock_path(hub, RepoType::kDataset, id.repo_id, env), id.repo_id);
  for (const auto& dir : cached_folders(hub, RepoType::kDataset, id.repo_id, revision, env, searched))
    if (auto files = cached_dataset_files(dir, id, searched)) return *files;
  HttpClient http = make_client(hub, options, env);
  return with_context(flag + " " + what, [&] {
    const RepoListing listing = list_repo(hub, http, RepoType::kDataset, id.repo_id, revision, env);
    // README.md's YAML header names the subsets and their files: read it before choosing.
    std::string readme;
    std::vector<std::string> paths;
    std::vector<RemoteFile> wanted;
    for (const auto& f : listing.files) {
      paths.push_back(f.path);
      if (f.path == "README.md") {
        const HttpResponse response = http.get(f.url, size_t{4} << 20);
        if (response.ok()) readme = response.body;
        wanted.push_back(f);  // kept with the data, so the cache answers the same question offline
      }
    }
    const auto selected = select_dataset_files(paths, readme, id.subsets, id.repo_id);
    for (const auto& f : listing.files)
      if (std::find(selected.begin(), selected.end(), f.path) != selected.end()) wanted.push_back(f);
    const fs::path dir = download(hub, listing, wanted, http, env);
    std::vector<fs::path> files;
    for (const auto& f : selected) files.push_back(dir / f);
    return files;
  });
}

std::vector<fs::path> resolve_dataset(const DatasetId& id, const HubOptions& options, const std::string& flag) {
  return resolve_dataset_id(id, options, HubEnvironment::from_process(), flag);
}

}  // namespace swift::hub
