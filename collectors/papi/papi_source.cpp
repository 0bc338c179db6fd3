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
// sets to threads. A scrape never talks to them: PAPI_read finds a set by handle and uses its
// owner's (or CPU's) context, from any thread, so a scrape is one lock (the collector's) and one
// PAPI_read per event set.
//
// More events than counters: when adding an event fails with PAPI_ECNFLCT or PAPI_ECOUNT, the set
// is switched to (kernel) multiplexing with PAPI_set_multiplex and the add retried; PAPI then
// scales the counts. Where that fails too (PAPI_set_multiplex probes hardware like CPU_ATTACH) the
// event moves to a further event set on the same CPU. Further sets are always qualifier sets,
// since PAPI runs only one attached set per CPU, so a preset derived from several native events
// that does not fit is dropped rather than moved.
//
// Library-wide state (PAPI_library_init, PAPI_thread_init, PAPI_multiplex_init) is one Library,
// created once per process and shared by every source, so it outlives every event set. It is
// never re-created: PAPI 7.0.0 crashes in PAPI_library_init after a PAPI_shutdown.
#include "collectors/papi/papi_source.h"

#include <link.h>
#include <papi.h>
#include <pthread.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

#include "collectors/papi/papi_diagnosis.h"
#include "collectors/papi/papi_events.h"
#include "collectors/papi/papi_placement.h"
#include "common/cpu_list.h"

namespace hwperf::papi {
namespace {

std::string error_text(int code) {
  const char* text = PAPI_strerror(code);
  return text != nullptr ? std::string(text) : "PAPI error " + std::to_string(code);
}

unsigned long current_thread_id() { return static_cast<unsigned long>(pthread_self()); }

// kernel.perf_event_paranoid under the configured procfs root (--path.procfs), which in a
// container is where the host's /proc is mounted.
std::string read_paranoid(const std::string& procfs) {
  const std::string path = procfs + "/sys/kernel/perf_event_paranoid";
  std::ifstream file(path);
  std::string value;
  if (!(file >> value)) return "unknown (cannot read " + path + ")";
  return value;
}

// The libpfm4 this process loaded (through libpapi), which LD_LIBRARY_PATH or a second install
// may make another than the one the package manager shows.
std::string loaded_libpfm_path() {
  std::string path;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        const std::string name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (name.find("libpfm.so") == std::string::npos) return 0;
        *static_cast<std::string*>(out) = name;
        return 1;
      },
      &path);
  std::error_code error;
  const auto resolved = std::filesystem::canonical(path, error);
  return error ? path : resolved.string();
}

std::string version_text(int version) {
  return std::to_string(PAPI_VERSION_MAJOR(version)) + "." +
         std::to_string(PAPI_VERSION_MINOR(version)) + "." +
         std::to_string(PAPI_VERSION_REVISION(version)) + "." +
         std::to_string(PAPI_VERSION_INCREMENT(version));
}

// What the user can do about an error from adding or starting an event on a CPU.
std::string remedy_for(int code, const PathsConfig& paths) {
  switch (code) {
    case PAPI_EPERM:
      return permission_remedy(paths.procfs);
    case PAPI_ENOEVNT:
      return "PAPI knows this event but the kernel cannot count it on this CPU (no hardware PMU, "
             "as in a VM without PMU passthrough, or not on this CPU model); papi_avail -a and "
             "papi_native_avail on this host list what can be counted";
    case PAPI_ECNFLCT:
    case PAPI_ECOUNT:
      return "not enough free hardware counters and PAPI could not multiplex them: count fewer "
             "events, keep collectors.papi.multiplex: true, or free counters (sysctl "
             "kernel.nmi_watchdog=0; stop other perf users)";
    case PAPI_ESYS:
    case PAPI_EINVAL:
      return "check that the CPU is online (" + paths.sysfs +
             "/devices/system/cpu/cpuN/online) and that the event's qualifiers are valid "
             "(papi_native_avail -e EVENT)";
    case PAPI_ECMP:
    case PAPI_ENOSUPP:
      return "the PAPI component of this event cannot count it system-wide per CPU";
    default:
      return "see papi_avail and papi_native_avail for what this host can count";
  }
}

