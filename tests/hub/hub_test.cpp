// The hub area without a network: ids, the two caches' layouts (checked against what huggingface_hub and
// modelscope_hub compute), URLs, the APIs' answers, sha256, which files a model or dataset needs, and cache-only
// resolution. The HTTP side is tested end to end against a local fake hub (tests/e2e/hub_test.sh).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "swift/core/error.h"
#include "swift/hub/cache_layout.h"
#include "swift/hub/dataset_files.h"
#include "swift/hub/hf_protocol.h"
#include "swift/hub/hub_id.h"
#include "swift/hub/hub_resolver.h"
#include "swift/hub/hub_settings.h"
#include "swift/hub/model_files.h"
#include "swift/hub/modelscope_protocol.h"
#include "swift/hub/sha256.h"

using namespace swift;
using namespace swift::hub;
namespace fs = std::filesystem;

namespace {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "swift-hub-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.message() + " | " + e.hint();
  }
  return "";
}

// An environment that reaches nothing: a port no server listens on, and empty caches under `root`.
HubEnvironment isolated_env(const fs::path& root) {
  HubEnvironment env;
  env.hf_endpoint = "http://127.0.0.1:9";
  env.modelscope_endpoint = "http://127.0.0.1:9";
  env.hf_cache = root / "hf";
  env.modelscope_cache = root / "ms";
  env.connect_timeout_s = 2;
  env.stall_timeout_s = 2;
  env.progress = false;
  return env;
}

// A model folder swift can load as far as the hub checks go.
void write_model(const fs::path& dir) {
  write(dir / "config.json", "{}");
  write(dir / "model.safetensors", "weights");
  write(dir / "tokenizer.json", "{}");
}

}  // namespace

TEST(HubSha256, KnownDigestsAndPieces) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 pieces;
  pieces.update("a");
  pieces.update("bc");
  EXPECT_EQ(pieces.hex_digest(), sha256_hex("abc"));
  Sha256 restarted;
  restarted.update("garbage");
  restarted.reset();
  restarted.update("abc");
  EXPECT_EQ(restarted.hex_digest(), sha256_hex("abc"));
  TempDir tmp;
  write(tmp / "f", "abcdef");
  EXPECT_EQ(sha256_file(tmp / "f"), sha256_hex("abcdef"));
  Sha256 prefix;
  sha256_update_from_file(prefix, tmp / "f", 3);  // a partial download's bytes so far
  EXPECT_EQ(prefix.hex_digest(), sha256_hex("abc"));
  EXPECT_TRUE(is_sha256_hex(sha256_hex("x")));
  EXPECT_FALSE(is_sha256_hex("ba7816bf"));
}

TEST(HubId, RepoIdsAreTwoPartsAndNeverPaths) {
  EXPECT_TRUE(is_repo_id("Qwen/Qwen2.5-7B-Instruct"));
  EXPECT_TRUE(is_repo_id("AI-ModelScope/alpaca-gpt4-data-zh"));
  EXPECT_FALSE(is_repo_id("qwen"));
  EXPECT_FALSE(is_repo_id("a/b/c"));
  EXPECT_FALSE(is_repo_id("/abs/model"));
  EXPECT_FALSE(is_repo_id("./model"));
  EXPECT_FALSE(is_repo_id("../model"));
  EXPECT_FALSE(is_repo_id("~/model"));
  EXPECT_FALSE(is_repo_id("org/.hidden"));
  EXPECT_FALSE(is_repo_id("org/a..b"));
  EXPECT_FALSE(is_repo_id("org/name with space"));
}

TEST(HubId, DatasetSyntaxAsMsSwift) {
  auto id = parse_dataset_id("hf::org/data:zh/en");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->repo_id, "org/data");
  EXPECT_EQ(id->hub, Hub::kHuggingFace);
  EXPECT_EQ(id->subsets, (std::vector<std::string>{"zh", "en"}));
  id = parse_dataset_id("MS::org/data");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->hub, Hub::kModelScope);
  EXPECT_TRUE(id->subsets.empty());
  id = parse_dataset_id("AI-ModelScope/alpaca-gpt4-data-zh");
  ASSERT_TRUE(id);
  EXPECT_FALSE(id->hub);
  EXPECT_FALSE(parse_dataset_id("xx::org/data"));
  EXPECT_FALSE(parse_dataset_id("org/data:"));
  EXPECT_FALSE(parse_dataset_id("data.jsonl"));
  EXPECT_FALSE(parse_dataset_id("data/train.jsonl"));  // a missing file, not a repository
}

