// The PAPI counter source: how counters get bound to CPUs, and who owns them.
//
// PAPI has two ways to count an event system-wide (every process) on one CPU, and each one
// fails somewhere this exporter has to run:
//
//  cpu_attach  The documented way (PAPI's ctests/attach_cpu_sys_validate.c): an event set with
//              PAPI_GRN_SYS, PAPI_CPU_ATTACH and an explicit PAPI_DOMAIN. It takes presets and
//              native events alike, and because PAPI_start tracks running CPU-attached sets per
//              CPU (CpuInfo->running_eventset) rather than per thread, one thread can own and run
//              one attached set on every CPU. But PAPI_set_opt(PAPI_CPU_ATTACH), and likewise
//              PAPI_DOMAIN, first opens a *hardware* event on the CPU as a probe: without a
//              hardware PMU (most VMs, this project's CI) they fail with PAPI_ENOEVNT, even for
//              perf's software events.
//
//  qualifier   An event set with PAPI_GRN_SYS, not attached, whose events carry libpfm4's cpu=N
//              qualifier, plus u=/k= for the domain (PAPI_DOMAIN probes hardware too): that is
//              perf_event_open(pid=-1, cpu=N), with no hardware probe. But PAPI runs one
//              non-attached set per thread (thread->running_eventset, else PAPI_EISRUN), and one
//              set cannot mix cpu= values (PAPI_EINVAL), so every such set needs a thread of its
//              own. Presets take no qualifiers: a preset is bound through its single native
//              event when PAPI defines it by one (PAPI_TOT_INS -> INST_RETIRED:ANY_P).
//
// attach: auto (the default) uses cpu_attach on each CPU where PAPI_CPU_ATTACH works and falls
// back to qualifier on a CPU where it fails with PAPI_ENOEVNT; cpu_attach and qualifier force one.
//
// Event sets are owned by OwnerThreads: one for all the attached sets, one per qualifier set. An
// owner registers with PAPI, builds and starts its sets, then sleeps until the source is destroyed;
// then it stops, cleans up and destroys them and unregisters. The source tells every owner to stop
// before joining any, so hundreds of owners tear down in parallel and a SIGTERM exit stays fast
// on a large machine. Owners exist only because PAPI ties
// sets to threads. A read does not go through them: PAPI_read finds a set by handle and uses its
// owner's (or CPU's) context, from any thread, so a scrape is one lock (the collector's) and one
// PAPI_read per event set. Only restarting a set that failed to read (restart()) hands work to its
// owner, since PAPI tracks which set runs per thread (see qualifier above).
//
// More events than counters: when adding an event fails with PAPI_ECNFLCT or PAPI_ECOUNT, the
// event is counted through the perf backend instead (collectors/perf: one system-wide descriptor
// per event on that CPU, read with its enabled and running times), in a "perf" set of that CPU.
// The kernel multiplexes those descriptors, and each read interval is scaled by its own running
// share: PAPI's multiplexing scales the whole count by the lifetime share, which biases the rate
// whenever the share changes (a profiler comes and goes) and overflows its signed 64-bit
// arithmetic on long runs (_pe_read_multiplexed in PAPI's perf_event.c). Only a preset PAPI
// derives from several native events cannot be one perf counter: for it the set is switched to
// PAPI's multiplexing with PAPI_set_multiplex and the add retried. Where that fails too
// (PAPI_set_multiplex probes hardware like CPU_ATTACH) the event moves to a further event set.
// Further sets are always qualifier sets, since PAPI runs only one attached set per CPU, so a
// preset derived from several native events that does not fit is dropped rather than moved.
//
// Library-wide state is one Library (papi_library.h), shared by every source, so it outlives
// every event set; the owners are in papi_owner.h, the set owner in papi_event_set.h, and what
// PAPI says of each event and the building of one set in papi_set_building.h.
#include "collectors/papi/papi_source.h"

#include <papi.h>

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <utility>

