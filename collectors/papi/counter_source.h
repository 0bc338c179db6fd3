// The seam between the PAPI collector and PAPI: a source of running counts laid out per (event,
// CPU), for the events as the collector exports them (events::ExportedEvent). The real source is
// papi_source.h; tests drive the collector with fakes (like rapl/energy_source.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/interface.h"

namespace hwperf::papi {

// One (event, CPU) pair that the source counts. read() fills values in layout order.
struct CounterId {
  // Index into the collector's events: the ungrouped EventSpecs first, then each group's
  // members followed by its enabled and running times (papi_collector.h, ExportedGroup).
  std::size_t event = 0;
  unsigned cpu = 0;
};

// One (event, CPU) pair that exists but could not be opened; decided once at startup.
struct DroppedCounter {
  std::size_t event = 0;
  unsigned cpu = 0;
  std::string reason;  // short, stable text (PAPI_strerror): the `reason` label
  std::string remedy;  // what the user can do about it, for the log line
};

struct EventSetInfo {
  unsigned cpu = 0;
  unsigned index = 0;   // 0, 1, ... per CPU, in the order the sets were built
  std::string binding;  // "cpu_attach", "qualifier", "perf" or "perf_group"
  bool multiplexed = false;
  std::vector<std::size_t> counters;  // indices into SourceLayout::counters
  // One kernel group (papi_group_source.h): its last two counters are the group's enabled and
  // running times, not events.
  bool kernel_group = false;
};

struct SourceLayout {
  std::vector<CounterId> counters;
  std::vector<DroppedCounter> dropped;
  std::vector<EventSetInfo> event_sets;
  std::vector<std::string> notes;  // startup decisions worth one log line each
};

// Counts that are already running. The layout is fixed at construction; the collector may zero
// or rebuild an event set (reset, rebuild) but never adds or removes counters.
class CounterSource : public Interface {
 public:
  virtual const SourceLayout& layout() const = 0;
  // Fills values[i] (sized to layout().counters.size()) with layout().counters[i]'s count since
  // the set started or was last reset, as PAPI returns it: signed, because PAPI 7.0's multiplex
  // scaling (perf_event.c _pe_read_multiplexed: (enabled * 100 / running) * count in signed
  // 64-bit) can overflow into a negative. failures[s] (sized to layout().event_sets.size()) is
  // why event set s could not be read, "" when it was; a failed set's values are left as they
  // were. One set failing (its CPU went offline, a pinned group was pushed off the PMU) never
  // stops the others from being read. The collector serialises calls to all three methods, so a
  // source needs no lock of its own.
  virtual void read(std::vector<std::int64_t>& values, std::vector<std::string>& failures) = 0;
  // Zeroes the counts of event set `set` (PAPI_reset), so that none grows without bound; the
  // collector keeps the running totals. Returns "" on success, else why not: the counts then
  // go on from where they were, and the collector must not take them as new.
  virtual std::string reset(std::size_t set) = 0;
  // Destroys event set `set` and builds it again with the same counters, so that it counts
  // again after its CPU went offline and came back, or after it failed to read; its counts start
  // from zero. Returns "" on success, else why not (the set then reads as failed until a later
  // rebuild succeeds).
  virtual std::string rebuild(std::size_t set) = 0;
};

// Every event counted on every CPU, one qualifier event set per CPU: the layout fake sources
// (tests, the benchmark) start from.
inline SourceLayout every_event_on_every_cpu(std::size_t events,
                                             const std::vector<unsigned>& cpus) {
  SourceLayout layout;
  for (unsigned cpu : cpus) {
    EventSetInfo set;
    set.cpu = cpu;
    set.binding = "qualifier";
    for (std::size_t event = 0; event < events; ++event) {
      set.counters.push_back(layout.counters.size());
      layout.counters.push_back({event, cpu});
    }
    layout.event_sets.push_back(std::move(set));
  }
  return layout;
}

}  // namespace hwperf::papi