// Library-wide PAPI state; see the top of this file for why it is created only once. The first
// use initialises it (or records why it could not be); later uses get the same answer.
class Library {
 public:
  // Throws UnavailableError with the cause and the remedy; kernel.perf_event_paranoid is read
  // under `procfs` for the remedy when permissions are the cause.
  static std::shared_ptr<Library> instance(const std::string& procfs) {
    const State& state = shared_state();
    if (state.library) return state.library;
    if (state.component) {
      ComponentReport report = *state.component;
      report.paranoid = read_paranoid(procfs);
      Unavailable unavailable = diagnose_component(report);
      throw UnavailableError(std::move(unavailable.reason), unavailable.message);
    }
    throw UnavailableError(state.failure_reason, state.failure);
  }

  // The library once instance() has succeeded; nullptr before or when it failed.
  static std::shared_ptr<Library> existing() { return shared_state().library; }

  // PAPI_get_opt(PAPI_LIB_VERSION) of the libpapi this process runs with; 0 if
  // PAPI_library_init failed.
  static int runtime_version() { return shared_state().version; }

  ~Library() { PAPI_shutdown(); }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  const std::string& multiplex_problem() const { return multiplex_problem_; }

 private:
  struct State {
    std::shared_ptr<Library> library;
    std::optional<ComponentReport> component;  // why there is no library, when perf_event is off
    std::string failure_reason;                // else why there is no library
    std::string failure;
    int version = 0;
  };

  explicit Library(std::string multiplex_problem)
      : multiplex_problem_(std::move(multiplex_problem)) {}

  // A function-local static: initialised exactly once, thread-safely, on first use.
  static const State& shared_state() {
    static const State state = initialise();
    return state;
  }

  static State initialise() {
    State state;
    const int version = PAPI_library_init(PAPI_VER_CURRENT);
    if (version != PAPI_VER_CURRENT) {
      state.failure_reason = "init_failed";
      state.failure =
          "papi: PAPI_library_init failed: " +
          (version < 0 ? error_text(version)
                       : "the PAPI library is version " + std::to_string(version) +
                             ", this exporter was built for " + std::to_string(PAPI_VER_CURRENT)) +
          "; check the libpapi installation (papi_component_avail)";
      return state;
    }
    state.version = PAPI_get_opt(PAPI_LIB_VERSION, nullptr);
    // Before any owner thread or HTTP worker exists: PAPI must know how to tell threads apart.
    if (const int rc = PAPI_thread_init(current_thread_id); rc != PAPI_OK) {
      state.failure_reason = "init_failed";
      state.failure = "papi: PAPI_thread_init failed: " + error_text(rc);
      return state;
    }
    std::string multiplex_problem;
    if (const int rc = PAPI_multiplex_init(); rc != PAPI_OK) {
      multiplex_problem = "PAPI_multiplex_init failed: " + error_text(rc);
    }
    // Without its perf_event component PAPI knows no CPU events at all, and every event would
    // look "unknown"; say what is really wrong instead.
    const int cidx = PAPI_get_component_index("perf_event");
    const PAPI_component_info_t* info = cidx < 0 ? nullptr : PAPI_get_component_info(cidx);
    if (info == nullptr) {
      state.failure_reason = "no_perf_event_component";
      state.failure =
          "papi: this PAPI has no perf_event component, so it cannot count CPU events; "
          "install a PAPI built with it (Debian's libpapi7.0 is)";
      return state;
    }
    if (info->disabled != 0) {
      ComponentReport report;
      report.disabled_reason = info->disabled_reason;
      report.libpfm_path = loaded_libpfm_path();
      report.papi_version = version_text(state.version);
      // The hardware description comes from PAPI's OS layer, which works without perf_event.
      if (const PAPI_hw_info_t* hw = PAPI_get_hardware_info(); hw != nullptr) {
        report.cpu_vendor = hw->vendor_string;
        report.cpu_model_name = hw->model_string;
        report.cpu_family = hw->cpuid_family;
        report.cpu_model = hw->cpuid_model;
      }
      if (const char* forced = std::getenv("LIBPFM_FORCE_PMU"); forced != nullptr) {
        report.forced_pmu = forced;
      }
      state.component = std::move(report);
      return state;
    }
    state.library.reset(new Library(std::move(multiplex_problem)));
    return state;
  }

