// Sysfs trees of the kernel's uncore and msr PMUs for the uncore collector's tests, written from
// the kernel's own strings (each cited where it is written), and a fake counter backend that
// records what was opened and returns scripted counts.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collectors/uncore/counter_backend.h"
#include "tests/support.h"

namespace hwperf::test::uncore_fixture {

inline std::string pmu_path(const std::string& pmu) {
  return "sys/bus/event_source/devices/" + pmu + "/";
}

// Sapphire Rapids IMC, arch/x86/events/intel/uncore_snbep.c (v6.6):
// - spr_uncore_raw_formats_attr (around line 5610) lists event, umask_ext4, edge, inv, thresh8,
//   whose DEFINE_UNCORE_FORMAT_ATTR lines (around line 470) say config:0-7, config:8-15,32-55,
//   config:18, config:23, config:24-31;
// - spr_uncore_imc_events (around line 6071) says cas_count_read "event=0x05,umask=0xcf",
//   cas_count_write "event=0x05,umask=0xf0", each with .scale "6.103515625e-5" and .unit "MiB".
// The kernel names the boxes uncore_imc_0..N (uncore.c uncore_pmu_register: "uncore_%s_%d"),
// and every box's cpumask names one CPU per package (uncore_pmu_attr cpumask).
inline constexpr std::uint64_t kSprCasReadEvent = 0x05, kSprCasReadUmask = 0xcf;
inline constexpr std::uint64_t kSprCasWriteEvent = 0x05, kSprCasWriteUmask = 0xf0;
// Both SPR and TGL write this .scale, in MiB (64 bytes per count).
inline constexpr const char* kImcMiBPerCount = "6.103515625e-5";
inline constexpr unsigned kSprBoxType0 = 40;  // dynamic types: each box its own

inline void write_spr_imc(const TempDir& root, unsigned boxes, const std::string& cpumask) {
  for (unsigned box = 0; box < boxes; ++box) {
    const std::string dir = pmu_path("uncore_imc_" + std::to_string(box));
    root.write(dir + "type", std::to_string(kSprBoxType0 + box) + "\n");
    root.write(dir + "cpumask", cpumask + "\n");
    root.write(dir + "format/event", "config:0-7\n");
    root.write(dir + "format/umask", "config:8-15,32-55\n");
    root.write(dir + "format/edge", "config:18\n");
    root.write(dir + "format/inv", "config:23\n");
    root.write(dir + "format/thresh8", "config:24-31\n");
    root.write(dir + "events/clockticks", "event=0x01,umask=0x00\n");
    root.write(dir + "events/cas_count_read", "event=0x05,umask=0xcf\n");
    root.write(dir + "events/cas_count_read.scale", std::string(kImcMiBPerCount) + "\n");
    root.write(dir + "events/cas_count_read.unit", "MiB\n");
    root.write(dir + "events/cas_count_write", "event=0x05,umask=0xf0\n");
    root.write(dir + "events/cas_count_write.scale", std::string(kImcMiBPerCount) + "\n");
    root.write(dir + "events/cas_count_write.unit", "MiB\n");
  }
  // The free-running IMC counters count the same traffic: the collector must leave them alone.
  root.write(pmu_path("uncore_imc_free_running_0") + "type", "60\n");
  root.write(pmu_path("uncore_imc_free_running_0") + "cpumask", cpumask + "\n");
}

// AMD Zen 4 UMC, arch/x86/events/amd/uncore.c (v6.6): amd_uncore_umc_ctx_init names one PMU per
// memory controller "amd_umc_%hu" numbered across sockets, each with the cpumask of its socket;
// amd_uncore_umc_format_attr holds event8 ("config:0-7") and rdwrmask ("config:8-9"); there is no
// events/ directory. perf's tools/perf/pmu-events/arch/x86/amdzen4/memory-controller.json gives
// umc_cas_cmd.rd/.wr as EventCode 0x0a with RdWrMask 0x1/0x2.
inline constexpr std::uint64_t kUmcCasEvent = 0x0a, kUmcReadMask = 0x1, kUmcWriteMask = 0x2;
inline constexpr std::uint64_t kBytesPerCas = 64;  // one 64-byte line per CAS command
inline constexpr unsigned kUmcType = 20;

inline void write_zen4_umc(const TempDir& root, unsigned first_box, unsigned boxes,
                           const std::string& cpumask) {
  for (unsigned box = first_box; box < first_box + boxes; ++box) {
    const std::string dir = pmu_path("amd_umc_" + std::to_string(box));
    root.write(dir + "type", std::to_string(kUmcType + box) + "\n");
    root.write(dir + "cpumask", cpumask + "\n");
    root.write(dir + "format/event", "config:0-7\n");
    root.write(dir + "format/rdwrmask", "config:8-9\n");
  }
}

// Tiger Lake client IMC, arch/x86/events/intel/uncore_snb.c (v6.6): only free-running counters,
// PMUs uncore_imc_free_running_<N>, tgl_uncore_imc_events data_read "event=0xff,umask=0x20" and
// data_write "event=0xff,umask=0x30", each with .scale "6.103515625e-5" and .unit "MiB"; event
// and umask fill config:0-7 and config:8-15.
inline void write_tgl_imc(const TempDir& root, unsigned boxes) {
  for (unsigned box = 0; box < boxes; ++box) {
    const std::string dir = pmu_path("uncore_imc_free_running_" + std::to_string(box));
    root.write(dir + "type", std::to_string(16 + box) + "\n");
    root.write(dir + "cpumask", "0\n");
    root.write(dir + "format/event", "config:0-7\n");
    root.write(dir + "format/umask", "config:8-15\n");
    for (const char* event : {"data_read", "data_write"}) {
      const bool read = std::string(event) == "data_read";
      root.write(dir + "events/" + event,
                 read ? "event=0xff,umask=0x20\n" : "event=0xff,umask=0x30\n");
      root.write(dir + "events/" + event + ".scale", std::string(kImcMiBPerCount) + "\n");
      root.write(dir + "events/" + event + ".unit", "MiB\n");
    }
  }
}

// The msr PMU, arch/x86/events/msr.c: format "event" is config:0-63; events tsc "event=0x00",
// aperf "event=0x01", mperf "event=0x02"; no cpumask (it counts per CPU or per task).
inline void write_msr(const TempDir& root, bool with_aperf_mperf) {
  const std::string dir = pmu_path("msr");
  root.write(dir + "type", "9\n");
  root.write(dir + "format/event", "config:0-63\n");
  root.write(dir + "events/tsc", "event=0x00\n");
  if (with_aperf_mperf) {
    root.write(dir + "events/aperf", "event=0x01\n");
    root.write(dir + "events/mperf", "event=0x02\n");
  }
}

// The cstate PMUs, arch/x86/events/intel/cstate.c (v6.6): the comment at the top lists the
// counters and their perf codes (core: C1 0x00, C3 0x01, C6 0x02, C7 0x03; package: C2 0x00,
// C3 0x01, C6 0x02, C7 0x03, C8 0x04, C9 0x05, C10 0x06); the events are named
// "c<N>-residency" and written "event=0x.." (DEFINE_CSTATE_FORMAT_ATTR: event config:0-63);
// cstate_core's cpumask names one CPU per core, cstate_pkg's one per package.
struct CstateEvent {
  const char* state;
  std::uint64_t code;
};
inline constexpr CstateEvent kCoreCstates[] = {
    {"c1", 0x00}, {"c3", 0x01}, {"c6", 0x02}, {"c7", 0x03}};
inline constexpr CstateEvent kPackageCstates[] = {{"c2", 0x00}, {"c3", 0x01}, {"c6", 0x02},
                                                  {"c7", 0x03}, {"c8", 0x04}, {"c9", 0x05},
                                                  {"c10", 0x06}};

template <std::size_t N>
void write_cstate(const TempDir& root, const std::string& pmu, unsigned type,
                  const std::string& cpumask, const CstateEvent (&events)[N]) {
  const std::string dir = pmu_path(pmu);
  root.write(dir + "type", std::to_string(type) + "\n");
  root.write(dir + "cpumask", cpumask + "\n");
  root.write(dir + "format/event", "config:0-63\n");
  for (const CstateEvent& event : events) {
    char code[8];
    std::snprintf(code, sizeof code, "0x%02x", static_cast<unsigned>(event.code));
    root.write(dir + "events/" + event.state + "-residency", std::string("event=") + code + "\n");
  }
}

struct Opened {
  perf::EventEncoding event;
  unsigned cpu = 0;
};

// What the fake saw and what it answers; shared with the test after the collector owns the fake.
struct FakeState {
  std::vector<Opened> opened;
  std::vector<std::uint64_t> counts;  // per handle, set by the test between scrapes
  int open_error = 0;                 // errno every open returns, when set
};

class FakeBackend final : public uncore::CounterBackend {
 public:
  explicit FakeBackend(std::shared_ptr<FakeState> state) : state_(std::move(state)) {}
  OrErrno<std::size_t> open(const perf::EventEncoding& event, unsigned cpu) override {
    if (state_->open_error != 0) return {0, state_->open_error};
    state_->opened.push_back({event, cpu});
    state_->counts.push_back(0);
    return {state_->opened.size() - 1, 0};
  }
  OrErrno<std::uint64_t> read(std::size_t handle) override {
    if (handle >= state_->counts.size()) return {0, EBADF};
    return {state_->counts[handle], 0};
  }

 private:
  std::shared_ptr<FakeState> state_;
};

}  // namespace hwperf::test::uncore_fixture
