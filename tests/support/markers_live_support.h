// What the live marker-library tests share (test_markers_live.cpp, test_markers_processes.cpp):
// a segment made as the exporter makes one for `-- CMD`, its slots read as the exporter reads
// them, and a test program run with libhwperf_markers.so preloaded, its output read back.
#pragma once

#include "tests/catch.hpp"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "common/region_segment_file.h"
#include "markers/include/hwperf/markers.h"
#include "markers/include/hwperf/region_segment.h"
#include "tests/support/region_segment_fake.h"

extern char** environ;

namespace hwperf::test::markers_live {

inline const hwperf_region_event task_clock =
    software_event(PERF_COUNT_SW_TASK_CLOCK, "task-clock");
inline const hwperf_region_event page_faults =
    software_event(PERF_COUNT_SW_PAGE_FAULTS, "page-faults");

// A segment as the exporter makes one for `-- CMD` (common/region_segment_file.h), mapped here
// read-write; `magic` other than the contract's is written before READY.
class Segment {
 public:
  explicit Segment(const std::vector<hwperf_region_event>& events,
                   std::uint64_t magic = HWPERF_REGION_MAGIC)
      : fd_(create_region_segment()),
        mapping_(map_file(
            fd_.get(),
            region_segment_layout(HWPERF_REGION_MAX_REGIONS, HWPERF_REGION_MAX_SLOTS).size, true)) {
    header()->magic = magic;
    publish_region_events(fd_.get(), events);
  }

  int fd() const { return fd_.get(); }
  const void* base() const { return mapping_.data(); }
  hwperf_region_header* header() const {
    return reinterpret_cast<hwperf_region_header*>(mapping_.writable());
  }
  // HWPERF_REGIONS_FD=N, as the exporter sets it for the command.
  std::string environment() const {
    return std::string(HWPERF_REGION_FD_ENV) + "=" + std::to_string(fd());
  }