  std::string multiplex_problem_;
};

// One PAPI event set: created with its component and PAPI_GRN_SYS, torn down in the order PAPI
// requires (stop, clean up, destroy). Move-only; a moved-from set holds PAPI_NULL.
class EventSet {
 public:
  EventSet() noexcept = default;
  EventSet(EventSet&& other) noexcept
      : handle_(std::exchange(other.handle_, PAPI_NULL)),
        running_(std::exchange(other.running_, false)) {}
  EventSet& operator=(EventSet&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, PAPI_NULL);
      running_ = std::exchange(other.running_, false);
    }
    return *this;
  }
  EventSet(const EventSet&) = delete;
  EventSet& operator=(const EventSet&) = delete;
  ~EventSet() { reset(); }

  // Returns PAPI_OK or the error of the step that failed, naming it in `step`.
  int create(int component, const char*& step) noexcept {
    reset();
    step = "PAPI_create_eventset";
    if (const int rc = PAPI_create_eventset(&handle_); rc != PAPI_OK) {
      handle_ = PAPI_NULL;
      return rc;
    }
    step = "PAPI_assign_eventset_component";
    if (const int rc = PAPI_assign_eventset_component(handle_, component); rc != PAPI_OK) {
      return rc;
    }
    PAPI_option_t option{};
    option.granularity.eventset = handle_;
    option.granularity.granularity = PAPI_GRN_SYS;
    step = "PAPI_set_opt(PAPI_GRANUL, PAPI_GRN_SYS)";
    return PAPI_set_opt(PAPI_GRANUL, &option);
  }

  int attach_cpu(unsigned cpu) noexcept {
    PAPI_option_t option{};
    option.cpu.eventset = handle_;
    option.cpu.cpu_num = cpu;
    return PAPI_set_opt(PAPI_CPU_ATTACH, &option);
  }

  int set_domain(CountingDomain domain) noexcept {
    PAPI_option_t option{};
    option.domain.eventset = handle_;
    switch (domain) {
      case CountingDomain::user:
        option.domain.domain = PAPI_DOM_USER;
        break;
      case CountingDomain::kernel:
        option.domain.domain = PAPI_DOM_KERNEL;
        break;
      case CountingDomain::all:
        option.domain.domain = PAPI_DOM_USER | PAPI_DOM_KERNEL;
        break;
    }
    return PAPI_set_opt(PAPI_DOMAIN, &option);
  }

  int add(const std::string& name) noexcept { return PAPI_add_named_event(handle_, name.c_str()); }
  int multiplex() noexcept { return PAPI_set_multiplex(handle_); }

  int start() noexcept {
    const int rc = PAPI_start(handle_);
    running_ = rc == PAPI_OK;
    return rc;
  }

  int handle() const noexcept { return handle_; }

  void reset() noexcept {
    if (handle_ == PAPI_NULL) return;
    if (running_) PAPI_stop(handle_, nullptr);  // the final counts are not wanted
    running_ = false;
    PAPI_cleanup_eventset(handle_);
    PAPI_destroy_eventset(&handle_);
    handle_ = PAPI_NULL;
  }

 private:
  int handle_ = PAPI_NULL;
  bool running_ = false;
};

// A thread that owns event sets for PAPI's sake (see the top of this file). Work reaches it only
// through run(), at startup; once told to stop it tears its sets down itself, newest first.
class OwnerThread {
 public:
  OwnerThread() : thread_([this] { loop(); }) {}
  ~OwnerThread() {
    request_stop();
    thread_.join();
  }
  OwnerThread(const OwnerThread&) = delete;
  OwnerThread& operator=(const OwnerThread&) = delete;

