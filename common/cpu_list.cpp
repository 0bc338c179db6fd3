#include "common/cpu_list.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>

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
  std::vector<unsigned> cpus;
  if (trim(text).empty()) throw std::invalid_argument("empty CPU list");
  std::string_view rest = text;
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const auto dash = item.find('-');
    if (dash == std::string_view::npos) {
      cpus.push_back(parse_number(item, text));
    } else {
      const unsigned first = parse_number(item.substr(0, dash), text);
      const unsigned last = parse_number(item.substr(dash + 1), text);
      if (last < first) {
        throw std::invalid_argument("range \"" + std::string(trim(item)) + "\" in CPU list \"" +
                                    std::string(text) + "\" runs backwards");
      }
      for (unsigned cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
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

}  // namespace hwperf
