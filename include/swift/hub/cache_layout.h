// The on-disk caches other tools already fill, so a model downloaded by huggingface_hub, modelscope or ms-swift is
// found here and one swift downloads is found by them.
//
// Hugging Face (huggingface_hub's file_download.py):
//   <cache>/models--org--name/                 (datasets: datasets--org--name)
//     refs/<revision>                          the commit a branch or tag pointed at
//     blobs/<etag>                             each file once: LFS files by their sha256, others by git blob id
//     blobs/<etag>.incomplete                  a download in progress (resumed by a Range request)
//     snapshots/<commit>/<path>                relative symlinks into blobs/
//   <cache>/.locks/models--org--name/<etag>.lock
// ModelScope (modelscope_hub's _download.py, used by modelscope >= 1.38):
//   <cache>/models/org--name/snapshots/<revision>/<path>      (datasets/ for datasets), plain files
//   <cache>/models/org/name___x/, <cache>/hub/models/org/name___x/   older SDKs ('.' in a name written as "___")
//   <cache>/.lock/file_<sha256 of the file's key>.lock
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "swift/hub/hub_id.h"

namespace swift::hub {

class HfCacheLayout {
 public:
  explicit HfCacheLayout(std::filesystem::path root) : root_(std::move(root)) {}
  const std::filesystem::path& root() const { return root_; }

  static std::string repo_folder_name(RepoType type, const std::string& repo_id);  // "models--org--name"
  std::filesystem::path repo_dir(RepoType type, const std::string& repo_id) const;
  std::filesystem::path ref_file(RepoType type, const std::string& repo_id, const std::string& revision) const;
  std::filesystem::path snapshot_dir(RepoType type, const std::string& repo_id, const std::string& commit) const;
  std::filesystem::path blob(RepoType type, const std::string& repo_id, const std::string& etag) const;
  std::filesystem::path incomplete_blob(RepoType type, const std::string& repo_id, const std::string& etag) const;
  std::filesystem::path lock_file(RepoType type, const std::string& repo_id, const std::string& name) const;

  // The commit a revision names in the cache: a commit hash itself, else what refs/<revision> says; nullopt when
  // the cache has no such ref.
  std::optional<std::string> cached_commit(RepoType type, const std::string& repo_id, const std::string& revision) const;

  // snapshots/<commit>/<path> -> ../../blobs/<etag> (relative, as huggingface_hub makes them, so a moved cache still
  // works), replacing what was there in one rename.
  void link_snapshot_file(RepoType type, const std::string& repo_id, const std::string& commit,
                          const std::string& path, const std::string& etag) const;
  // refs/<revision> = commit, written atomically; nothing for a revision that is the commit itself.
  void write_ref(RepoType type, const std::string& repo_id, const std::string& revision, const std::string& commit) const;

 private:
  std::filesystem::path root_;
};

// The target of a snapshot symlink for the repo file `path` ("a/b.json" -> "../../../blobs/<etag>").
std::string snapshot_link_target(const std::string& path, const std::string& etag);

// True for a 40-digit hex git commit hash.
bool is_commit_hash(const std::string& text);

class ModelScopeCacheLayout {
 public:
  explicit ModelScopeCacheLayout(std::filesystem::path root) : root_(std::move(root)) {}
  const std::filesystem::path& root() const { return root_; }

  std::filesystem::path repo_dir(RepoType type, const std::string& repo_id) const;  // <cache>/models/org--name
  std::filesystem::path snapshot_dir(RepoType type, const std::string& repo_id, const std::string& revision) const;
  // The older SDKs' folders, in the order modelscope probes them.
  std::vector<std::filesystem::path> legacy_dirs(RepoType type, const std::string& repo_id) const;
  // modelscope_hub's per-file and per-repo lock files (the same paths, so Python and swift exclude each other).
  std::filesystem::path file_lock(RepoType type, const std::string& repo_id, const std::string& path) const;
  std::filesystem::path repo_lock(RepoType type, const std::string& repo_id) const;

 private:
  std::filesystem::path root_;
};

}  // namespace swift::hub