  // Tells the thread to tear its sets down and end, without waiting for it (the destructor
  // waits). Lets many owners tear down at once: see Owners.
  void request_stop() noexcept {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
  }

  // Runs fn on the owner thread and returns its result (or rethrows its exception).
  template <typename F>
  auto run(F fn) -> decltype(fn()) {
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto result = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.emplace_back([&task] { task(); });
    }
    wake_.notify_all();
    return result.get();
  }

  // Only to be used inside run().
  std::vector<EventSet>& sets() { return sets_; }
  int registration() const { return registration_; }

 private:
  void loop() {
    registration_ = PAPI_register_thread();
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) break;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
    while (!sets_.empty()) sets_.pop_back();  // EventSet::reset: stop, clean up, destroy
    if (registration_ == PAPI_OK) PAPI_unregister_thread();
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;  // guarded by mutex_
  bool stopping_ = false;                    // guarded by mutex_
  std::vector<EventSet> sets_;               // touched only on the owner thread
  int registration_ = PAPI_OK;               // written by the owner before any task runs
  std::thread thread_;                       // last: starts once the members above exist
};

// All the owner threads of a source. A large machine has hundreds of qualifier sets, each with its
// own owner; stopping and joining them one at a time would add up every teardown (PAPI_stop,
// closing the perf_event descriptors, PAPI_unregister_thread) and delay a SIGTERM exit by
// seconds. So every owner is told to stop first, then all are joined: they tear down in parallel,
// each on its own thread as PAPI requires.
class Owners {
 public:
  Owners() = default;
  Owners(const Owners&) = delete;
  Owners& operator=(const Owners&) = delete;
  ~Owners() { clear(); }

  OwnerThread& add(std::unique_ptr<OwnerThread> owner) {
    list_.push_back(std::move(owner));
    return *list_.back();
  }

  // Stops and joins one owner (one whose sets all failed).
  void remove(const OwnerThread* owner) {
    list_.erase(std::find_if(list_.begin(), list_.end(),
                             [owner](const auto& entry) { return entry.get() == owner; }));
  }

  void clear() noexcept {
    for (const auto& owner : list_) owner->request_stop();
    list_.clear();  // each destructor joins an owner that is already tearing down
  }

 private:
  std::vector<std::unique_ptr<OwnerThread>> list_;
};

// What PAPI says about one configured event, looked up once for all CPUs.
struct EventPlan {
  std::size_t index = 0;  // into OpenRequest::events
  std::string name;       // as configured
  int component = -1;
  std::string native;         // what the qualifier binding adds: the native event name
  int unavailable = PAPI_OK;  // an error that holds on every CPU
  std::string unavailable_reason;
  std::string unavailable_remedy;
  std::string no_qualifier_reason;  // why the qualifier binding cannot take it ("" = it can)
};

struct Failure {
  std::size_t event = 0;
  int code = PAPI_OK;
};

struct FillResult {
  int setup_error = PAPI_OK;  // creating or binding the set failed; nothing was added
  std::string setup_step;
  std::vector<std::size_t> placed;    // events counting in the started set, in PAPI's order
  std::vector<std::size_t> overflow;  // events that did not fit and go to a further set
  std::vector<Failure> failed;
  std::vector<std::size_t> not_qualifiable;
  bool multiplexed = false;
  int multiplex_error = PAPI_OK;
  int handle = PAPI_NULL;
};