#include "collectors/papi/papi_event_set.h"
#include "collectors/events/vocabulary.h"
#include "collectors/papi/papi_library.h"
#include "collectors/papi/papi_owner.h"
#include "collectors/papi/papi_placement.h"
#include "collectors/papi/papi_set_building.h"
#include "collectors/papi/papi_remedies.h"
#include "collectors/perf/counter_set.h"
#include "collectors/perf/perf_event.h"
#include "collectors/perf/pfm_encoder.h"
#include "common/cpu_list.h"
#include "common/text.h"

namespace hwperf::papi {
namespace {

class PapiSource final : public CounterSource {
 public:
  PapiSource(std::shared_ptr<Library> library, const OpenRequest& request)
      : library_(std::move(library)) {
    if (!library_->fast_read_note().empty()) layout_.notes.push_back(library_->fast_read_note());
    if (!library_->multiplex_problem().empty() && request.multiplex) {
      layout_.notes.push_back(library_->multiplex_problem() +
                              "; events that do not fit the counters move to further (qualifier) "
                              "event sets instead, and derived presets among them are dropped");
    }
    request_ = request;
    plans_ = plan_events(request);
    const auto& plans = plans_;
    for (unsigned cpu : request.cpus) open_cpu(cpu, plans, request);
    summarise_notes(request);
    // An attach owner whose every attach failed (no PMU) holds nothing; let it go.
    if (attach_owner_ != nullptr && attached_sets_ == 0) {
      owners_.remove(attach_owner_);
      attach_owner_ = nullptr;
    }
    std::size_t widest = 0;
    for (const auto& set : reads_) widest = std::max(widest, set.counters.size());
    buffer_.assign(widest, 0);
  }

  const SourceLayout& layout() const override { return layout_; }

  void read(std::vector<std::int64_t>& values, std::vector<std::string>& failures) override {
    for (std::size_t s = 0; s < reads_.size(); ++s) {
      ReadSet& set = reads_[s];
      if (set.perf_backed) {
        read_perf_set(set, values, failures[s]);
        continue;
      }
      if (set.handle == PAPI_NULL) {
        failures[s] = "the event set could not be built again";
        continue;
      }
      if (const int rc = PAPI_read(set.handle, buffer_.data()); rc != PAPI_OK) {
        failures[s] = "PAPI_read failed: " + error_text(rc);
        continue;
      }
      failures[s].clear();
      for (std::size_t k = 0; k < set.counters.size(); ++k) {
        values[set.counters[k]] = static_cast<std::int64_t>(buffer_[k]);
      }
    }
  }

  std::string reset(std::size_t set) override {
    if (reads_.at(set).perf_backed) {
      // Totals kept by the counter set, in 64 bits, never scaled by a lifetime share: zeroing
      // them is all.
      reads_[set].perf->zero(0);
      return {};
    }
    const int rc = PAPI_reset(reads_.at(set).handle);
    return rc == PAPI_OK ? std::string() : "PAPI_reset failed: " + error_text(rc);
  }

