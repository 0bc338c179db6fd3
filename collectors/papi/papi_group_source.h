// The papi collector's event groups, counted through the perf backend: each group on each CPU
// one kernel group (perf::CounterGroup, system-wide: pid -1, cpu N), read with one read(2).
//
// Why not a PAPI event set: a set bound by qualifier (cpu=N), the only binding that works
// without a hardware PMU, is per thread, and PAPI's multiplexing scales a count by its lifetime
// share of the counters (papi_source.cpp); a kernel group is scheduled whole or not at all and
// its members share one enabled and one running time, so every member is scaled by the group's
// running share of each read interval (perf::delta_between) and a ratio of two members is a
// ratio over the same time.
//
// Layout: a group's members are layout events first_event, first_event + 1, ..., followed by
// two more, its enabled and its running time in nanoseconds, counted like the members (scaled
// totals since the set was built or reset), so that the collector's totals, resets and rebuilds
// treat them alike.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectors/papi/counter_source.h"
#include "collectors/perf/counter_set.h"
#include "collectors/perf/perf_event.h"
#include "collectors/papi/papi_config.h"

namespace hwperf::papi {

struct GroupOpening {
  std::string name;
  std::vector<perf::EventEncoding> encodings;  // the leader first
  std::size_t first_event = 0;
};

class GroupSource final : public CounterSource {
 public:
  GroupSource(const std::vector<GroupOpening>& groups, const std::vector<unsigned>& cpus,
              const PathsConfig& paths);
  const SourceLayout& layout() const override { return layout_; }
  void read(std::vector<std::int64_t>& values, std::vector<std::string>& failures) override;
  std::string reset(std::size_t set) override;
  std::string rebuild(std::size_t set) override;
  // read(2)s of group leaders since construction: one per set per read(), whatever its size.
  std::uint64_t group_reads() const;

 private:
  // One group on one CPU: slot `slot` of its group's counter set.
  struct Set {
    std::size_t group = 0;
    std::size_t slot = 0;
    unsigned cpu = 0;
    std::vector<std::size_t> slots;  // layout counter of each member, then enabled and running
  };
  // Each group's counter set: the group one unit, on every CPU, system-wide.
  struct Counted {
    std::unique_ptr<perf::CounterSet> counters;
    perf::CounterSet::Member member = 0;
  };
  std::vector<GroupOpening> groups_;
  std::vector<Counted> counted_;  // per group
  std::vector<Set> sets_;
  SourceLayout layout_;
};

// Two sources as one: the second's counters and sets follow the first's (event indices are
// kept: the two must number their events apart), and its sets are numbered per CPU after the
// first's.
std::unique_ptr<CounterSource> join_sources(std::unique_ptr<CounterSource> first,
                                            std::unique_ptr<CounterSource> second);

}  // namespace hwperf::papi
