// Describing events of a PMU the kernel lists under <sysfs>/bus/event_source/devices/<pmu>: the
// format files that say which config bits a term fills, and event descriptions written in them
// (the RAPL `power` PMU; later any PMU a user names by its sysfs event).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/perf/perf_event.h"
#include "collectors/events/specs.h"

namespace hwperf::perf {

struct PerfEventConfig {
  std::uint64_t config = 0;
  std::uint64_t config1 = 0;
  std::uint64_t config2 = 0;
};

// Parses a sysfs event description ("event=0x02", "event=0x3c,umask=0x1", "any") the way the
// kernel and perf do: each term goes into the config bits its <pmu>/format/<term> file names
// ("config:0-7", "config:0-7,32-35", "config1:8"). A term given without a value is 1.
// `formats` maps term name to that file's text. Throws std::invalid_argument naming the term.
PerfEventConfig parse_perf_event(std::string_view text,
                                 const std::map<std::string, std::string>& formats);

// An event's .scale file ("2.3283064365386962890625e-10", "6.103515625e-5"): a finite number
// above 0 written as the whole text (surrounding whitespace aside); nothing otherwise. The RAPL
// perf source and the uncore collector read every .scale through this.
std::optional<double> parse_event_scale(std::string_view text);

// <pmu_dir>/format/*: term name -> the file's text ("config:0-7"); empty when unreadable.
std::map<std::string, std::string> read_formats(const std::string& pmu_dir);

// Whether `name` is written the way perf names an event the kernel describes in sysfs:
// "<pmu>/<event>/" (cpu/topdown-retiring/, msr/aperf/). libpfm4 knows no such names; the
// kernel's own description is the only one (topdown-* and slots exist only in sysfs).
bool is_sysfs_event_name(std::string_view name);

// The encoding of such an event from <sysfs_root>/bus/event_source/devices/<pmu>: its `type`,
// events/<event> written in the terms of format/*. `domain` other than all sets the exclude
// bits (a PMU that cannot exclude refuses the open, which then says why). Throws
// std::invalid_argument naming the file that is missing or the term it cannot place.
EventEncoding encode_sysfs_event(const std::string& name, const std::string& sysfs_root,
                                 CountingDomain domain);

}  // namespace hwperf::perf
