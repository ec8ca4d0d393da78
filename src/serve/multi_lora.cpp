// Per-row LoRA: a LinearAdapter that dispatches batch rows to the base layer or to one of several LoRA branches.
#include "swift/serve/multi_lora.h"

#include <ATen/ATen.h>

#include <map>

#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/tuners/lora.h"

namespace swift::serve {

namespace {

class LoraSwitch : public model::LinearAdapter {
 public:
  explicit LoraSwitch(std::shared_ptr<std::vector<int64_t>> rows) : rows_(std::move(rows)) {}
  // branches[id]: adapter id's branch for this layer; null where the adapter leaves the layer alone.
  std::vector<std::shared_ptr<model::LinearAdapter>> branches;

  // x: [B, ..., in] with B = rows_->size() -> [B, ..., out].
  at::Tensor forward(model::LinearImpl& base, const at::Tensor& x) override {
    const auto& ids = *rows_;
    SWIFT_ASSERT(static_cast<int64_t>(ids.size()) == x.size(0), "LoRA row ids do not match the batch");
    auto branch = [&](int64_t id) -> model::LinearAdapter* {
      return id > 0 && static_cast<size_t>(id) < branches.size() ? branches[static_cast<size_t>(id)].get() : nullptr;
    };
    if (std::all_of(ids.begin(), ids.end(), [&](int64_t id) { return id == ids.front(); })) {
      auto* b = ids.empty() ? nullptr : branch(ids.front());
      return b ? b->forward(base, x) : base.base_forward(x);
    }
    // A mixed batch: each group of rows (0: the base alone) runs its own layer once; an adapter's forward
    // already includes the base matmul, so the base rows are computed on their own rather than for everyone.
    std::map<int64_t, std::vector<int64_t>> groups;
    for (size_t r = 0; r < ids.size(); ++r) groups[branch(ids[r]) ? ids[r] : 0].push_back(static_cast<int64_t>(r));
    at::Tensor y;
    for (const auto& [id, rows] : groups) {
      auto index = at::tensor(rows, at::kLong).to(x.device());
      auto xs = x.index_select(0, index);
      auto ys = id ? branch(id)->forward(base, xs) : base.base_forward(xs);
      if (!y.defined()) {
        auto shape = x.sizes().vec();
        shape.back() = ys.size(-1);
        y = at::empty(shape, ys.options());
      }
      y.index_copy_(0, index, ys.to(y.scalar_type()));
    }
    return y;
  }

 private:
  std::shared_ptr<std::vector<int64_t>> rows_;
};

}  // namespace

MultiLora::MultiLora(model::CausalLM& model, const std::vector<NamedAdapter>& adapters,
                     const std::function<model::CausalLM()>& load_base)
    : rows_(std::make_shared<std::vector<int64_t>>()) {
  std::map<std::string, std::shared_ptr<LoraSwitch>> switches;  // by module name
  std::map<std::string, model::LinearImpl*> linears;
  for (const auto& item : model->named_modules("", /*include_self=*/false))
    if (auto* linear = item.value()->as<model::LinearImpl>()) {
      SWIFT_CHECK(!linear->adapter, UsageError, "named --adapters cannot be combined with an unnamed one",
                  "give every adapter a name (name=path), or serve one adapter without a name");
      linears[item.key()] = linear;
    }
  for (size_t i = 0; i < adapters.size(); ++i) {
    const auto& a = adapters[i];
    model::CausalLM copy = load_base();
    const auto config = with_context("loading adapter " + a.name + "=" + a.path,
                                     [&] { return tuners::load_adapter(copy, a.path); });
    // The per-request switch covers Linear layers; the experts' branches would silently stay off.
    SWIFT_CHECK(config.target_parameters.empty(), UsageError,
                "adapter " + a.name + " (" + a.path + ") adapts the experts' weights (target_parameters), which named "
                "--adapters cannot switch per request yet",
                "serve it as the only adapter (--adapters " + a.path + "), or merge it with swift export");
    copy->eval();
    size_t wrapped = 0;
    for (const auto& item : copy->named_modules("", false)) {
      auto* linear = item.value()->as<model::LinearImpl>();
      if (!linear || !linear->adapter) continue;
      auto it = linears.find(item.key());
      SWIFT_ASSERT(it != linears.end(), "adapter module " + item.key() + " missing from the served model");
      auto& sw = switches[item.key()];
      if (!sw) sw = std::make_shared<LoraSwitch>(rows_);
      sw->branches.resize(adapters.size() + 1);
      sw->branches[i + 1] = linear->adapter;  // keeps its lora_A/lora_B alive; the copy's base weights go
      ++wrapped;
    }
    names_.push_back(a.name);
    log_info("adapter ", a.name, " (", a.path, "): LoRA r=", config.r, " on ", wrapped, " modules");
  }
  for (auto& [name, sw] : switches) {
    sw->branches.resize(adapters.size() + 1);
    linears.at(name)->adapter = sw;
  }
}

void MultiLora::set_rows(const std::vector<int64_t>& ids) { *rows_ = ids; }

}  // namespace swift::serve
