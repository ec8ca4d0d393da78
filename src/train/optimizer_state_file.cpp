// Checked reads of optimizer state files (see optimizer_state_file.h), and what every optimizer shares.
#include "swift/train/optimizer_state_file.h"

#include <ATen/ATen.h>

#include "swift/core/error.h"
#include "swift/train/optimizer.h"

namespace swift::train {

void Optimizer::zero_grad() {
  for (auto& p : parameters())
    if (p.grad().defined()) p.mutable_grad() = at::Tensor();
}

OptimizerStateFiles::OptimizerStateFiles(const std::vector<std::filesystem::path>& paths, const std::string& format)
    : paths_(paths) {
  for (const auto& path : paths) {
    files_.push_back(io::SafetensorsFile::open(path));
    const auto& meta = files_.back()->metadata();
    const auto found = meta.find("format");
    SWIFT_CHECK(found != meta.end() && found->second == format, DataError,
                path.string() + " is not a " + format + " optimizer state file" +
                    (found == meta.end() ? std::string() : " (it is " + found->second + ")"),
                "resume with the optimizer of the run that wrote it (--optim, --use_galore), or with "
                "--resume_only_model true");
  }
}

const io::SafetensorsFile* OptimizerStateFiles::find(const std::string& name) const {
  for (const auto& file : files_)
    if (file->contains(name)) return file.get();
  return nullptr;
}

at::Tensor OptimizerStateFiles::take(const std::string& name, const c10::optional<at::IntArrayRef>& shape,
                                     bool non_negative) {
  const io::SafetensorsFile* file = find(name);
  SWIFT_CHECK(file != nullptr, DataError, "the optimizer state lacks " + name,
              "the optimizer state is incomplete; resume with --resume_only_model true");
  const std::string where = file->path().string();
  at::Tensor saved = file->get(name);
  SWIFT_CHECK(!shape || saved.sizes() == *shape, DataError,
              where + ": " + name + " has shape " + c10::str(saved.sizes()) + ", the model's is " + c10::str(*shape),
              "resume with the model, --train_type and optimizer settings of the run that wrote it");
  // Damaged state would train on NaN from the first step: moments finite, second moments and steps not negative.
  const bool finite = at::isfinite(saved).all().item<bool>();
  const bool sign_ok = !non_negative || (saved >= 0).all().item<bool>();
  SWIFT_CHECK(finite && sign_ok, DataError, where + ": " + name + (finite ? " holds negative values" : " holds NaN or inf"),
              "the optimizer state is damaged; resume from another checkpoint, or with --resume_only_model true");
  used_.insert(name);
  return saved;
}

void OptimizerStateFiles::check_all_used(const std::set<std::string>& elsewhere) const {
  for (size_t f = 0; f < files_.size(); ++f) {
    for (const auto& entry : files_[f]->entries()) {
      if (used_.count(entry.name)) continue;
      const std::string param = entry.name.substr(0, entry.name.rfind('.'));
      SWIFT_CHECK(elsewhere.count(param) > 0, DataError,
                  paths_[f].string() + " holds state for " + entry.name + ", which is not a trainable parameter here",
                  "resume with the --train_type, --target_modules and model of the run that wrote it");
    }
  }
}

}  // namespace swift::train