// Runs on the owner thread: builds one event set on `cpu` for as many of `pending` as fit, and
// starts it. The set joins the owner's sets only if it started.
FillResult fill_set(OwnerThread& owner, Binding binding, unsigned cpu, int component,
                    const std::vector<const EventPlan*>& pending, const OpenRequest& request) {
  FillResult result;
  if (owner.registration() != PAPI_OK) {
    result.setup_error = owner.registration();
    result.setup_step = "PAPI_register_thread";
    return result;
  }
  EventSet set;
  const char* step = "";
  if (const int rc = set.create(component, step); rc != PAPI_OK) {
    result.setup_error = rc;
    result.setup_step = step;
    return result;
  }
  if (binding == Binding::cpu_attach) {
    if (const int rc = set.attach_cpu(cpu); rc != PAPI_OK) {
      result.setup_error = rc;
      result.setup_step = "PAPI_set_opt(PAPI_CPU_ATTACH)";
      return result;
    }
    // PAPI's default domain is user only; system-wide counting means both unless configured.
    if (const int rc = set.set_domain(request.domain); rc != PAPI_OK) {
      result.setup_error = rc;
      result.setup_step = "PAPI_set_opt(PAPI_DOMAIN)";
      return result;
    }
  }
  for (const EventPlan* event : pending) {
    std::string name = event->name;
    if (binding == Binding::qualifier) {
      if (!event->no_qualifier_reason.empty()) {
        result.not_qualifiable.push_back(event->index);
        continue;
      }
      name = cpu_qualified_name(event->native, cpu, request.domain);
    }
    int rc = set.add(name);
    if ((rc == PAPI_ECNFLCT || rc == PAPI_ECOUNT) && request.multiplex && !result.multiplexed &&
        result.multiplex_error == PAPI_OK) {
      const int mrc = set.multiplex();
      if (mrc == PAPI_OK) {
        result.multiplexed = true;
        rc = set.add(name);
      } else {
        result.multiplex_error = mrc;
      }
    }
    if (rc == PAPI_OK) {
      result.placed.push_back(event->index);
    } else if (rc == PAPI_ECNFLCT || rc == PAPI_ECOUNT) {
      result.overflow.push_back(event->index);
    } else {
      result.failed.push_back({event->index, rc});
    }
  }
  if (result.placed.empty()) return result;
  if (const int rc = set.start(); rc != PAPI_OK) {
    for (std::size_t index : result.placed) result.failed.push_back({index, rc});
    result.placed.clear();
    return result;
  }
  result.handle = set.handle();
  owner.sets().push_back(std::move(set));
  return result;
}