TEST(HubSettings, EnvironmentAsThePythonToolsReadIt) {
  const char* home = std::getenv("HOME");
  const std::string saved_home = home ? home : "";
  ::setenv("HOME", "/home/u", 1);
  ::setenv("HF_ENDPOINT", "https://hf-mirror.com/", 1);
  ::setenv("MODELSCOPE_DOMAIN", "www.modelscope.cn", 1);
  ::unsetenv("MODELSCOPE_ENDPOINT");
  ::setenv("HF_HOME", "~/hfhome", 1);
  ::unsetenv("HF_HUB_CACHE");
  ::unsetenv("HUGGINGFACE_HUB_CACHE");
  ::unsetenv("MODELSCOPE_CACHE");
  ::setenv("HF_TOKEN", " hf_secret\n", 1);
  ::setenv("USE_HF", "True", 1);
  ::setenv("HF_HUB_OFFLINE", "1", 1);
  HubEnvironment env = HubEnvironment::from_process();
  EXPECT_EQ(env.hf_endpoint, "https://hf-mirror.com");
  EXPECT_EQ(env.modelscope_endpoint, "https://www.modelscope.cn");
  EXPECT_EQ(env.hf_cache, fs::path("/home/u/hfhome/hub"));
  EXPECT_EQ(env.modelscope_cache, fs::path("/home/u/.cache/modelscope"));
  EXPECT_EQ(env.hf_token, "hf_secret");
  EXPECT_TRUE(env.use_hf);
  EXPECT_TRUE(env.offline);
  ::setenv("HF_HUB_CACHE", "/cache/hf", 1);
  ::setenv("MODELSCOPE_ENDPOINT", "http://127.0.0.1:8000", 1);
  ::setenv("USE_HF", "0", 1);
  ::unsetenv("HF_HUB_OFFLINE");
  env = HubEnvironment::from_process();
  EXPECT_EQ(env.hf_cache, fs::path("/cache/hf"));
  EXPECT_EQ(env.modelscope_endpoint, "http://127.0.0.1:8000");
  EXPECT_FALSE(env.use_hf);
  EXPECT_FALSE(env.offline);
  for (const char* name : {"HF_ENDPOINT", "MODELSCOPE_DOMAIN", "MODELSCOPE_ENDPOINT", "HF_HOME", "HF_HUB_CACHE", "HF_TOKEN", "USE_HF"})
    ::unsetenv(name);
  if (home) ::setenv("HOME", saved_home.c_str(), 1);

  EXPECT_EQ(choose_hub({}, env), Hub::kModelScope);  // ms-swift's default
  EXPECT_EQ(choose_hub({true, "", ""}, env), Hub::kHuggingFace);
  env.use_hf = true;
  EXPECT_EQ(choose_hub({}, env), Hub::kHuggingFace);
  EXPECT_EQ(choose_hub({}, env, Hub::kModelScope), Hub::kModelScope);  // "ms::" wins
  EXPECT_EQ(revision_for(Hub::kHuggingFace, ""), "main");
  EXPECT_EQ(revision_for(Hub::kHuggingFace, "master"), "main");
  EXPECT_EQ(revision_for(Hub::kModelScope, "main"), "master");
  EXPECT_EQ(revision_for(Hub::kModelScope, "v1.0"), "v1.0");
  env.hf_token = "env-token";
  EXPECT_EQ(token_for(Hub::kHuggingFace, {}, env), "env-token");
  EXPECT_EQ(token_for(Hub::kHuggingFace, {std::nullopt, "flag-token", ""}, env), "flag-token");
}

