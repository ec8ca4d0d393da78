// A repository's files at one revision as a hub's API lists them: what to download, from where, and what each
// must turn out to be (its size, its sha256 when the hub names one).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "swift/hub/hub_id.h"

namespace swift::hub {

struct RemoteFile {
  std::string path;             // in the repository, '/'-separated
  std::optional<int64_t> size;  // bytes, when listed
  std::string sha256;           // lower-case hex when the hub names one (Git LFS files; every ModelScope file)
  std::string blob_id;          // Hugging Face: the cache's blob name (LFS: the sha256, else the git blob id)
  std::string url;              // where to GET it
};

struct RepoListing {
  Hub hub = Hub::kHuggingFace;
  RepoType type = RepoType::kModel;
  std::string repo_id;
  std::string revision;  // as asked: main, master, a tag, a commit
  std::string commit;    // Hugging Face: the commit the revision resolved to (the snapshot's name); ModelScope: ""
  std::vector<RemoteFile> files;
};

}  // namespace swift::hub
