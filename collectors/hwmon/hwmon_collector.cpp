#include "collectors/hwmon/hwmon_collector.h"

#include <array>
#include <atomic>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "collectors/metrics.h"
#include "common/log.h"
#include "common/periodic_thread.h"

namespace hwperf::hwmon {
namespace {

constexpr std::size_t kKindCount = std::size(kKinds);

std::size_t kind_index(Kind kind) {
  std::size_t index = 0;
  while (index + 1 < kKindCount && kKinds[index].kind != kind) ++index;
  return index;
}

// Each sensor's labels, made once: where its energy goes, and who it is for the health families.
struct SensorLabels {
  Labels energy;  // [package,] chip, sensor, source
  Labels id;      // chip, sensor
};

SensorLabels labels_of(const SensorSpec& spec) {
  SensorLabels labels;
  labels.id = {{"chip", spec.chip}, {"sensor", spec.sensor}};
  if (spec.package) labels.energy.emplace_back("package", std::to_string(*spec.package));
  labels.energy.insert(labels.energy.end(), labels.id.begin(), labels.id.end());
  labels.energy.emplace_back("source", to_string(spec.source));
  return labels;
}

class HwmonCollector final : public Collector, public ConstantFamilies {
 public:
  HwmonCollector(std::unique_ptr<HwmonEngine> engine, bool tick_in_background)
      : engine_(std::move(engine)) {
    if (engine_) {
      for (const auto& spec : engine_->sensors()) labels_.push_back(labels_of(spec));
    }
    for (const auto& kind : kKinds) {
      energy_names_.push_back(counter_name({"hwmon", kind.name, "joules"}));
      energy_help_.push_back(std::string(kind.help) +
                             " Since the exporter started; source says whether the chip counted "
                             "it or the exporter integrated the meter's power readings.");
    }
    build_constant_families();
    if (tick_in_background && engine_ && !labels_.empty()) {
      HwmonEngine* ticked = engine_.get();
      ticker_ = std::make_unique<PeriodicThread>(
          "hwmon: tick", std::chrono::duration<double>(engine_->settings().interval_seconds),
          [ticked, this] { tick_safely(*ticked); });
    }
  }

  std::string name() const override { return "hwmon"; }

  void collect_constant(std::vector<prometheus::MetricFamily>& out) const override {
    out.insert(out.end(), constant_.begin(), constant_.end());
  }

  void collect(std::vector<prometheus::MetricFamily>& out) override {
    if (labels_.empty()) return;
    const std::vector<SensorTally> tallies = engine_->snapshot();
    add_energy_families(tallies, out);
    add_health_families(tallies, out);
  }

 private:
  void build_constant_families() {
    const bool available = !labels_.empty();
    constant_.push_back(single_gauge(
        metric_name({"hwmon", "energy", "available"}),
        "Whether a power meter is read through hwmon (1), or none was found (0; the log says "
        "which chips were seen).",
        {}, available ? 1.0 : 0.0));
    if (!available) return;
    constant_.push_back(single_gauge(metric_name({"hwmon", "interval", "seconds"}),
                                     "How often every meter is read; power readings are "
                                     "integrated between two reads.",
                                     {}, engine_->settings().interval_seconds));
    auto info = make_gauge_family({"hwmon", "sensor", "info"},
                                  "A meter read: its chip's name, what its label says, the kind "
                                  "of family its joules are in, and whether they are counted by "
                                  "the chip or integrated from power readings.");
    auto interval = make_gauge_family({"hwmon", "average", "interval", "seconds"},
                                      "The time each power reading of the meter averages over "
                                      "(power#_average_interval).");
    const auto& specs = engine_->sensors();
    for (std::size_t i = 0; i < specs.size(); ++i) {
      Labels labels = labels_[i].id;
      labels.emplace_back("name", specs[i].name);
      labels.emplace_back("label", specs[i].label);
      labels.emplace_back("kind", kind_info(specs[i].kind).name);
      labels.emplace_back("source", to_string(specs[i].source));
      if (specs[i].package) labels.emplace_back("package", std::to_string(*specs[i].package));
      add_gauge(info, labels, 1.0);
      if (specs[i].average_interval_seconds > 0) {
        add_gauge(interval, labels_[i].id, specs[i].average_interval_seconds);
      }
    }
    constant_.push_back(std::move(info));
    append_unless_empty(constant_, std::move(interval));
  }