TEST(HubCacheLayout, HuggingFaceLayoutAsHuggingfaceHub) {
  TempDir tmp;
  const HfCacheLayout cache(tmp.path());
  EXPECT_EQ(HfCacheLayout::repo_folder_name(RepoType::kModel, "Qwen/Qwen2.5-7B"), "models--Qwen--Qwen2.5-7B");
  EXPECT_EQ(HfCacheLayout::repo_folder_name(RepoType::kDataset, "org/data"), "datasets--org--data");
  EXPECT_EQ(cache.blob(RepoType::kModel, "org/m", "abc"), tmp / "models--org--m" / "blobs" / "abc");
  EXPECT_EQ(cache.incomplete_blob(RepoType::kModel, "org/m", "abc"), tmp / "models--org--m" / "blobs" / "abc.incomplete");
  EXPECT_EQ(cache.lock_file(RepoType::kModel, "org/m", "abc"), tmp / ".locks" / "models--org--m" / "abc.lock");
  EXPECT_EQ(snapshot_link_target("config.json", "e1"), "../../blobs/e1");
  EXPECT_EQ(snapshot_link_target("a/b/c.json", "e1"), "../../../../blobs/e1");

  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  EXPECT_TRUE(is_commit_hash(commit));
  EXPECT_EQ(cache.cached_commit(RepoType::kModel, "org/m", commit), commit);
  EXPECT_FALSE(cache.cached_commit(RepoType::kModel, "org/m", "main"));
  cache.write_ref(RepoType::kModel, "org/m", "main", commit);
  EXPECT_EQ(read(tmp / "models--org--m" / "refs" / "main"), commit);  // no newline, as huggingface_hub writes it
  EXPECT_EQ(cache.cached_commit(RepoType::kModel, "org/m", "main"), commit);

  write(cache.blob(RepoType::kModel, "org/m", "e1"), "content");
  cache.link_snapshot_file(RepoType::kModel, "org/m", commit, "sub/dir/f.json", "e1");
  const fs::path link = cache.snapshot_dir(RepoType::kModel, "org/m", commit) / "sub/dir/f.json";
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::read_symlink(link), fs::path("../../../../blobs/e1"));
  EXPECT_EQ(read(link), "content");
  cache.link_snapshot_file(RepoType::kModel, "org/m", commit, "sub/dir/f.json", "e1");  // again: replaced in place
  EXPECT_EQ(read(link), "content");
}

TEST(HubCacheLayout, ModelScopeLayoutAsModelscopeHub) {
  const ModelScopeCacheLayout cache("/c");
  EXPECT_EQ(cache.snapshot_dir(RepoType::kModel, "Qwen/Qwen2.5-7B", "master"),
            fs::path("/c/models/Qwen--Qwen2.5-7B/snapshots/master"));
  EXPECT_EQ(cache.snapshot_dir(RepoType::kDataset, "org/data", "master"), fs::path("/c/datasets/org--data/snapshots/master"));
  const auto legacy = cache.legacy_dirs(RepoType::kModel, "Qwen/Qwen2.5-7B");
  ASSERT_EQ(legacy.size(), 2u);
  EXPECT_EQ(legacy[0], fs::path("/c/models/Qwen/Qwen2___5-7B"));
  EXPECT_EQ(legacy[1], fs::path("/c/hub/models/Qwen/Qwen2___5-7B"));
  // modelscope_hub's _lock_path for ("org/name", "model", file_path="config.json"), computed by the SDK itself.
  EXPECT_EQ(cache.file_lock(RepoType::kModel, "org/name", "config.json"),
            fs::path("/c/.lock/file_6150f997234390e95b840470522f0f8cf17e39e33aeff246788deda8b5131b81.lock"));
}

TEST(HubUrls, HuggingFaceAndModelScope) {
  EXPECT_EQ(hf_info_url("https://huggingface.co", RepoType::kModel, "org/m", "main"),
            "https://huggingface.co/api/models/org/m/revision/main?blobs=true");
  EXPECT_EQ(hf_info_url("https://huggingface.co", RepoType::kDataset, "org/d", "refs/pr/1"),
            "https://huggingface.co/api/datasets/org/d/revision/refs%2Fpr%2F1?blobs=true");
  EXPECT_EQ(hf_file_url("https://hf-mirror.com", RepoType::kModel, "org/m", "abc", "model.safetensors"),
            "https://hf-mirror.com/org/m/resolve/abc/model.safetensors");
  EXPECT_EQ(hf_file_url("https://huggingface.co", RepoType::kDataset, "org/d", "abc", "data/train 1.jsonl"),
            "https://huggingface.co/datasets/org/d/resolve/abc/data/train%201.jsonl");
  EXPECT_EQ(modelscope_files_url("https://modelscope.cn", RepoType::kModel, "org/m", "master"),
            "https://modelscope.cn/api/v1/models/org/m/repo/files?Revision=master&Recursive=True");
  EXPECT_EQ(modelscope_files_url("https://modelscope.cn", RepoType::kDataset, "org/d", "master", 2),
            "https://modelscope.cn/api/v1/datasets/org/d/repo/tree?Revision=master&Recursive=True&PageNumber=2&PageSize=200");
  EXPECT_EQ(modelscope_file_url("https://modelscope.cn", RepoType::kModel, "org/m", "v 1", "sub/a b.json"),
            "https://modelscope.cn/api/v1/models/org/m/repo?Revision=v+1&FilePath=sub%2Fa+b.json");
  EXPECT_EQ(normalize_etag("W/\"abc\""), "abc");
  EXPECT_EQ(normalize_etag("\"abc\""), "abc");
}

