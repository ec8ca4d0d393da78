// Atomic files and folders: nothing half-written is ever visible under the final name.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "swift/core/atomic_write.h"
#include "swift/core/error.h"
#include "test_util.h"

using namespace swift;
namespace fs = std::filesystem;

namespace {
std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST(AtomicWrite, FileReplacesWholeAndLeavesNoTemporary) {
  test::TempDir tmp;
  atomic_write_file(tmp / "a" / "f.txt", "first");
  atomic_write_file(tmp / "a" / "f.txt", "second");
  EXPECT_EQ(slurp(tmp / "a" / "f.txt"), "second");
  size_t entries = 0;
  for (auto& e : fs::directory_iterator(tmp / "a")) entries += e.is_regular_file();
  EXPECT_EQ(entries, 1u);
  EXPECT_THROW(atomic_write_file("/proc/definitely/not/writable", "x"), std::exception);
}

TEST(AtomicWrite, DirCommitsOrLeavesOldUntouched) {
  test::TempDir tmp;
  const fs::path final_dir = tmp / "out";
  {
    AtomicDir d(final_dir);
    atomic_write_file(d.path() / "x", "1");
    EXPECT_FALSE(fs::exists(final_dir));  // invisible until commit
    d.commit();
  }
  EXPECT_EQ(slurp(final_dir / "x"), "1");
  {
    AtomicDir d(final_dir);
    atomic_write_file(d.path() / "x", "2");
    // No commit: a crash or an error mid-write.
  }
  EXPECT_EQ(slurp(final_dir / "x"), "1");
  {
    AtomicDir d(final_dir);
    atomic_write_file(d.path() / "y", "3");
    d.commit();
  }
  EXPECT_FALSE(fs::exists(final_dir / "x"));
  EXPECT_EQ(slurp(final_dir / "y"), "3");
  size_t siblings = 0;
  for (auto& e : fs::directory_iterator(tmp.path())) siblings += e.is_directory();
  EXPECT_EQ(siblings, 1u);
}

// What a killed process left (its pid runs no more) is removed; a live process's temporaries and other files stay.
TEST(AtomicWrite, StaleTemporariesOfDeadProcessesAreRemoved) {
  test::TempDir tmp;
  fs::create_directories(tmp / "checkpoint-3.tmp-999999");  // a pid no process has here
  atomic_write_file(tmp / "checkpoint-3.tmp-999999" / "model.safetensors", "weights");
  atomic_write_file(tmp / "args.json.tmp-999998", "{}");
  atomic_write_file(tmp / ("args.json.tmp-" + std::to_string(::getpid())), "{}");  // this process: in use
  atomic_write_file(tmp / "logging.jsonl", "{}");
  atomic_write_file(tmp / "notes.tmp-x", "kept: not a pid");
  auto removed = remove_stale_temporaries(tmp.path());
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, (std::vector<std::string>{"args.json.tmp-999998", "checkpoint-3.tmp-999999"}));
  EXPECT_FALSE(fs::exists(tmp / "checkpoint-3.tmp-999999"));
  EXPECT_TRUE(fs::exists(tmp / ("args.json.tmp-" + std::to_string(::getpid()))));
  EXPECT_TRUE(fs::exists(tmp / "logging.jsonl"));
  EXPECT_TRUE(fs::exists(tmp / "notes.tmp-x"));
}
