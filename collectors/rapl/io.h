// RAPL's view of dies, until topology/ owns them.
#pragma once

#include <string>

#include "common/files.h"
#include "common/text.h"
#include "common/unique_fd.h"

namespace hwperf::rapl {

// The die a CPU belongs to within its package, from <sysfs>/devices/system/cpu/cpuN/topology/
// die_id; 0 where the kernel does not report dies.
unsigned die_of_cpu(const std::string& sysfs_root, unsigned cpu);

}  // namespace hwperf::rapl
