#include "collectors/uncore/pmu_boxes.h"

#include <stdexcept>

#include "collectors/perf/pmu_sysfs.h"
#include "common/cpu_list.h"
#include "common/files.h"
#include "common/text.h"

namespace hwperf::uncore {

std::string devices_dir(const std::string& sysfs_root) {
  return sysfs_root + "/bus/event_source/devices";
}

EncodedEvent encode_box_event(const std::string& box_dir, const std::string& box, const char* event,
                              const char* builtin) {
  EncodedEvent out;
  const auto type = read_u64_file(box_dir + "/type");
  if (!type.ok() || type.value > 0xFFFFFFFFu) {
    out.problem = box_dir + "/type: " + (type.ok() ? "not a PMU type" : errno_text(type.error));
    return out;
  }
  std::string description = builtin != nullptr ? builtin : "";
  if (event != nullptr) {
    const std::string event_path = box_dir + "/events/" + event;
    const auto text = read_small_file(event_path);
    if (!text.ok()) {
      out.problem = event_path + ": " + errno_text(text.error);
      return out;
    }
    description = std::string(trim(text.value));
  }
  const std::string name = box + "/" + (event != nullptr ? event : description) + "/";
  try {
    const auto config = perf::parse_perf_event(description, perf::read_formats(box_dir));
    out.encoding.name = name;
    out.encoding.type = static_cast<std::uint32_t>(type.value);
    out.encoding.config = config.config;
    out.encoding.config1 = config.config1;
    out.encoding.config2 = config.config2;
  } catch (const std::invalid_argument& e) {
    out.problem = name + ": " + e.what();
  }
  return out;
}

std::vector<const HardwareThread*> cpumask_threads(const std::string& box_dir,
                                                   const Topology& topology, std::string& problem) {
  std::vector<const HardwareThread*> threads;
  const auto mask = read_small_file(box_dir + "/cpumask");
  if (!mask.ok()) {
    problem = box_dir + "/cpumask: " + errno_text(mask.error);
    return threads;
  }
  try {
    for (unsigned cpu : parse_cpu_list(trim(mask.value))) {
      if (const HardwareThread* thread = topology.find(cpu)) threads.push_back(thread);
    }
  } catch (const std::invalid_argument& e) {
    problem = box_dir + "/cpumask: " + e.what();
    return threads;
  }
  if (threads.empty()) problem = box_dir + "/cpumask names no CPU of the topology";
  return threads;
}

}  // namespace hwperf::uncore