TEST(HubProtocol, HuggingFaceInfoAnswer) {
  const std::string sha = sha256_hex("weights");
  const std::string json = R"({"id": "org/m", "sha": "0123456789abcdef0123456789abcdef01234567", "siblings": [
      {"rfilename": "config.json", "size": 2, "blobId": "1111111111111111111111111111111111111111"},
      {"rfilename": "model.safetensors", "size": 7, "blobId": "2222222222222222222222222222222222222222",
       "lfs": {"size": 7, "sha256": ")" + sha + R"(", "pointerSize": 130}}]})";
  const auto listing = hf_parse_info(json, "http://h", RepoType::kModel, "org/m", "main");
  EXPECT_EQ(listing.commit, "0123456789abcdef0123456789abcdef01234567");
  ASSERT_EQ(listing.files.size(), 2u);
  EXPECT_EQ(listing.files[0].blob_id, "1111111111111111111111111111111111111111");
  EXPECT_TRUE(listing.files[0].sha256.empty());  // a git file: checked by size
  EXPECT_EQ(listing.files[1].sha256, sha);
  EXPECT_EQ(listing.files[1].blob_id, sha);  // LFS blobs are named by their sha256
  EXPECT_EQ(listing.files[1].url, "http://h/org/m/resolve/0123456789abcdef0123456789abcdef01234567/model.safetensors");
  EXPECT_NE(error_of([] { hf_parse_info(R"({"error": "x"})", "http://h", RepoType::kModel, "org/m", "main"); }).find("HF_ENDPOINT"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              hf_parse_info(R"({"sha": "a", "siblings": [{"rfilename": "../../etc/passwd"}]})", "http://h", RepoType::kModel,
                            "org/m", "main");
            }).find("outside the repository"),
            std::string::npos);
}

TEST(HubProtocol, ModelScopeFilesAnswer) {
  RepoListing listing;
  listing.hub = Hub::kModelScope;
  listing.repo_id = "org/m";
  listing.revision = "master";
  const std::string json = R"({"Code": 200, "Success": true, "Data": {"Files": [
      {"Name": "sub", "Path": "sub", "Type": "tree"},
      {"Name": "config.json", "Path": "config.json", "Type": "blob", "Size": 2, "Sha256": ")" + sha256_hex("{}") + R"("}]}})";
  EXPECT_EQ(modelscope_parse_files(json, "http://m", listing), 2u);
  ASSERT_EQ(listing.files.size(), 1u);
  EXPECT_EQ(listing.files[0].path, "config.json");
  EXPECT_EQ(listing.files[0].sha256, sha256_hex("{}"));
  EXPECT_EQ(listing.files[0].url, "http://m/api/v1/models/org/m/repo?Revision=master&FilePath=config.json");
  try {
    modelscope_parse_files(R"({"Code": 10010205001, "Success": false, "Message": "model not exists"})", "http://m", listing);
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(e.message().find("model not exists"), std::string::npos);
  }
}