 private:
  UniqueFd fd_;
  UniqueMapping mapping_;
};

struct Slot {
  std::string region;
  int tid = 0;
  int cpu = 0;
  std::uint64_t calls = 0;
  std::uint64_t time_ns = 0;
  std::vector<std::uint64_t> counts;
};

// The slots as the exporter reads them: each copied under its seqlock.
inline std::vector<Slot> read_slots(const void* base) {
  const auto* h = static_cast<const hwperf_region_header*>(base);
  const auto* names =
      reinterpret_cast<const hwperf_region_name*>(static_cast<const char*>(base) + h->names_offset);
  const auto* slots =
      reinterpret_cast<const hwperf_region_slot*>(static_cast<const char*>(base) + h->slots_offset);
  const std::uint32_t count = __atomic_load_n(&h->slot_count, __ATOMIC_ACQUIRE);
  REQUIRE(count <= h->max_slots);
  std::vector<Slot> result;
  for (std::uint32_t i = 0; i < count; ++i) {
    hwperf_region_slot copy{};
    for (int attempt = 0;; ++attempt) {
      // The writer is done or idle while the tests read: a slot that never settles is a bug.
      REQUIRE(attempt < 1000000);
      const std::uint32_t before = __atomic_load_n(&slots[i].seq, __ATOMIC_ACQUIRE);
      std::memcpy(&copy, &slots[i], sizeof copy);
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      if (before % 2 == 0 && __atomic_load_n(&slots[i].seq, __ATOMIC_RELAXED) == before) break;
    }
    REQUIRE(copy.region < h->region_count);
    Slot slot;
    slot.region = names[copy.region].name;
    slot.tid = copy.tid;
    slot.cpu = copy.cpu;
    slot.calls = copy.calls;
    slot.time_ns = copy.time_ns;
    slot.counts.assign(copy.counts, copy.counts + h->event_count);
    result.push_back(slot);
  }
  return result;
}

// The region names of the segment, in table order.
inline std::vector<std::string> region_names(const void* base) {
  const auto* h = static_cast<const hwperf_region_header*>(base);
  const auto* names =
      reinterpret_cast<const hwperf_region_name*>(static_cast<const char*>(base) + h->names_offset);
  const std::uint32_t count = __atomic_load_n(&h->region_count, __ATOMIC_ACQUIRE);
  REQUIRE(count <= h->max_regions);
  std::vector<std::string> result;
  for (std::uint32_t i = 0; i < count; ++i) {
    result.emplace_back(names[i].name, strnlen(names[i].name, HWPERF_REGION_NAME_BYTES));
  }
  return result;
}

// One region's slots added up.
inline Slot total(const std::vector<Slot>& slots, const std::string& region) {
  Slot sum;
  sum.region = region;
  for (const auto& slot : slots) {
    if (slot.region != region) continue;
    sum.calls += slot.calls;
    sum.time_ns += slot.time_ns;
    if (sum.counts.size() < slot.counts.size()) sum.counts.resize(slot.counts.size());
    for (std::size_t i = 0; i < slot.counts.size(); ++i) sum.counts[i] += slot.counts[i];
  }
  return sum;
}

// `program` (tests/helpers/marker_program.c unless named) with the library preloaded and
// `environment` added, descriptor `inherit_fd` left open across its exec; its stdout read line by
// line, its stderr kept for stderr_text().
class Program {
 public:
  Program(const std::vector<std::string>& args, const std::vector<std::string>& environment,
          int inherit_fd = -1, const std::string& program = HWPERF_TEST_MARKER_PROGRAM) {
    int in[2], out[2];
    REQUIRE(pipe2(in, O_CLOEXEC) == 0);
    REQUIRE(pipe2(out, O_CLOEXEC) == 0);
    stderr_ = memfd_create("program-stderr", MFD_CLOEXEC);
    REQUIRE(stderr_ >= 0);
    std::vector<std::string> env_strings{std::string("LD_PRELOAD=") + HWPERF_MARKERS_LIBRARY};
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      if (entry.rfind("LD_PRELOAD=", 0) == 0 || entry.rfind("HWPERF_REGIONS_", 0) == 0) continue;
      env_strings.push_back(entry);
    }
    env_strings.insert(env_strings.end(), environment.begin(), environment.end());
    std::vector<std::string> argv_strings{program};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv, envp;
    for (auto& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      dup2(stderr_, 2);
      if (inherit_fd >= 0) fcntl(inherit_fd, F_SETFD, 0);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    stdin_ = in[1];
    stdout_ = fdopen(out[0], "r");
  }
  ~Program() {
    if (stdin_ >= 0) close(stdin_);
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (stdout_ != nullptr) fclose(stdout_);
    close(stderr_);
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  pid_t pid() const { return pid_; }

  // Lines until "ready" or the end of the output.
  std::vector<std::string> lines() {
    std::vector<std::string> result;
    char buffer[512];
    while (fgets(buffer, sizeof buffer, stdout_) != nullptr) {
      std::string line = buffer;
      if (!line.empty() && line.back() == '\n') line.pop_back();
      if (line == "ready") break;
      result.push_back(line);
    }
    return result;
  }

  // Writes a line to its stdin.
  void send(const std::string& line) {
    const std::string text = line + "\n";
    REQUIRE(write(stdin_, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  }

  // Closes its stdin and returns its exit status (-1: did not exit normally).
  int finish() {
    close(stdin_);
    stdin_ = -1;
    int status = 0;
    REQUIRE(waitpid(pid_, &status, 0) == pid_);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // What it wrote to stderr so far.
  std::string stderr_text() const {
    std::string text;
    char buffer[4096];
    off_t offset = 0;
    for (ssize_t n; (n = pread(stderr_, buffer, sizeof buffer, offset)) > 0; offset += n) {
      text.append(buffer, static_cast<std::size_t>(n));
    }
    return text;
  }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  int stderr_ = -1;
  std::FILE* stdout_ = nullptr;
};

// The report line starting with `key`, split into its numbers.
inline std::vector<std::uint64_t> numbers(const std::vector<std::string>& lines,
                                          const std::string& key) {
  for (const auto& line : lines) {
    std::istringstream in(line);
    std::string word;
    in >> word;
    if (word != key) continue;
    std::vector<std::uint64_t> result;
    std::uint64_t value;
    while (in >> value) result.push_back(value);
    return result;
  }
  FAIL("no line '" << key << " ...' in the program's output");
  return {};
}

// The page faults tests/helpers/cache_lab.c counted itself inside `region` ("faults REGION N").
inline std::uint64_t lab_faults(const std::vector<std::string>& lines, const std::string& region) {
  for (const auto& line : lines) {
    std::istringstream in(line);
    std::string word, name;
    std::uint64_t count = 0;
    if (in >> word >> name >> count && word == "faults" && name == region) return count;
  }
  FAIL("no line 'faults " << region << " N' in the program's output");
  return 0;
}

}  // namespace hwperf::test::markers_live
