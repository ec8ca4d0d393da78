// Paths of the Hugging Face and ModelScope caches, and the few writes into them that must be atomic.
#include "swift/hub/cache_layout.h"

#include <unistd.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "swift/core/atomic_write.h"
#include "swift/core/error.h"
#include "swift/hub/sha256.h"

namespace fs = std::filesystem;

namespace swift::hub {

namespace {
std::string type_folder(RepoType type) { return type == RepoType::kDataset ? "datasets" : "models"; }

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}
}  // namespace

bool is_commit_hash(const std::string& text) {
  if (text.size() != 40) return false;
  for (unsigned char c : text)
    if (!std::isdigit(c) && !(c >= 'a' && c <= 'f')) return false;
  return true;
}

std::string HfCacheLayout::repo_folder_name(RepoType type, const std::string& repo_id) {
  return type_folder(type) + "--" + replace_all(repo_id, "/", "--");
}

fs::path HfCacheLayout::repo_dir(RepoType type, const std::string& repo_id) const {
  return root_ / repo_folder_name(type, repo_id);
}

fs::path HfCacheLayout::ref_file(RepoType type, const std::string& repo_id, const std::string& revision) const {
  return repo_dir(type, repo_id) / "refs" / revision;
}

fs::path HfCacheLayout::snapshot_dir(RepoType type, const std::string& repo_id, const std::string& commit) const {
  return repo_dir(type, repo_id) / "snapshots" / commit;
}

fs::path HfCacheLayout::blob(RepoType type, const std::string& repo_id, const std::string& etag) const {
  return repo_dir(type, repo_id) / "blobs" / etag;
}

fs::path HfCacheLayout::incomplete_blob(RepoType type, const std::string& repo_id, const std::string& etag) const {
  return repo_dir(type, repo_id) / "blobs" / (etag + ".incomplete");
}

fs::path HfCacheLayout::lock_file(RepoType type, const std::string& repo_id, const std::string& name) const {
  return root_ / ".locks" / repo_folder_name(type, repo_id) / (name + ".lock");
}

std::optional<std::string> HfCacheLayout::cached_commit(RepoType type, const std::string& repo_id,
                                                        const std::string& revision) const {
  if (is_commit_hash(revision)) return revision;
  std::ifstream in(ref_file(type, repo_id, revision));
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  std::string commit = text.str();
  while (!commit.empty() && std::isspace(static_cast<unsigned char>(commit.back()))) commit.pop_back();
  if (commit.empty()) return std::nullopt;
  return commit;
}

std::string snapshot_link_target(const std::string& path, const std::string& etag) {
  std::string up = "../../";  // out of snapshots/<commit>/
  for (char c : path)
    if (c == '/') up += "../";
  return up + "blobs/" + etag;
}

void HfCacheLayout::link_snapshot_file(RepoType type, const std::string& repo_id, const std::string& commit,
                                       const std::string& path, const std::string& etag) const {
  const fs::path link = snapshot_dir(type, repo_id, commit) / path;
  std::error_code ec;
  fs::create_directories(link.parent_path(), ec);
  const fs::path tmp = link.string() + ".tmp-" + std::to_string(::getpid());
  fs::remove(tmp, ec);
  fs::create_symlink(snapshot_link_target(path, etag), tmp, ec);
  if (!ec) fs::rename(tmp, link, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw DataError("cannot link " + link.string() + " to its blob: " + ec.message(),
                    "the cache needs a file system with symlinks; point HF_HUB_CACHE at one");
  }
}

void HfCacheLayout::write_ref(RepoType type, const std::string& repo_id, const std::string& revision,
                              const std::string& commit) const {
  if (revision == commit) return;
  atomic_write_file(ref_file(type, repo_id, revision), commit);
}

fs::path ModelScopeCacheLayout::repo_dir(RepoType type, const std::string& repo_id) const {
  return root_ / type_folder(type) / replace_all(repo_id, "/", "--");
}

fs::path ModelScopeCacheLayout::snapshot_dir(RepoType type, const std::string& repo_id, const std::string& revision) const {
  return repo_dir(type, repo_id) / "snapshots" / revision;
}

std::vector<fs::path> ModelScopeCacheLayout::legacy_dirs(RepoType type, const std::string& repo_id) const {
  const auto slash = repo_id.find('/');
  const std::string owner = repo_id.substr(0, slash);
  const std::string safe_name = replace_all(repo_id.substr(slash + 1), ".", "___");
  return {root_ / type_folder(type) / owner / safe_name, root_ / "hub" / type_folder(type) / owner / safe_name};
}

namespace {
// modelscope_hub's _lock_path: sha256 of "modelscope-hub-download-lock-v2\0<scope>\0<type>\0<repo>\0<path>".
fs::path modelscope_lock(const fs::path& root, const std::string& scope, RepoType type, const std::string& repo_id,
                         const std::string& path) {
  std::string key = "modelscope-hub-download-lock-v2";
  for (const std::string& part : {scope, repo_type_name(type), repo_id, path}) {
    key += '\0';
    key += part;
  }
  return root / ".lock" / (scope + "_" + sha256_hex(key) + ".lock");
}
}  // namespace

fs::path ModelScopeCacheLayout::file_lock(RepoType type, const std::string& repo_id, const std::string& path) const {
  return modelscope_lock(root_, "file", type, repo_id, path);
}

fs::path ModelScopeCacheLayout::repo_lock(RepoType type, const std::string& repo_id) const {
  return modelscope_lock(root_, "repo", type, repo_id, "");
}

}  // namespace swift::hub
