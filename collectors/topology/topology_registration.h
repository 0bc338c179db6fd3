// The topology collector's entry in the collector registry (collectors/collector_entry.h).
#pragma once

#include "collectors/collector_entry.h"

namespace hwperf {

CollectorEntry topology_collector_entry();

}  // namespace hwperf
