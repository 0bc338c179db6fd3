// Sysfs trees of the kernel's uncore and msr PMUs (x86 and Arm) for the uncore collector's tests,
// written from the kernel's own strings (each cited where it is written), and a fake counter
// backend that records what was opened and returns scripted counts.
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
#include "tests/support/support.h"

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

// NVIDIA Grace's SCF PMU, one per socket (torvalds/linux 04330be8,
// drivers/perf/arm_cspmu/nvidia_cspmu.c): nv_cspmu_match's entry for product 0x2CF names it
// "nvidia_scf_pmu_%u" with the NUMA node of its first associated CPU (nv_cspmu_format_name:
// cpu_to_node), not the socket id; scf_pmu_event_attrs (lines 49-95) lists bus_cycles 0x1d,
// cmem_rd_data 0x1a5 (line 82), cmem_wr_total_bytes 0x1db (line 91) and cycles, the cycle counter's
// ARM_CSPMU_EVT_CYCLES_DEFAULT (1 << 32); scf_pmu_format_attrs (line 121) has only
// ARM_CSPMU_FORMAT_EVENT_ATTR, "config:0-32" (arm_cspmu.h, around line 44). arm_cspmu.c writes
// each event as "event=0x%llx\n" (arm_cspmu_sysfs_event_show), and cpumask (the CPU counting it)
// and associated_cpus (the socket's) as CPU lists (arm_cspmu_cpumask_show). Beside it a PCIe PMU
// of the same socket (product 0x103, nvidia_pcie_pmu_%u, mcf_pmu_event_attrs: rd_bytes_loc 0x0;
// pcie_pmu_format_attrs adds root_port "config1:0-9"), which counts no memory controller.
inline constexpr std::uint64_t kScfCmemReadData = 0x1a5, kScfCmemWriteTotalBytes = 0x1db;
inline constexpr std::uint64_t kScfBytesPerReadBeat = 32;  // likwid groups/nvidia_grace/MEM.txt

// Files of one PMU directory, as (name under pmu_path, text): what the kernel would show there.
using PmuFiles = std::vector<std::pair<std::string, std::string>>;
inline void write_pmu(const TempDir& root, const std::string& pmu, const PmuFiles& files) {
  for (const auto& [name, text] : files) root.write(pmu_path(pmu) + name, text);
}

inline void write_grace_scf(const TempDir& root, unsigned node, unsigned type,
                            const std::string& cpumask, const std::string& associated_cpus) {
  const std::string socket = std::to_string(node);
  write_pmu(root, "nvidia_scf_pmu_" + socket,
            {{"type", std::to_string(type) + "\n"},
             {"cpumask", cpumask + "\n"},
             {"associated_cpus", associated_cpus + "\n"},
             {"identifier", "2cf0036b\n"},
             {"format/event", "config:0-32\n"},
             {"events/bus_cycles", "event=0x1d\n"},
             {"events/cmem_rd_data", "event=0x1a5\n"},
             {"events/cmem_wr_total_bytes", "event=0x1db\n"},
             {"events/cycles", "event=0x100000000\n"}});
  write_pmu(root, "nvidia_pcie_pmu_" + socket,
            {{"type", std::to_string(type + 10) + "\n"},
             {"cpumask", cpumask + "\n"},
             {"format/event", "config:0-32\n"},
             {"format/root_port", "config1:0-9\n"},
             {"events/rd_bytes_loc", "event=0x0\n"}});
}

// Arm CMN meshes (torvalds/linux 00df9093, drivers/perf/arm-cmn.c): arm_cmn_probe names each
// "arm_cmn_%d" and counts on cpumask_local_spread(0, dev_to_node()), a CPU of the mesh's own NUMA
// node, which arm_cmn_cpumask_show writes. arm_cmn_format_attrs writes CMN_CONFIG_TYPE
// (GENMASK(15, 0)), CMN_CONFIG_EVENTID (26, 16), CMN_CONFIG_OCCUPID (30, 27), CMN_CONFIG_BYNODEID
// (bit 31) and CMN_CONFIG_NODEID (47, 32) as "config:%d-%d\n" ("config:%d\n" for one bit);
// arm_cmn_event_show writes "type=0x%x,eventid=0x%x\n", and enum cmn_node_type makes HN-F type 5:
// CMN_EVENT_HNF(CMN_ANY, mc_reqs, 0x0d) is hnf_mc_reqs "type=0x5,eventid=0xd", shown only on a
// mesh with HN-F nodes (arm_cmn_event_attr_is_visible), and counted over all of them when no
// nodeid is given (arm_cmn_event_init). identifier is "%03x%02x" of part and revision.
inline constexpr std::uint64_t kCmnTypeHnf = 0x5, kCmnEventMcReqs = 0x0d;
inline constexpr unsigned kCmnEventIdShift = 16;  // CMN_CONFIG_EVENTID's low bit
inline constexpr std::uint64_t kBytesPerCacheLine = 64;

