// What PAPI defines presets as, made up for the tests of the collectors that resolve presets
// through events::PresetCatalog (the perf backend, the papi collector's groups): a preset is
// what the map says, and every other name is as if PAPI could not start (nullopt), which leaves
// a preset to its kernel generic equivalent.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "collectors/events/presets.h"
#include "collectors/perf/counted_events.h"

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

// What the process collector asks of the perf backend, its events to come, with `presets`.
inline perf::EventRequest process_request(const events::PresetCatalog& presets) {
  perf::EventRequest request;
  request.presets = &presets;
  request.procfs = "/proc";
  request.level = "process";
  request.collector = "process";
  request.config_path = "collectors.process.events";
  request.counted_for = "Counted for each process target";
  return request;
}

}  // namespace hwperf::test