  // Destroys the set and builds it again with the same events in the same order, through the
  // same fill_set() as at startup, so that it gets new perf_event descriptors: the kernel never
  // re-adds the events of a CPU that went offline and came back (kernel/events/core.c,
  // perf_event_exit_cpu_context removes them), and stopping and starting a set cannot bring
  // back a group the kernel put in ERROR state. PAPI_stop reads first and, when that read
  // fails, leaves the set running (papi.c); such a set cannot be destroyed, and PAPI then
  // refuses to start another non-attached set on its thread (PAPI_EISRUN), so the new one is
  // built on a fresh owner thread, and the stuck set's descriptors stay with the old owner.
  std::string rebuild(std::size_t set) override {
    ReadSet& read = reads_.at(set);
    if (read.perf_backed) return reopen_perf_set(read);
    std::vector<const EventPlan*> todo;
    for (std::size_t counter : read.counters)
      todo.push_back(&plans_.at(layout_.counters[counter].event));
    const auto build_on = [&](OwnerThread& owner) {
      return owner.run([&] {
        auto& sets = owner.sets();
        for (auto it = sets.begin(); it != sets.end(); ++it) {
          if (it->handle() == read.handle) {
            sets.erase(it);
            break;
          }
        }
        return fill_set(owner, read.binding, read.cpu, read.component, todo, request_);
      });
    };
    const auto complete = [&](const FillResult& result) {
      return result.setup_error == PAPI_OK && result.placed.size() == todo.size() &&
             result.failed.empty() && result.overflow.empty() && result.handle != PAPI_NULL;
    };
    const auto discard = [](OwnerThread& owner, int handle) {
      owner.run([&owner, handle] {
        auto& sets = owner.sets();
        for (auto it = sets.begin(); it != sets.end(); ++it) {
          if (it->handle() == handle) {
            sets.erase(it);
            break;
          }
        }
        return 0;
      });
    };
    FillResult result = build_on(*read.owner);
    read.handle = PAPI_NULL;
    if (!complete(result) && read.binding == Binding::qualifier) {
      if (result.handle != PAPI_NULL) discard(*read.owner, result.handle);
      auto fresh = std::make_unique<OwnerThread>();
      result = build_on(*fresh);
      read.owner = &owners_.add(std::move(fresh));
    }
    if (!complete(result)) {
      if (result.handle != PAPI_NULL) discard(*read.owner, result.handle);
      const int code = result.setup_error != PAPI_OK ? result.setup_error
                       : !result.failed.empty()      ? result.failed.front().code
                                                     : PAPI_ECNFLCT;
      return (result.setup_error != PAPI_OK ? result.setup_step
                                            : std::string("adding its events")) +
             " failed: " + error_text(code);
    }
    read.handle = result.handle;
    return std::string();
  }

 private:
  struct ReadSet {
    int handle = PAPI_NULL;        // PAPI_NULL after a rebuild that failed
    OwnerThread* owner = nullptr;  // the thread the set belongs to (kept alive by owners_)
    unsigned cpu = 0;
    unsigned index = 0;
    Binding binding = Binding::qualifier;
    int component = 0;
    std::vector<std::size_t> counters;  // PAPI's value k is layout counter counters[k]
    // A set of the perf backend: each event a unit of its own on the set's CPU, system-wide;
    // counter k is unit perf_units[k] (an event that could not be opened has no counter).
    bool perf_backed = false;
    std::unique_ptr<perf::CounterSet> perf;
    perf::CounterSet::Member member = 0;
    std::vector<std::size_t> perf_units;
  };

  static void read_perf_set(ReadSet& set, std::vector<std::int64_t>& values, std::string& failure) {
    const perf::CounterTotals totals = set.perf->read();
    // The set's values change together or not at all.
    for (const std::size_t unit : set.perf_units) {
      if (totals.errors[unit] == 0) continue;
      failure = "read of perf counter " + set.perf->layout().units[unit].front().name + ": " +
                errno_text(totals.errors[unit]);
      return;
    }
    failure.clear();
    constexpr auto kMax = static_cast<std::uint64_t>(INT64_MAX);
    for (std::size_t k = 0; k < set.perf_units.size(); ++k) {
      values[set.counters[k]] =
          static_cast<std::int64_t>(std::min(totals.counts[set.perf_units[k]], kMax));
    }
  }

  // New descriptors for a perf set (its CPU came back, or a read failed); counts start again.
  static std::string reopen_perf_set(ReadSet& set) {
    const auto failure = set.perf->reopen(set.member, perf::CountingTarget::every_task(), {0});
    if (failure.error != 0) {
      return "perf_event_open(" + set.perf->layout().units[failure.unit].front().name + ", cpu " +
             std::to_string(set.cpu) + "): " + errno_text(failure.error);
    }
    set.perf->zero(0);
    return {};
  }

