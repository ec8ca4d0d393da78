// Optimizer state across tensor-parallel layouts (see optimizer_relayout.h).
#include "swift/distributed/optimizer_relayout.h"

#include <ATen/ATen.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>

#include "swift/core/error.h"
#include "swift/io/safetensors.h"

namespace fs = std::filesystem;

namespace swift::distributed {
namespace {

// The rank that wrote a state file: optimizer-rank<r>-of-<w>.safetensors, or 0 for optimizer.safetensors.
int writer_rank(const fs::path& file) {
  int rank = 0, world = 0;
  return std::sscanf(file.filename().string().c_str(), "optimizer-rank%d-of-%d", &rank, &world) == 2 ? rank : 0;
}

// The parameter a state entry belongs to ("model.norm.weight.exp_avg" -> model.norm.weight): the longest name that
// prefixes it followed by a dot.
const ParameterSlice* owner_of(const std::string& entry, const std::vector<ParameterSlice>& parameters) {
  const ParameterSlice* best = nullptr;
  for (const auto& p : parameters)
    if (entry.size() > p.name.size() && entry.compare(0, p.name.size(), p.name) == 0 && entry[p.name.size()] == '.' &&
        (!best || p.name.size() > best->name.size()))
      best = &p;
  return best;
}

// The one dimension where `part` is 1/k of `whole` (and k), or -1 when the shapes are equal or differ otherwise.
std::pair<int64_t, int64_t> split_dim(at::IntArrayRef part, const std::vector<int64_t>& whole) {
  if (part.size() != whole.size()) return {-1, 1};
  int64_t dim = -1;
  for (size_t d = 0; d < whole.size(); ++d) {
    if (part[d] == whole[d]) continue;
    if (dim >= 0 || part[d] == 0 || whole[d] <= part[d] || whole[d] % part[d] != 0) return {-1, 1};
    dim = static_cast<int64_t>(d);
  }
  return dim < 0 ? std::pair<int64_t, int64_t>{-1, 1} : std::pair<int64_t, int64_t>{dim, whole[dim] / part[dim]};
}

}  // namespace

std::optional<fs::path> relayout_optimizer_state(const std::vector<fs::path>& files,
                                                 const std::vector<ParameterSlice>& parameters,
                                                 const fs::path& scratch_dir, int rank) {
  std::map<int, std::shared_ptr<io::SafetensorsFile>> by_rank;
  for (const auto& f : files) by_rank[writer_rank(f)] = io::SafetensorsFile::open(f);
  if (by_rank.empty()) return std::nullopt;
  // AdamW's moments are shaped like their parameters, which is what the slices are read off; GaLore's low-rank
  // state is not (and GaLore does not run under tensor parallelism).
  const auto& meta = by_rank.begin()->second->metadata();
  if (meta.count("format") == 0 || meta.at("format") != "swift-adamw") return std::nullopt;
  const std::string where = files.front().parent_path().string();

  bool needed = false;
  io::NamedTensors out;
  std::map<std::string, bool> done;
  for (const auto& [writer, file] : by_rank) {
    for (const auto& entry : file->entries()) {
      if (done[entry.name]) continue;
      done[entry.name] = true;
      at::Tensor saved = file->get(entry.name);
      const ParameterSlice* p = owner_of(entry.name, parameters);
      if (!p) {
        out.emplace_back(entry.name, saved);
        continue;
      }
      // The whole tensor: as saved, or put together from the slices of one TP group.
      at::Tensor whole = saved;
      const auto [dim, parts] = split_dim(saved.sizes(), p->whole_shape);
      if (dim >= 0) {
        std::vector<at::Tensor> pieces;
        for (int r = 0; r < parts; ++r) {
          // Slice r came from a rank whose TP rank (rank % parts, TP being innermost) is r: the first such rank
          // that wrote this entry (a later pipeline stage's ranks do not start at 0).
          auto it = by_rank.begin();
          while (it != by_rank.end() && (it->first % parts != r || !it->second->contains(entry.name))) ++it;
          SWIFT_CHECK(it != by_rank.end(), DataError,
                      where + ": the optimizer state " + entry.name + " is split in " + std::to_string(parts) +
                          " but rank " + std::to_string(r) + "'s part is missing",
                      "copy every optimizer-rank*-of-*.safetensors of that checkpoint, or resume with --resume_only_model true");
          at::Tensor piece = it->second->get(entry.name);
          SWIFT_CHECK(piece.sizes() == saved.sizes(), DataError,
                      where + ": rank " + std::to_string(r) + "'s part of " + entry.name + " has another shape",
                      "the checkpoint is damaged; resume from another one");
          pieces.push_back(piece);
        }
        whole = at::cat(pieces, dim);
      }
      at::Tensor mine = whole;
      if (p->dim >= 0 && whole.sizes() == at::IntArrayRef(p->whole_shape)) {
        const int64_t size = whole.size(p->dim) / p->count;
        mine = whole.narrow(p->dim, p->index * size, size).contiguous();
      }
      // Split state is always rewritten: at the same layout every rank's file holds an entry of this name, and
      // this rank must load its own part.
      needed = needed || dim >= 0 || p->dim >= 0;
      out.emplace_back(entry.name, mine);
    }
  }
  if (!needed) return std::nullopt;
  const fs::path path = scratch_dir / ("swift-optimizer-relayout-" + std::to_string(::getpid()) + "-rank" +
                                       std::to_string(rank) + ".safetensors");
  io::save_safetensors(path, out, by_rank.begin()->second->metadata());
  return path;
}

}  // namespace swift::distributed
