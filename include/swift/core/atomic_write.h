// Atomic writes: everything is written to a temporary sibling and renamed into place, so a crash never
// leaves a half-written file or folder that a later run would pick up.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace swift {

// Writes `bytes` to `path` through `path.tmp-<pid>` + fsync + rename. Throws DataError naming the path.
void atomic_write_file(const std::filesystem::path& path, std::string_view bytes);

// A folder built in a temporary sibling ("<final>.tmp-<pid>") and renamed over `final` by commit().
// Destroyed without commit(), it removes the temporary folder and leaves `final` untouched.
class AtomicDir {
 public:
  explicit AtomicDir(std::filesystem::path final_path);
  ~AtomicDir();
  AtomicDir(const AtomicDir&) = delete;
  AtomicDir& operator=(const AtomicDir&) = delete;

  const std::filesystem::path& path() const { return tmp_; }  // write here
  const std::filesystem::path& final_path() const { return final_; }
  // Replaces `final` (if it exists) with the temporary folder.
  void commit();

 private:
  std::filesystem::path final_;
  std::filesystem::path tmp_;
  bool committed_ = false;
};

// The temporary siblings of writes whose process is gone (a killed run's "checkpoint-40.tmp-1234",
// "args.json.tmp-1234": their pid no longer runs on this machine), removed from `dir`. Returns their names. A run
// calls it on its folder when it starts, so a crash never leaves a checkpoint-sized leftover for good.
std::vector<std::string> remove_stale_temporaries(const std::filesystem::path& dir);

}  // namespace swift