class PapiSource final : public CounterSource {
 public:
  PapiSource(std::shared_ptr<Library> library, const OpenRequest& request)
      : library_(std::move(library)) {
    if (!library_->multiplex_problem().empty() && request.multiplex) {
      layout_.notes.push_back(library_->multiplex_problem() +
                              "; events that do not fit the counters move to further (qualifier) "
                              "event sets instead, and derived presets among them are dropped");
    }
    const auto plans = plan_events(request);
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

  void read(std::vector<std::uint64_t>& values) override {
    for (const auto& set : reads_) {
      if (const int rc = PAPI_read(set.handle, buffer_.data()); rc != PAPI_OK) {
        throw std::runtime_error("papi: PAPI_read of event set " + std::to_string(set.index) +
                                 " on CPU " + std::to_string(set.cpu) +
                                 " failed: " + error_text(rc));
      }
      for (std::size_t k = 0; k < set.counters.size(); ++k) {
        // PAPI returns long long; a negative count only comes from a broken scale factor.
        values[set.counters[k]] = buffer_[k] < 0 ? 0 : static_cast<std::uint64_t>(buffer_[k]);
      }
    }
  }

 private:
  struct ReadSet {
    int handle = PAPI_NULL;
    unsigned cpu = 0;
    unsigned index = 0;
    std::vector<std::size_t> counters;  // PAPI's value k is layout counter counters[k]
  };

  static std::vector<EventPlan> plan_events(const OpenRequest& request) {
    std::vector<EventPlan> plans;
    for (std::size_t i = 0; i < request.events.size(); ++i) {
      EventPlan plan;
      plan.index = i;
      plan.name = request.events[i];
      plan.native = plan.name;
      int code = 0;
      if (const int rc = PAPI_event_name_to_code(plan.name.c_str(), &code); rc != PAPI_OK) {
        plan.unavailable = rc;
        plan.unavailable_reason = error_text(rc);
        plan.unavailable_remedy =
            "PAPI does not know this event here; see papi_avail and "
            "papi_native_avail";
        plans.push_back(std::move(plan));
        continue;
      }
      plan.component = PAPI_get_event_component(code);
      if (is_preset(plan.name)) {
        PAPI_event_info_t info{};
        if (PAPI_get_event_info(code, &info) == PAPI_OK) {
          const std::string derived = info.derived;
          if (info.count == 0) {
            // papi_avail still lists such presets; PAPI just has no recipe for this CPU model.
            plan.unavailable = PAPI_ENOEVNT;
            plan.unavailable_reason = error_text(PAPI_ENOEVNT);
            plan.unavailable_remedy =
                "PAPI defines no native events for this preset on this CPU model (papi_avail -a "
                "lists the presets available here)";
          } else if (info.count == 1 && (derived.empty() || derived == "NOT_DERIVED")) {
            plan.native = info.name[0];
          } else {
            plan.no_qualifier_reason =
                plan.name + " is derived from " + std::to_string(info.count) + " native events (" +
                derived +
                "), and only single-event presets can be bound to a CPU by qualifier; count it "
                "where PAPI_CPU_ATTACH works, or list its native events instead";
          }
        }
      }
      plans.push_back(std::move(plan));
    }
    return plans;
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
          record_set(cpu, next_index++, binding, result);
          if (fresh) owners_.add(std::move(fresh));
        }
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
      outcome.setup_remedy = result.setup_step + " on CPU " + std::to_string(cpu) +
                             " failed: " + remedy_for(result.setup_error, request.paths);
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

  void record_set(unsigned cpu, unsigned index, Binding binding, const FillResult& result) {
    EventSetInfo info;
    info.cpu = cpu;
    info.index = index;
    info.binding = to_string(binding);
    info.multiplexed = result.multiplexed;
    if (binding == Binding::cpu_attach) ++attached_sets_;
    ReadSet read;
    read.handle = result.handle;
    read.cpu = cpu;
    read.index = index;
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
  std::vector<long long> buffer_;  // PAPI_read's output, reused (reads are serialised)
  std::vector<unsigned> attach_fallback_cpus_;
  std::string attach_fallback_error_;
  std::vector<unsigned> multiplex_failed_cpus_;
  std::string multiplex_error_;
};

}  // namespace

void init_library(const std::string& procfs) { Library::instance(procfs); }

EventLookup lookup_event(const std::string& event) {
  if (!Library::existing()) throw std::logic_error("papi: lookup_event before init_library");
  EventLookup lookup;
  int code = 0;
  if (const int rc = PAPI_event_name_to_code(event.c_str(), &code); rc != PAPI_OK) {
    lookup.error = error_text(rc);
    return lookup;
  }
  lookup.known = true;
  lookup.available = PAPI_query_named_event(event.c_str()) == PAPI_OK;
  PAPI_event_info_t info{};
  if (PAPI_get_event_info(code, &info) == PAPI_OK) {
    lookup.description = info.long_descr[0] != '\0' ? info.long_descr : info.short_descr;
  }
  return lookup;
}

std::unique_ptr<CounterSource> open_papi_source(const OpenRequest& request) {
  return std::make_unique<PapiSource>(Library::instance(request.paths.procfs), request);
}

std::string permission_remedy(const std::string& procfs) {
  return permission_remedy_text(read_paranoid(procfs));
}

UnavailableError::UnavailableError(std::string reason, const std::string& message)
    : std::runtime_error(message), reason_(std::move(reason)) {}

}  // namespace hwperf::papi

namespace hwperf {

std::string papi_library_version() {
  // The libpapi actually loaded, which may be a newer patch release than the papi.h this was
  // built with; the build's version only if PAPI cannot even initialise.
  const int runtime = papi::Library::runtime_version();
  return papi::version_text(runtime > 0 ? runtime : PAPI_VERSION);
}

}  // namespace hwperf
