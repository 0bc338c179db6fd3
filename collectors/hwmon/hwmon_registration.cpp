#include "collectors/hwmon/hwmon_registration.h"

#include "collectors/hwmon/hwmon_config.h"

#include "collectors/hwmon/hwmon_collector.h"
#include "collectors/hwmon/hwmon_engine.h"
#include "common/log.h"
#include "common/text.h"

namespace hwperf {
namespace hwmon {

Survey survey_meters(const std::string& sysfs_root, const Topology& topology) {
  Survey survey;
  survey.class_path = sysfs_root + "/class/hwmon";
  survey.discovery = discover_meters(sysfs_root);
  survey.placement = place_sensors(survey.discovery.sensors, topology);
  return survey;
}

namespace {

std::string describe_sensor(const SensorSpec& spec) {
  std::string line = spec.chip + " " + spec.sensor + " (" + spec.name;
  if (!spec.label.empty()) line += ", \"" + spec.label + "\"";
  line += "): hwperf_hwmon_" + std::string(kind_info(spec.kind).name) + "_joules_total";
  if (spec.package) line += " of package " + std::to_string(*spec.package);
  line += spec.source == Source::counter ? ", counted by the chip in " : ", integrated from ";
  return line + spec.path;
}

}  // namespace

std::vector<std::string> describe_survey(const Survey& survey) {
  std::vector<std::string> lines;
  for (const auto& sensor : survey.discovery.sensors) lines.push_back(describe_sensor(sensor.spec));
  for (const auto& note : survey.placement.notes) lines.push_back(note);
  for (const auto& why : survey.placement.refused) lines.push_back("not exported: " + why);
  for (const auto& why : survey.discovery.refused) lines.push_back("refused: " + why);
  for (const auto& why : survey.discovery.ignored) lines.push_back("ignored: " + why);
  if (survey.discovery.sensors.empty()) {
    const auto& chips = survey.discovery.chips;
    lines.push_back("no power meter under " + survey.class_path + " (" +
                    (chips.empty() ? "no hwmon chip" : "chips: " + join(chips)) +
                    "): hwperf_hwmon_energy_available 0; the node's energy beyond RAPL is not "
                    "measured here");
  }
  return lines;
}

namespace {

// What the log says at startup: each line of the survey, the refusals as warnings, and a note
// where a meter averages over longer or shorter than the tick.
void log_survey(const Survey& survey, const EngineSettings& settings) {
  for (const auto& line : describe_survey(survey)) {
    if (line.rfind("refused: ", 0) == 0 || line.rfind("not exported: ", 0) == 0) {
      log::warn("hwmon: " + line);
    } else {
      log::info("hwmon: " + line);
    }
  }
  for (const auto& sensor : survey.discovery.sensors) {
    const double average = sensor.spec.average_interval_seconds;
    if (average > 0 && average < settings.interval_seconds) {
      log::info("hwmon: " + sensor.spec.path + " averages over " + format_number(average) +
                " s and is read every " + format_number(settings.interval_seconds) +
                " s: each reading stands for its tick; collectors.hwmon.interval_seconds: " +
                format_number(average) + " would read every average once");
    }
  }
}

}  // namespace
}  // namespace hwmon

namespace {

bool hwmon_enabled(const Config& config) { return config.get<HwmonCollectorConfig>().enabled; }

std::unique_ptr<Collector> hwmon_make(const Config& config, const Topology& topology,
                                      const CollectorServices&) {
  const auto& settings = config.get<HwmonCollectorConfig>();
  auto survey = hwmon::survey_meters(config.paths.sysfs, topology);
  const hwmon::EngineSettings engine_settings{settings.interval_seconds,
                                              settings.stale_after_seconds};
  hwmon::log_survey(survey, engine_settings);
  auto engine = std::make_unique<hwmon::HwmonEngine>(
      hwmon::make_sysfs_source(std::move(survey.discovery.sensors)), engine_settings);
  return hwmon::make_hwmon_collector(std::move(engine));
}

std::vector<std::string> hwmon_check(const Config& config, const Topology& topology,
                                     const CollectorServices&) {
  return hwmon::describe_survey(hwmon::survey_meters(config.paths.sysfs, topology));
}

// A directory per chip read, and one attribute open at a time while a tick reads.
FileNeed hwmon_files(const Config& config, const Topology& topology) {
  const auto count = hwmon::survey_meters(config.paths.sysfs, topology).discovery.sensors.size();
  return {"hwmon: " + std::to_string(count) + " meter(s)",
          static_cast<unsigned long>(count == 0 ? 0 : 2 * count + 1)};
}

}  // namespace

CollectorEntry hwmon_collector_entry() {
  // hwmon attributes are world-readable (sysfs-interface.rst, "Attribute access"): no privilege.
  return CollectorEntry("hwmon", &hwmon_settings_keys, &hwmon_enabled, &hwmon_make, &hwmon_check)
      .with_files(&hwmon_files);
}

}  // namespace hwperf
