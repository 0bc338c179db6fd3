#include "topology/cpu_identity.h"

#include "common/files.h"
#include "common/text.h"

namespace hwperf {

std::string CpuIdentity::describe() const {
  return vendor + " family " + std::to_string(family) + " model " + std::to_string(model);
}

std::optional<CpuIdentity> parse_cpuinfo(std::string_view text) {
  CpuIdentity cpu;
  bool vendor = false;
  bool family = false;
  bool model = false;
  while (!text.empty()) {
    const auto newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
    if (trim(line).empty()) {
      if (vendor || family || model) break;  // the end of the first processor's block
      continue;
    }
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = trim(line.substr(0, colon));
    const std::string_view value = trim(line.substr(colon + 1));
    if (key == "vendor_id") {
      cpu.vendor = std::string(value);
      vendor = true;
    } else if (key == "cpu family") {
      const auto parsed = parse_u64(value);
      if (!parsed || *parsed > 0xFFFF) return std::nullopt;
      cpu.family = static_cast<unsigned>(*parsed);
      family = true;
    } else if (key == "model") {
      const auto parsed = parse_u64(value);
      if (!parsed || *parsed > 0xFFFF) return std::nullopt;
      cpu.model = static_cast<unsigned>(*parsed);
      model = true;
    }
  }
  if (!vendor || !family || !model) return std::nullopt;
  return cpu;
}

std::optional<CpuIdentity> read_cpu_identity(const std::string& procfs_root) {
  const auto text = read_small_file(procfs_root + "/cpuinfo");
  if (!text.ok()) return std::nullopt;
  return parse_cpuinfo(text.value);
}

}  // namespace hwperf
