// Files of a listing brought into a cache, each one checked before it is used: its size, and its sha256 where the
// hub names one (Git LFS files on Hugging Face, every file on ModelScope). A file arrives as a partial file next
// to its place (`<blob>.incomplete`, `<file>.incomplete`) that a later run resumes with a Range request; a
// mismatch deletes it and fails with exit 3. Nothing appears under its final name before it is whole and checked,
// and the Hugging Face snapshot's links are made only once every file is there.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "swift/hub/cache_layout.h"
#include "swift/hub/http_client.h"
#include "swift/hub/repo_listing.h"

namespace swift::hub {

struct DownloadSettings {
  bool progress = true;  // a progress line on stderr
  int attempts = 3;      // tries per file when the connection drops (each resumes)
};

// Into blobs/ + snapshots/<commit>/ + refs/<revision>; returns the snapshot folder.
std::filesystem::path download_to_hf_cache(const HfCacheLayout& cache, const RepoListing& listing,
                                           const std::vector<RemoteFile>& files, HttpClient& http,
                                           const std::string& endpoint, const DownloadSettings& settings);

// Into <type>s/org--name/snapshots/<revision>/ (or an older SDK's folder already holding the repository); returns
// that folder.
std::filesystem::path download_to_modelscope_cache(const ModelScopeCacheLayout& cache, const RepoListing& listing,
                                                   const std::vector<RemoteFile>& files, HttpClient& http,
                                                   const std::string& endpoint, const DownloadSettings& settings);

// The ModelScope folder a repository at `revision` lives in: an older SDK's when it holds the default revision,
// else the snapshot folder.
std::filesystem::path modelscope_repo_folder(const ModelScopeCacheLayout& cache, RepoType type, const std::string& repo_id,
                                             const std::string& revision);

}  // namespace swift::hub
