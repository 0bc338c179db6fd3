// The open-file budget: every perf event the PAPI and RAPL collectors open is a file descriptor
// (one per CPU and event), and systemd gives services a soft limit of 1024. PAPI reports EMFILE
// as "too many events" (PAPI_ECNFLCT), so running out looks like a PMU conflict: events are
// multiplexed or dropped with the counters blamed. The exporter therefore works out at startup
// what it will hold open and refuses to start, saying so, when that does not fit.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace hwperf {

struct FileNeed {
  FileNeed(std::string what_, unsigned long count_, std::string chosen_at_ = {})
      : what(std::move(what_)), count(count_), chosen_at(std::move(chosen_at_)) {}
  std::string what;  // "PAPI: 512 CPUs x 11 events"
  unsigned long count = 0;
  // Where the configuration chose this need beyond the machine's shape (process targets): a
  // shortfall only it causes is the user's to fix, "" otherwise.
  std::string chosen_at;
};

// Raises the soft RLIMIT_NOFILE to the hard limit, as Go's runtime does for every program since
// 1.19 (the soft limit of 1024 exists for select(2), which nothing here uses). Returns the soft
// limit in force afterwards; ULONG_MAX when unlimited.
unsigned long raise_open_file_limit() noexcept;

// Descriptors this process has open now (the entries of /proc/self/fd, one of them the
// directory's own).
unsigned long open_file_count();

// Empty when `needs` fit under `limit`; else the startup error: what needs how many, the limit,
// and the remedy.
std::string open_file_shortfall(const std::vector<FileNeed>& needs, unsigned long limit);

}  // namespace hwperf