  // The events of `cpu` beyond the counters of its PAPI set, as one perf set; those the perf
  // backend cannot open are dropped with the reason.
  void record_perf_set(unsigned cpu, unsigned index, const std::vector<std::size_t>& events,
                       const OpenRequest& request) {
    auto layout = std::make_shared<perf::CounterLayout>();
    layout->cpus = {static_cast<int>(cpu)};
    std::vector<std::string> not_encodable(events.size());  // why, per event; "" when encoded
    for (std::size_t k = 0; k < events.size(); ++k) {
      try {
        perf::EventEncoding encoding =
            perf::encode_event(plans_.at(events[k]).native, request.domain);
        encoding.name = plans_.at(events[k]).name;
        layout->units.push_back({std::move(encoding)});
      } catch (const std::exception& e) {
        not_encodable[k] = e.what();
      }
    }
    ReadSet read;
    read.perf_backed = true;
    read.cpu = cpu;
    read.index = index;
    read.perf = std::make_unique<perf::CounterSet>(std::move(layout));
    const auto opening = read.perf->open({perf::CountingTarget::every_task()}, {}, true);
    read.member = opening.member;
    EventSetInfo info;
    info.cpu = cpu;
    info.index = index;
    info.binding = "perf";
    info.multiplexed = true;
    for (std::size_t k = 0, unit = 0; k < events.size(); ++k) {
      if (!not_encodable[k].empty()) {
        drop(events[k], cpu, "not encodable by libpfm4", not_encodable[k]);
        continue;
      }
      if (!opening.refused.empty() && opening.refused[unit] != 0) {
        drop(events[k], cpu, errno_text(opening.refused[unit++]),
             "the perf backend could not open it where PAPI had no counter left for it");
        continue;
      }
      const std::size_t layout_counter = layout_.counters.size();
      layout_.counters.push_back({events[k], cpu});
      info.counters.push_back(layout_counter);
      read.counters.push_back(layout_counter);
      read.perf_units.push_back(unit++);
    }
    if (read.perf_units.empty()) return;
    layout_.event_sets.push_back(std::move(info));
    reads_.push_back(std::move(read));
  }

  void drop(std::size_t event, unsigned cpu, std::string reason, std::string remedy) {
    layout_.dropped.push_back({event, cpu, std::move(reason), std::move(remedy)});
  }

  OwnerThread& attach_owner() {
    if (attach_owner_ == nullptr) attach_owner_ = &owners_.add(std::make_unique<OwnerThread>());
    return *attach_owner_;
  }

  void open_cpu(unsigned cpu, const std::vector<EventPlan>& plans, const OpenRequest& request) {
    // Events of different PAPI components can never share an event set.
    std::map<int, std::vector<std::size_t>> by_component;
    for (const auto& plan : plans) {
      if (plan.unavailable != PAPI_OK) {
        drop(plan.index, cpu, plan.unavailable_reason, plan.unavailable_remedy);
      } else {
        by_component[plan.component].push_back(plan.index);
      }
    }
    unsigned next_index = 0;
    for (const auto& [component, events] : by_component) {
      const SetBuilder build = [&, component = component](Binding binding,
                                                          const std::vector<std::size_t>& pending) {
        std::vector<const EventPlan*> todo;
        for (std::size_t index : pending) todo.push_back(&plans[index]);
        std::unique_ptr<OwnerThread> fresh;
        OwnerThread* owner = nullptr;
        if (binding == Binding::cpu_attach) {
          owner = &attach_owner();
        } else {
          fresh = std::make_unique<OwnerThread>();
          owner = fresh.get();
        }
        const FillResult result =
            owner->run([&] { return fill_set(*owner, binding, cpu, component, todo, request); });
        if (!result.placed.empty()) {
          record_set(cpu, next_index++, binding, component, result, *owner);
          if (fresh) owners_.add(std::move(fresh));
        }
        if (!result.to_perf.empty()) record_perf_set(cpu, next_index++, result.to_perf, request);
        return outcome_of(cpu, binding, result, plans, request);
      };
      const Placement placement =
          place_events(cpu, events, request.attach, build, error_text(PAPI_ECNFLCT),
                       remedy_for(PAPI_ECNFLCT, request.paths));
      for (const auto& drop : placement.dropped) layout_.dropped.push_back(drop);
      if (placement.attach_fell_back) {
        attach_fallback_cpus_.push_back(cpu);
        attach_fallback_error_ = placement.fallback_reason;
      }
    }
  }