inline void write_arm_cmn(const TempDir& root, unsigned index, unsigned type,
                          const std::string& cpumask, bool home_nodes) {
  const std::string pmu = "arm_cmn_" + std::to_string(index);
  write_pmu(root, pmu,
            {{"type", std::to_string(type) + "\n"},
             {"cpumask", cpumask + "\n"},
             {"identifier", "43400\n"},  // CMN-600 (PART_CMN600 0x434) r1p0
             {"format/type", "config:0-15\n"},
             {"format/eventid", "config:16-26\n"},
             {"format/occupid", "config:27-30\n"},
             {"format/bynodeid", "config:31\n"},
             {"format/nodeid", "config:32-47\n"},
             {"format/wp_val", "config1:0-63\n"},
             {"format/wp_mask", "config2:0-63\n"},
             {"events/dtc_cycles", "type=0x3\n"}});
  if (!home_nodes) return;
  write_pmu(root, pmu,
            {{"events/hnf_cache_miss", "type=0x5,eventid=0x1\n"},
             {"events/hnf_mc_retries", "type=0x5,eventid=0xc\n"},
             {"events/hnf_mc_reqs", "type=0x5,eventid=0xd\n"}});
}

// Arm DMC-620 memory controllers (torvalds/linux 0604aa87, drivers/perf/arm_dmc620_pmu.c):
// dmc620_pmu_device_probe names each "%s_%llx" of DMC620_PMUNAME "arm_dmc620" and its physical
// address >> DMC620_PA_SHIFT (12); dmc620_pmu_events_attrs lists clkdiv2_rdwr as event 0x12,
// clkdiv2 1, written "event=0x%x,clkdiv2=0x%x\n" (dmc620_pmu_event_show); GEN_PMU_FORMAT_ATTR
// writes mask config:0-44, match config1:0-44, invert config2:0, incr config2:1-2, event
// config2:3-8 and clkdiv2 config2:9, a one-bit field with a "\n" of its own before
// PMU_FORMAT_ATTR's (so "config2:9\n\n"). That kernel has no cpumask; later ones write
// cpumask_of(irq->cpu) (dmc620_pmu_cpumask_show), the CPU that requested the interrupt
// (__dmc620_pmu_get_irq: raw_smp_processor_id()), whatever socket the channel is on.
inline constexpr std::uint64_t kDmcEventRdwr = 0x12;
inline constexpr unsigned kDmcEventShift = 3, kDmcClkdiv2Bit = 9;  // in config2

inline void write_arm_dmc620(const TempDir& root, const std::string& address, unsigned type,
                             const std::string& cpumask) {
  const std::string pmu = "arm_dmc620_" + address;
  write_pmu(root, pmu,
            {{"type", std::to_string(type) + "\n"},
             {"format/mask", "config:0-44\n"},
             {"format/match", "config1:0-44\n"},
             {"format/invert", "config2:0\n\n"},
             {"format/incr", "config2:1-2\n"},
             {"format/event", "config2:3-8\n"},
             {"format/clkdiv2", "config2:9\n\n"},
             {"events/clkdiv2_cycle_count", "event=0x0,clkdiv2=0x1\n"},
             {"events/clkdiv2_activate", "event=0x11,clkdiv2=0x1\n"},
             {"events/clkdiv2_rdwr", "event=0x12,clkdiv2=0x1\n"},
             {"events/clk_cycle_count", "event=0x0,clkdiv2=0x0\n"}});
  if (!cpumask.empty()) write_pmu(root, pmu, {{"cpumask", cpumask + "\n"}});
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
