// Plain configuration structs with their defaults. Everything here is a value: it is loaded and
// validated once at startup (config/loader.h) and then handed, read-only, to the parts that need
// it. The settings of the layers above (each collector's, in collectors/<name>/<name>_config.h,
// and the event groups, collectors/events/specs.h) are held by Config without config/ naming
// them: a collector reads its own with config.get<ItsSettings>().
#pragma once

#include <map>
#include <memory>
#include <string>
#include <typeindex>
#include <typeinfo>
#include <utility>

#include "common/log.h"
#include "common/source_mark.h"

namespace hwperf {

// Every IPv4 address, on the port registered for this exporter in Prometheus' default port
// allocations wiki page.
inline constexpr const char* kDefaultListenAddress = ":9477";
inline constexpr const char* kDefaultTelemetryPath = "/metrics";
// The liveness path: never rate limited nor authenticated, and no telemetry path may take it.
inline constexpr const char* kHealthPath = "/-/healthy";

struct WebConfig {
  std::string listen_address = kDefaultListenAddress;
  SourceMark listen_address_mark;  // where the file set it; a default or a flag has none
  std::string telemetry_path = kDefaultTelemetryPath;
};

// What is wrong with a telemetry path, or "" when nothing is: it must start with /, and it must
// not be a path the exporter serves something else at (/-/healthy, the landing page /), or the
// metrics could not be reached. The one check behind web.telemetry_path and the flag.
std::string telemetry_path_problem(const std::string& path);

struct PathsConfig {
  std::string sysfs = "/sys";
  std::string procfs = "/proc";
  std::string devfs = "/dev";
};

struct TopologyConfig {
  enum class Kind { system, xml, synthetic };
  Kind kind = Kind::system;
  std::string argument;  // XML path or synthetic description
  SourceMark mark;
  std::string to_string() const;  // "system", "xml:PATH", "synthetic:DESC"
};

// Minimum and maximum of a collector's rescan_interval_seconds (process targets, containers):
// faster would spend the CPU being measured on reading /proc or the cgroup tree; slower leaves
// new processes and containers uncounted for a minute.
inline constexpr double kMinRescanIntervalSeconds = 0.1;
inline constexpr double kMaxRescanIntervalSeconds = 60;

// Settings of types config/ does not know, one value per type, copied with the Config that holds
// them (OpenTelemetry's collector holds each component's config the same way).
class SettingsByType {
 public:
  SettingsByType() = default;
  SettingsByType(const SettingsByType& other) { *this = other; }
  SettingsByType& operator=(const SettingsByType& other) {
    if (this == &other) return *this;
    held_.clear();
    for (const auto& [type, value] : other.held_) held_.emplace(type, value->clone());
    return *this;
  }
  SettingsByType(SettingsByType&&) noexcept = default;
  SettingsByType& operator=(SettingsByType&&) noexcept = default;

  // The value of type T, made with T's defaults the first time it is asked for.
  template <typename T>
  T& get() {
    auto& held = held_[std::type_index(typeid(T))];
    if (!held) held = std::make_unique<Held<T>>();
    return static_cast<Held<T>&>(*held).value;
  }
  // The value of type T, or T's defaults when none was set.
  template <typename T>
  const T& get() const {
    const auto found = held_.find(std::type_index(typeid(T)));
    if (found == held_.end()) {
      static const T defaults{};
      return defaults;
    }
    return static_cast<const Held<T>&>(*found->second).value;
  }

 private:
  struct Base {
    virtual ~Base() = default;
    virtual std::unique_ptr<Base> clone() const = 0;
  };
  template <typename T>
  struct Held final : Base {
    T value{};
    std::unique_ptr<Base> clone() const override { return std::make_unique<Held>(*this); }
  };
  std::map<std::type_index, std::unique_ptr<Base>> held_;
};

struct Config {
  WebConfig web;
  PathsConfig paths;
  TopologyConfig topology;
  LogLevel log_level = LogLevel::info;
  std::string source_file;  // "" when running on defaults

  // A section of a layer above config/, by its type (a collector's settings, GroupsConfig):
  // its defaults until the file sets it.
  template <typename T>
  T& get() {
    return sections_.get<T>();
  }
  template <typename T>
  const T& get() const {
    return sections_.get<T>();
  }

 private:
  SettingsByType sections_;
};

}  // namespace hwperf
