// What the live container tests share: a cgroup made for the test in the hierarchy the
// perf_event controller is bound to (removed however the test ends), a child that spins in one,
// and that hierarchy found as the collector finds it.
#pragma once

#include "tests/catch.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "collectors/cgroup/hierarchy.h"

namespace hwperf::test::cgroup_live {

namespace fs = std::filesystem;

// A cgroup directory made by the test and removed (leaves first) however the test ends.
class TestCgroup {
 public:
  explicit TestCgroup(fs::path path) : path_(std::move(path)) {
    std::error_code ec;
    fs::create_directory(path_, ec);
    INFO("mkdir " << path_ << ": " << ec.message());
    REQUIRE(!ec);
  }
  // Declared before the processes placed in it, so that they are gone when it is removed.
  ~TestCgroup() { remove_tree(path_); }
  const fs::path& path() const { return path_; }

 private:
  static void remove_tree(const fs::path& dir) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.is_directory(ec)) remove_tree(entry.path());
    }
    ::rmdir(dir.c_str());
  }
  fs::path path_;
};

// A child that waits to be placed, then spins for `cpu_ms` of its own CPU time and exits.
class Spinner {
 public:
  // On `cpu` only when it is not -1.
  explicit Spinner(int cpu_ms, int cpu = -1) {
    REQUIRE(::pipe(go_) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      if (cpu >= 0) {
        cpu_set_t only;
        CPU_ZERO(&only);
        CPU_SET(cpu, &only);
        if (::sched_setaffinity(0, sizeof only, &only) != 0) ::_exit(3);
      }
      char byte;
      ::close(go_[1]);
      if (::read(go_[0], &byte, 1) != 1) ::_exit(2);
      timespec start{}, now{};
      ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
      do {
        ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
      } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 <
               cpu_ms);
      ::_exit(0);
    }
    ::close(go_[0]);
  }
  ~Spinner() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  void place_in(const fs::path& cgroup) {
    std::ofstream procs(cgroup / "cgroup.procs");
    procs << pid_ << std::flush;
    INFO("moving pid " << pid_ << " into " << cgroup);
    REQUIRE(procs.good());
  }
  pid_t pid() const { return pid_; }
  // Lets it spin, waits for it, and returns the CPU time the kernel charged it.
  double run() {
    start();
    return finish();
  }
  // run() in two steps, for a test that looks at it while it spins.
  void start() {
    REQUIRE(::write(go_[1], "g", 1) == 1);
    ::close(go_[1]);
    go_[1] = -1;
  }
  double finish() {
    int status = 0;
    rusage usage{};
    REQUIRE(::wait4(pid_, &status, 0, &usage) == pid_);
    pid_ = -1;
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  }

 private:
  int go_[2] = {-1, -1};
  pid_t pid_ = -1;
};

struct Hierarchy {
  cgroup::PerfEventHierarchy found;
  fs::path root;
};

inline Hierarchy perf_event_hierarchy() {
  INFO("cgroup events need root (or CAP_PERFMON and write access to the cgroup tree)");
  REQUIRE(::geteuid() == 0);
  Hierarchy h;
  h.found = cgroup::read_perf_event_hierarchy("/proc", "/sys");
  INFO(h.found.message);
  REQUIRE(h.found.kind != cgroup::PerfEventHierarchy::Kind::none);
  h.root = h.found.mount_point;
  return h;
}

inline std::string unique_name(const char* what) {
  return std::string("hwperf-test-") + what + "-" + std::to_string(::getpid());
}

}  // namespace hwperf::test::cgroup_live
