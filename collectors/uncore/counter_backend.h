// The seam between the uncore collector and the kernel: opening one system-wide counter on a CPU
// and reading its count. The real backend is perf_event_open(2) (collectors/perf/perf_event.h);
// tests hand the collector a fake that records what was opened and returns scripted counts, so
// that PMUs this machine lacks (IMC, UMC) are exercised from fixture trees.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "collectors/perf/perf_event.h"
#include "common/files.h"
#include "common/interface.h"

namespace hwperf::uncore {

class CounterBackend : public Interface {
 public:
  // Opens `event` system-wide (pid -1) on `cpu`: a handle for read(), or the errno of the open.
  virtual OrErrno<std::size_t> open(const perf::EventEncoding& event, unsigned cpu) = 0;
  // The counter's count since it was opened (the kernel keeps 64 bits; never reset).
  virtual OrErrno<std::uint64_t> read(std::size_t handle) = 0;
};

// perf_event_open(2) with owned descriptors.
std::unique_ptr<CounterBackend> make_perf_backend();

}  // namespace hwperf::uncore
