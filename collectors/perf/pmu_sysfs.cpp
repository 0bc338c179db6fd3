#include "collectors/perf/pmu_sysfs.h"

#include <cmath>
#include <filesystem>
#include <cstring>
#include <stdexcept>

#include "common/files.h"
#include "common/text.h"

namespace hwperf::perf {
namespace fs = std::filesystem;

std::optional<double> parse_event_scale(std::string_view text) {
  const std::string trimmed(trim(text));
  if (trimmed.empty()) return std::nullopt;
  std::size_t used = 0;
  double scale = 0;
  try {
    scale = std::stod(trimmed, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != trimmed.size() || !(scale > 0) || !std::isfinite(scale)) return std::nullopt;
  return scale;
}

std::map<std::string, std::string> read_formats(const std::string& pmu_dir) {
  std::map<std::string, std::string> formats;
  std::error_code ec;
  for (fs::directory_iterator it(pmu_dir + "/format", ec), end; !ec && it != end;
       it.increment(ec)) {
    const auto text = read_small_file(it->path().string());
    if (text.ok()) formats[it->path().filename().string()] = std::string(trim(text.value));
  }
  return formats;
}

PerfEventConfig parse_perf_event(std::string_view text,
                                 const std::map<std::string, std::string>& formats) {
  PerfEventConfig config;
  text = trim(text);
  if (text.empty()) throw std::invalid_argument("empty event description");
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view term = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (term.empty()) continue;
    const auto equals = term.find('=');
    const std::string name(trim(term.substr(0, equals)));
    std::uint64_t value = 1;
    if (equals != std::string_view::npos) {
      const std::string_view number = trim(term.substr(equals + 1));
      const bool hex =
          number.size() > 2 && number[0] == '0' && (number[1] == 'x' || number[1] == 'X');
      const auto parsed = parse_u64(number, hex ? 16 : 10);
      if (!parsed) throw std::invalid_argument("term \"" + std::string(term) + "\": not a number");
      value = *parsed;
    }
    const auto format = formats.find(name);
    if (format == formats.end()) {
      throw std::invalid_argument("term \"" + name + "\" has no format/" + name + " file");
    }
    // "config:0-7,32-35": the value's low bits fill the listed bits in order.
    const std::string_view spec = format->second;
    const auto colon = spec.find(':');
    const std::string_view field = spec.substr(0, colon);
    std::uint64_t* target = field == "config"    ? &config.config
                            : field == "config1" ? &config.config1
                            : field == "config2" ? &config.config2
                                                 : nullptr;
    if (target == nullptr || colon == std::string_view::npos) {
      throw std::invalid_argument("format/" + name + " \"" + std::string(spec) +
                                  "\" is not understood");
    }
    std::string_view ranges = spec.substr(colon + 1);
    unsigned used = 0;
    while (!ranges.empty()) {
      const auto next = ranges.find(',');
      const std::string_view range = ranges.substr(0, next);
      ranges = next == std::string_view::npos ? std::string_view{} : ranges.substr(next + 1);
      const auto dash = range.find('-');
      const auto low = parse_u64(range.substr(0, dash));
      const auto high = dash == std::string_view::npos ? low : parse_u64(range.substr(dash + 1));
      if (!low || !high || *high < *low || *high > 63) {
        throw std::invalid_argument("format/" + name + " \"" + std::string(spec) +
                                    "\" is not understood");
      }
      for (std::uint64_t bit = *low; bit <= *high; ++bit, ++used) {
        if (used < 64 && ((value >> used) & 1u) != 0) *target |= std::uint64_t{1} << bit;
      }
    }
    if (used < 64 && (value >> used) != 0) {
      throw std::invalid_argument("term \"" + std::string(term) + "\" does not fit in " +
                                  std::to_string(used) + " bits");
    }
  }
  return config;
}

bool is_sysfs_event_name(std::string_view name) {
  const auto slash = name.find('/');
  return slash != std::string_view::npos && slash > 0 && name.size() > slash + 2 &&
         name.back() == '/' && name.find('/', slash + 1) == name.size() - 1;
}

EventEncoding encode_sysfs_event(const std::string& name, const std::string& sysfs_root,
                                 CountingDomain domain) {
  if (!is_sysfs_event_name(name)) {
    throw std::invalid_argument(name + ": not a sysfs event name (PMU/EVENT/)");
  }
  const auto slash = name.find('/');
  const std::string pmu = name.substr(0, slash);
  const std::string event = name.substr(slash + 1, name.size() - slash - 2);
  const std::string pmu_dir = sysfs_root + "/bus/event_source/devices/" + pmu;
  const auto type = read_u64_file(pmu_dir + "/type");
  if (!type.ok()) {
    throw std::invalid_argument(name + ": the kernel has no PMU named " + pmu + " (" + pmu_dir +
                                "/type: " + std::strerror(type.error) + ")");
  }
  const auto text = read_small_file(pmu_dir + "/events/" + event);
  if (!text.ok()) {
    throw std::invalid_argument(name + ": the kernel's " + pmu + " PMU has no event " + event +
                                " on this CPU (" + pmu_dir + "/events/" + event + ": " +
                                std::strerror(text.error) + ")");
  }
  PerfEventConfig config;
  try {
    config = parse_perf_event(trim(text.value), read_formats(pmu_dir));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(name + ": " + e.what());
  }
  EventEncoding encoding;
  encoding.name = name;
  encoding.type = static_cast<std::uint32_t>(type.value);
  encoding.config = config.config;
  encoding.config1 = config.config1;
  encoding.config2 = config.config2;
  encoding.exclude_user = domain == CountingDomain::kernel;
  encoding.exclude_kernel = domain == CountingDomain::user;
  encoding.exclude_hv = domain == CountingDomain::user;
  return encoding;
}

}  // namespace hwperf::perf
