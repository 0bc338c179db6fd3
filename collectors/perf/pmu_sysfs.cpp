#include "collectors/perf/pmu_sysfs.h"

#include <filesystem>
#include <stdexcept>

#include "common/files.h"
#include "common/text.h"

namespace hwperf::perf {
namespace fs = std::filesystem;

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

}  // namespace hwperf::perf
