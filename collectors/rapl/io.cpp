#include "collectors/rapl/io.h"

#include "common/files.h"

namespace hwperf::rapl {

unsigned die_of_cpu(const std::string& sysfs_root, unsigned cpu) {
  const auto die = read_u64_file(sysfs_root + "/devices/system/cpu/cpu" + std::to_string(cpu) +
                                 "/topology/die_id");
  if (!die.ok() || die.value > 0xFFFF) return 0;
  return static_cast<unsigned>(die.value);
}

}  // namespace hwperf::rapl
