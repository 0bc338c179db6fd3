// The RAPL collector's entry in the collector registry (collectors/collector_entry.h).
#pragma once

#include "collectors/collector_entry.h"

namespace hwperf {

CollectorEntry rapl_collector_entry();

}  // namespace hwperf