TEST(HubModelFiles, OnlyWhatSwiftReads) {
  std::vector<RemoteFile> files;
  for (const char* p : {"config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                        "model.safetensors.index.json", "pytorch_model.bin", "tokenizer.json", "tokenizer_config.json",
                        "generation_config.json", "README.md", "onnx/model.safetensors", "model.gguf", "chat_template.jinja"})
    files.push_back({p, std::nullopt, "", "", ""});
  std::string note;
  const auto selected = select_model_files(files, &note);
  std::vector<std::string> paths;
  for (const auto& f : selected) paths.push_back(f.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"config.json", "model-00001-of-00002.safetensors",
                                             "model-00002-of-00002.safetensors", "model.safetensors.index.json",
                                             "tokenizer.json", "tokenizer_config.json", "generation_config.json",
                                             "chat_template.jinja"}));
  EXPECT_TRUE(note.empty());
  select_model_files({{"config.json", {}, "", "", ""}, {"pytorch_model.bin", {}, "", "", ""}}, &note);
  EXPECT_NE(note.find("pytorch_model.bin"), std::string::npos);
}

TEST(HubModelFiles, MissingPartsOfAFolder) {
  TempDir tmp;
  EXPECT_FALSE(missing_model_parts(tmp.path()).empty());
  write(tmp / "config.json", "{}");
  write(tmp / "tokenizer.json", "{}");
  write(tmp / "model.safetensors.index.json",
        R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})");
  write(tmp / "model-00001-of-00002.safetensors", "x");
  EXPECT_EQ(missing_model_parts(tmp.path()), (std::vector<std::string>{"model-00002-of-00002.safetensors"}));
  fs::create_symlink("blobs/gone", tmp / "model-00002-of-00002.safetensors");  // a dangling snapshot link
  EXPECT_EQ(missing_model_parts(tmp.path()).size(), 1u);
  fs::remove(tmp / "model-00002-of-00002.safetensors");
  write(tmp / "model-00002-of-00002.safetensors", "y");
  EXPECT_TRUE(missing_model_parts(tmp.path()).empty());
}

TEST(HubDatasetFiles, GlobsAsDataFilesPatterns) {
  EXPECT_TRUE(glob_match("data/train-*", "data/train-00000-of-00001.jsonl"));
  EXPECT_FALSE(glob_match("data/train-*", "data/sub/train-0.jsonl"));
  EXPECT_TRUE(glob_match("**/*.jsonl", "a/b/c.jsonl"));
  EXPECT_TRUE(glob_match("**/*.jsonl", "c.jsonl"));
  EXPECT_TRUE(glob_match("zh/*.json?", "zh/x.jsonl"));
  EXPECT_TRUE(glob_match("[ab].csv", "b.csv"));
  EXPECT_FALSE(glob_match("[!ab].csv", "b.csv"));
}

TEST(HubDatasetFiles, TrainSplitSubsetsAndUnsupportedFormats) {
  const std::vector<std::string> split_files = {"README.md", "data/train-00000.jsonl", "data/test-00000.jsonl", ".gitattributes"};
  EXPECT_EQ(select_dataset_files(split_files, "", {}, "org/d"), (std::vector<std::string>{"data/train-00000.jsonl"}));
  EXPECT_EQ(select_dataset_files({"alpaca_gpt4_data_zh.json", "LICENSE.txt"}, "", {}, "org/d"),
            (std::vector<std::string>{"alpaca_gpt4_data_zh.json"}));
  EXPECT_EQ(select_dataset_files({"zh/a.jsonl", "en/a.jsonl"}, "", {"en"}, "org/d"), (std::vector<std::string>{"en/a.jsonl"}));
  EXPECT_NE(error_of([] { select_dataset_files({"a.jsonl"}, "", {"fr"}, "org/d"); }).find("no subset 'fr'"), std::string::npos);
  // Parquet (the Hub's usual format) is read; the train split of a split layout is chosen as for JSON Lines.
  EXPECT_EQ(select_dataset_files({"data/train-00000-of-00001.parquet", "data/test-00000-of-00001.parquet"}, "", {}, "org/d"),
            (std::vector<std::string>{"data/train-00000-of-00001.parquet"}));
  try {
    select_dataset_files({"data/train/data-00000-of-00001.arrow"}, "", {}, "org/d");
    FAIL() << "Arrow files must be refused";
  } catch (const DataError& e) {
    EXPECT_NE(e.message().find("not Arrow"), std::string::npos);
    EXPECT_NE(e.message().find("data/train/data-00000-of-00001.arrow"), std::string::npos);
  }

  const std::string readme = "---\nlicense: mit\nconfigs:\n- config_name: zh\n  data_files:\n  - split: train\n    path: zh/train*.jsonl\n"
                             "  - split: test\n    path: zh/test*.jsonl\n- config_name: en\n  default: true\n  data_files: en/*.csv\n---\n# Card\n";
  const std::vector<std::string> files = {"zh/train.jsonl", "zh/test.jsonl", "en/a.csv", "en/b.csv"};
  EXPECT_EQ(select_dataset_files(files, readme, {}, "org/d"), (std::vector<std::string>{"en/a.csv", "en/b.csv"}));
  EXPECT_EQ(select_dataset_files(files, readme, {"zh"}, "org/d"), (std::vector<std::string>{"zh/train.jsonl"}));
  EXPECT_EQ(select_dataset_files(files, readme, {"all"}, "org/d").size(), 3u);
  const std::string unknown = error_of([&] { select_dataset_files(files, readme, {"fr"}, "org/d"); });
  EXPECT_NE(unknown.find("zh, en"), std::string::npos) << unknown;
}

