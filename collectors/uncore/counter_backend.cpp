#include "collectors/uncore/counter_backend.h"

#include <vector>

#include "common/unique_fd.h"

namespace hwperf::uncore {
namespace {

class PerfBackend final : public CounterBackend {
 public:
  OrErrno<std::size_t> open(const perf::EventEncoding& event, unsigned cpu) override {
    // Uncore and msr PMUs count what the whole package (or CPU) does: no task, no exclude bits
    // (they refuse them with EINVAL).
    auto opened = perf::open_counter(event, -1, static_cast<int>(cpu));
    if (!opened.ok()) return {0, opened.error};
    fds_.push_back(std::move(opened.value));
    return {fds_.size() - 1, 0};
  }
  OrErrno<std::uint64_t> read(std::size_t handle) override {
    // The count as the kernel kept it, never scaled by enabled/running time: a free counter of
    // these PMUs counts whenever it is enabled, and a silent scaling would hide it if not.
    const auto reading = perf::read_counter(fds_.at(handle));
    return {reading.value.value, reading.error};
  }

 private:
  std::vector<UniqueFd> fds_;  // opened at startup only; a scrape reads
};

}  // namespace

std::unique_ptr<CounterBackend> make_perf_backend() { return std::make_unique<PerfBackend>(); }

}  // namespace hwperf::uncore