  void add_energy_families(const std::vector<SensorTally>& tallies,
                           std::vector<prometheus::MetricFamily>& out) const {
    std::array<prometheus::MetricFamily, kKindCount> energy;
    const auto& specs = engine_->sensors();
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const std::size_t kind = kind_index(specs[i].kind);
      if (energy[kind].name.empty()) {
        energy[kind] =
            make_family(energy_names_[kind], energy_help_[kind], prometheus::MetricType::Counter);
      }
      add_counter(energy[kind], labels_[i].energy, tallies[i].energy.joules());
    }
    for (auto& family : energy) {
      if (!family.name.empty()) out.push_back(std::move(family));
    }
  }

  void add_health_families(const std::vector<SensorTally>& tallies,
                           std::vector<prometheus::MetricFamily>& out) const {
    auto state = make_gauge_family(
        {"hwmon", "sensor", "state"},
        "1 for the state each meter is in, 0 for the others: ok, gone (the device was removed), "
        "no_data, io_error, garbage (not a number, or not a plausible one), stale (unchanged for "
        "collectors.hwmon.stale_after_seconds). Only ok adds joules.");
    auto errors = make_counter_family({"hwmon", "read", "errors"},
                                      "Reads of a meter that failed or gave no plausible number.");
    auto unmeasured = make_counter_family(
        {"hwmon", "unmeasured", "seconds"},
        "Time whose energy a meter's joules leave out: readings too far apart to integrate, a "
        "stuck reading, a counter that started again or jumped implausibly.");
    auto wraps = make_counter_family({"hwmon", "wraps"},
                                     "Wraps of a counting meter's 32-bit value, accounted for.");
    const auto& specs = engine_->sensors();
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const Labels& id = labels_[i].id;
      for (const auto& entry : kStateNames) {
        Labels labels = id;
        labels.emplace_back("state", entry.name);
        add_gauge(state, labels, tallies[i].state == entry.value ? 1.0 : 0.0);
      }
      add_counter(errors, id, tallies[i].read_errors);
      add_counter(unmeasured, id, tallies[i].unmeasured_seconds);
      if (specs[i].source == Source::counter) add_counter(wraps, id, tallies[i].wraps);
    }
    out.push_back(std::move(state));
    out.push_back(std::move(errors));
    out.push_back(std::move(unmeasured));
    append_unless_empty(out, std::move(wraps));
  }

  // Nothing may escape the thread (it would end the process); a failed tick is logged once and
  // the next one tried at the next period.
  void tick_safely(HwmonEngine& engine) {
    try {
      engine.tick();
    } catch (const std::exception& e) {
      if (!tick_failure_logged_.exchange(true)) {
        log::warn(std::string("hwmon: a tick failed: ") + e.what());
      }
    } catch (...) {
      if (!tick_failure_logged_.exchange(true)) log::warn("hwmon: a tick failed");
    }
  }

  std::vector<SensorLabels> labels_;
  std::vector<std::string> energy_names_;  // kKinds' order
  std::vector<std::string> energy_help_;
  std::vector<prometheus::MetricFamily> constant_;
  std::atomic<bool> tick_failure_logged_{false};
  std::unique_ptr<HwmonEngine> engine_;
  // Last: stopped and joined before the engine it ticks goes.
  std::unique_ptr<PeriodicThread> ticker_;
};

}  // namespace

std::unique_ptr<Collector> make_hwmon_collector(std::unique_ptr<HwmonEngine> engine,
                                                bool tick_in_background) {
  return std::make_unique<HwmonCollector>(std::move(engine), tick_in_background);
}

}  // namespace hwperf::hwmon