  SetOutcome outcome_of(unsigned cpu, Binding binding, const FillResult& result,
                        const std::vector<EventPlan>& plans, const OpenRequest& request) {
    SetOutcome outcome;
    if (result.setup_error != PAPI_OK) {
      outcome.setup_failed = true;
      outcome.attach_unsupported =
          binding == Binding::cpu_attach && result.setup_error == PAPI_ENOEVNT;
      outcome.setup_reason = error_text(result.setup_error);
      // No CPU number here: drops are grouped by reason and remedy, and the CPUs listed once.
      outcome.setup_remedy =
          result.setup_step + " failed: " + remedy_for(result.setup_error, request.paths);
      if (outcome.attach_unsupported && request.attach == PapiAttachMode::cpu_attach) {
        outcome.setup_remedy +=
            "; this machine cannot attach counters to CPUs (attach: auto or "
            "qualifier counts software events without a hardware PMU)";
      }
      return outcome;
    }
    outcome.placed = result.placed;
    outcome.overflow = result.overflow;
    for (const auto& failure : result.failed) {
      outcome.dropped.push_back(
          {failure.event, cpu, error_text(failure.code), remedy_for(failure.code, request.paths)});
    }
    for (std::size_t index : result.not_qualifiable) {
      outcome.dropped.push_back({index, cpu, "Derived preset cannot be bound by qualifier",
                                 plans[index].no_qualifier_reason});
    }
    if (result.multiplex_error != PAPI_OK) {
      multiplex_failed_cpus_.push_back(cpu);
      multiplex_error_ = error_text(result.multiplex_error);
    }
    return outcome;
  }

  void record_set(unsigned cpu, unsigned index, Binding binding, int component,
                  const FillResult& result, OwnerThread& owner) {
    EventSetInfo info;
    info.cpu = cpu;
    info.index = index;
    info.binding = to_string(binding);
    info.multiplexed = result.multiplexed;
    if (binding == Binding::cpu_attach) ++attached_sets_;
    ReadSet read;
    read.handle = result.handle;
    read.owner = &owner;
    read.cpu = cpu;
    read.index = index;
    read.binding = binding;
    read.component = component;
    for (std::size_t event : result.placed) {
      const std::size_t counter = layout_.counters.size();
      layout_.counters.push_back({event, cpu});
      info.counters.push_back(counter);
      read.counters.push_back(counter);
    }
    layout_.event_sets.push_back(std::move(info));
    reads_.push_back(std::move(read));
  }

  static std::string cpu_list(std::vector<unsigned> cpus) {
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    return format_cpu_list(cpus);
  }

  void summarise_notes(const OpenRequest& request) {
    if (!attach_fallback_cpus_.empty()) {
      layout_.notes.push_back(
          "PAPI_CPU_ATTACH fails on CPUs " + cpu_list(attach_fallback_cpus_) + " (" +
          attach_fallback_error_ +
          ": PAPI probes a hardware counter first, and this machine has no usable hardware PMU); "
          "counting there through per-CPU event qualifiers (cpu=N) instead");
    }
    if (!multiplex_failed_cpus_.empty() && request.multiplex) {
      layout_.notes.push_back("PAPI could not multiplex event sets on CPUs " +
                              cpu_list(multiplex_failed_cpus_) + " (" + multiplex_error_ +
                              "); events beyond the counters moved to further (qualifier) event "
                              "sets, and derived presets among them were dropped");
    }
  }

  std::shared_ptr<Library> library_;  // first member: destroyed last
  Owners owners_;                     // tear their sets down (in parallel) before library_
  OwnerThread* attach_owner_ = nullptr;
  unsigned attached_sets_ = 0;
  SourceLayout layout_;
  std::vector<ReadSet> reads_;
  OpenRequest request_;  // what the sets were built from, to build one again
  std::vector<EventPlan> plans_;
  std::vector<long long> buffer_;  // PAPI_read's output, reused (reads are serialised)
  std::vector<unsigned> attach_fallback_cpus_;
  std::string attach_fallback_error_;
  std::vector<unsigned> multiplex_failed_cpus_;
  std::string multiplex_error_;
};

}  // namespace

std::unique_ptr<CounterSource> open_papi_source(const OpenRequest& request) {
  return std::make_unique<PapiSource>(Library::instance(request.paths.procfs), request);
}

}  // namespace hwperf::papi