TEST(HubResolver, CachedSnapshotsNeedNoNetwork) {
  TempDir tmp;
  HubEnvironment env = isolated_env(tmp.path());
  env.offline = true;
  // Hugging Face: refs/main -> snapshots/<commit>, found whichever hub was chosen.
  const HfCacheLayout hf(env.hf_cache);
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  hf.write_ref(RepoType::kModel, "org/m", "main", commit);
  write_model(hf.snapshot_dir(RepoType::kModel, "org/m", commit));
  EXPECT_EQ(resolve_model_id("org/m", {}, env), hf.snapshot_dir(RepoType::kModel, "org/m", commit));
  // ModelScope's older layout (dots written as ___).
  const ModelScopeCacheLayout ms(env.modelscope_cache);
  write_model(env.modelscope_cache / "hub" / "models" / "org" / "m___v2");
  EXPECT_EQ(resolve_model_id("org/m.v2", {}, env), env.modelscope_cache / "hub" / "models" / "org" / "m___v2");
  // --revision picks another snapshot.
  write_model(ms.snapshot_dir(RepoType::kModel, "org/m", "v3"));
  EXPECT_EQ(resolve_model_id("org/m", {std::nullopt, "", "v3"}, env), ms.snapshot_dir(RepoType::kModel, "org/m", "v3"));
  // A dataset: its training files.
  write(hf.snapshot_dir(RepoType::kDataset, "org/d", commit) / "train.jsonl", "{}\n");
  write(hf.snapshot_dir(RepoType::kDataset, "org/d", commit) / "test.jsonl", "{}\n");
  hf.write_ref(RepoType::kDataset, "org/d", "main", commit);
  DatasetId id{"org/d", {}, Hub::kHuggingFace};
  EXPECT_EQ(resolve_dataset_id(id, {}, env),
            (std::vector<fs::path>{hf.snapshot_dir(RepoType::kDataset, "org/d", commit) / "train.jsonl"}));
}

TEST(HubResolver, OfflineMissNamesTheIdAndThePlaces) {
  TempDir tmp;
  HubEnvironment env = isolated_env(tmp.path());
  env.offline = true;
  write(HfCacheLayout(env.hf_cache).snapshot_dir(RepoType::kModel, "org/m", "0123456789abcdef0123456789abcdef01234567") /
            "config.json",
        "{}");
  HfCacheLayout(env.hf_cache).write_ref(RepoType::kModel, "org/m", "main", "0123456789abcdef0123456789abcdef01234567");
  try {
    resolve_model_id("org/m", {}, env);
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    const std::string m = e.message();
    EXPECT_NE(m.find("--model org/m"), std::string::npos) << m;
    EXPECT_NE(m.find("HF_HUB_OFFLINE"), std::string::npos) << m;
    EXPECT_NE(m.find((env.modelscope_cache / "models" / "org--m" / "snapshots" / "master").string()), std::string::npos) << m;
    EXPECT_NE(m.find("lacks *.safetensors weights"), std::string::npos) << m;  // the partial snapshot, and why
  }
}

TEST(HubResolver, UnreachableHubIsADataErrorNotAHang) {
  TempDir tmp;
  const HubEnvironment env = isolated_env(tmp.path());
  const std::string message = error_of([&] { resolve_model_id("org/m", {}, env); });
  EXPECT_NE(message.find("127.0.0.1:9"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(ModelScopeCacheLayout(env.modelscope_cache).snapshot_dir(RepoType::kModel, "org/m", "master")));
}
