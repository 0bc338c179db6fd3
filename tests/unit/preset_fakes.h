// What PAPI defines presets as, made up for the tests of the collectors that resolve presets
// through events::PresetCatalog (the perf backend, the papi collector's groups): a preset is
// what the map says, and every other name is as if PAPI could not start (nullopt), which leaves
// a preset to its kernel generic equivalent.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "collectors/events/presets.h"

namespace hwperf::test {

class FakePresets final : public events::PresetCatalog {
 public:
  FakePresets() = default;
  explicit FakePresets(std::map<std::string, events::PresetDefinition> defined)
      : defined_(std::move(defined)) {}
  std::optional<events::PresetDefinition> lookup(const std::string& preset,
                                                 const std::string&) const override {
    const auto it = defined_.find(preset);
    if (it == defined_.end()) return std::nullopt;
    return it->second;
  }

 private:
  std::map<std::string, events::PresetDefinition> defined_;
};

}  // namespace hwperf::test
