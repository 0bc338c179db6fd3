#include "common/cpu_list.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>
#include <utility>

#include "common/files.h"
#include "common/text.h"

namespace hwperf {
namespace {
// Linux's NR_CPUS tops out at 8192 today; the bound keeps a typo such as "0-4294967295" from
// allocating gigabytes (or looping forever at the top of unsigned).
constexpr unsigned kMaxCpus = 65536;

unsigned parse_number(std::string_view part, std::string_view whole) {
  part = trim(part);
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
  if (part.empty() || ec != std::errc() || end != part.data() + part.size()) {
    throw std::invalid_argument("\"" + std::string(part) + "\" in CPU list \"" +
                                std::string(whole) + "\" is not a CPU number");
  }
  if (value >= kMaxCpus) {
    throw std::invalid_argument("CPU " + std::to_string(value) + " in CPU list \"" +
                                std::string(whole) + "\" is beyond any Linux kernel (at most " +
                                std::to_string(kMaxCpus) + " CPUs)");
  }
  return value;
}
}  // namespace

std::vector<unsigned> parse_cpu_list(std::string_view text) {
  // Ranges are merged before anything is expanded, so that the work and memory follow the
  // length of the text and the number of distinct CPUs (at most kMaxCpus), never the sum of the
  // ranges: a list repeating "0-65535" a thousand times is 65536 CPUs, not 65 million.
  std::vector<std::pair<unsigned, unsigned>> ranges;
  if (trim(text).empty()) throw std::invalid_argument("empty CPU list");
  std::string_view rest = text;
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const auto dash = item.find('-');
    if (dash == std::string_view::npos) {
      const unsigned cpu = parse_number(item, text);
      ranges.emplace_back(cpu, cpu);
    } else {
      const unsigned first = parse_number(item.substr(0, dash), text);
      const unsigned last = parse_number(item.substr(dash + 1), text);
      if (last < first) {
        throw std::invalid_argument("range \"" + std::string(trim(item)) + "\" in CPU list \"" +
                                    std::string(text) + "\" runs backwards");
      }
      ranges.emplace_back(first, last);
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  std::sort(ranges.begin(), ranges.end());
  std::vector<unsigned> cpus;
  unsigned next = 0;  // the lowest CPU not yet listed
  for (const auto& [first, last] : ranges) {
    for (unsigned cpu = std::max(first, next); cpu <= last; ++cpu) cpus.push_back(cpu);
    next = std::max(next, last + 1);
  }
  return cpus;
}

std::string format_cpu_list(const std::vector<unsigned>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

std::optional<std::vector<unsigned>> read_online_cpus(const std::string& sysfs) {
  const auto text = read_small_file(sysfs + "/devices/system/cpu/online");
  if (!text.ok()) return std::nullopt;
  try {
    return parse_cpu_list(text.value);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

}  // namespace hwperf
