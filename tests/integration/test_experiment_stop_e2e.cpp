// Experiment mode told to stop, on the real binary: SIGTERM and SIGINT are passed on to the command
// and the exporter exits as a shell would, a command that ignores them is killed after the grace
// period, Ctrl-C to the process group ends --repeat with the summary of what ran, a waiting run
// killed by another hand is reported, and a stdout that cannot be written is an exit status.
#include "tests/catch.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/support.h"

using namespace hwperf;
using hwperf::test::TempDir;

namespace {

using Clock = std::chrono::steady_clock;

using hwperf::test::seconds_since;

// The exporter as a shell starts a job: a process group of its own (the target of Ctrl-C), the
// signals a program expects at their defaults, stdout to a file (or `out`), stderr to a file.
class Job : test::NoCopy {
 public:
  explicit Job(std::vector<std::string> args, const std::string& out = "") {
    const std::string out_path = out.empty() ? (dir_.path() / "out").string() : out;
    const std::string err_path = (dir_.path() / "err").string();
    dir_.write("err", "");  // there before the child writes, for logged()
    dir_.write("out", "");
    std::string binary = test::exporter_binary();
    std::vector<char*> argv = {binary.data()};
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      const int in_fd = ::open("/dev/null", O_RDONLY);
      const int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(in_fd, 0);
      ::dup2(out_fd, 1);
      ::dup2(err_fd, 2);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      // A test runner started in the background may have SIGINT ignored: Ctrl-C's job has not.
      for (int signal_number : {SIGINT, SIGTERM, SIGPIPE}) ::signal(signal_number, SIG_DFL);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::setpgid(pid_, pid_);  // as the child does, whichever runs first
  }
  ~Job() {
    if (pid_ > 0) {
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  int pid() const { return pid_; }
  void signal(int signal_number) const { ::kill(pid_, signal_number); }
  void signal_group(int signal_number) const { ::kill(-pid_, signal_number); }
  std::string err() const { return test::read_file(dir_.path() / "err"); }
  std::string out() const { return test::read_file(dir_.path() / "out"); }
  // Whether the log says `text` within `seconds`.
  bool logged(const std::string& text, double seconds) const {
    const auto start = Clock::now();
    while (seconds_since(start) < seconds) {
      if (err().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  // The exit status as a shell gives it; -1 when it had not ended within `seconds` (then killed).
  int wait(double seconds) {
    const auto start = Clock::now();
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) != pid_) {
      if (seconds_since(start) > seconds) {
        ::kill(-pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  TempDir dir_;
  pid_t pid_ = -1;
};

// The exporter's children that still wait for their counters (forked copies of it, not executed).
std::vector<pid_t> waiting_children(pid_t exporter) {
  std::vector<pid_t> waiting;
  const std::string task = "/proc/" + std::to_string(exporter) + "/task/";
  for (const auto& thread : std::filesystem::directory_iterator(task)) {
    std::istringstream children(test::read_file(thread.path() / "children"));
    pid_t child = 0;
    while (children >> child) {
      const std::string comm = test::read_file("/proc/" + std::to_string(child) + "/comm");
      if (comm == "hwperf_exporte\n" || comm == "hwperf_exporter\n") waiting.push_back(child);
    }
  }
  return waiting;
}

constexpr double kStart = 30.0 * HWPERF_SLOWDOWN;  // to start and run the command

// A job told to stop once its log says `ready`: its status, and the seconds from SIGTERM to its
// end.
struct Stopped {
  int status = -1;
  double seconds = 0;
  std::string log;
};
Stopped stop_when(const std::vector<std::string>& args, const std::string& ready) {
  Job job(args);
  if (!job.logged(ready, kStart)) return {-1, 0, job.err()};
  // A shell's trap is set by the time its loop runs: give it that long.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto signalled = Clock::now();
  job.signal(SIGTERM);
  Stopped stopped;
  stopped.status = job.wait(90);
  stopped.seconds = seconds_since(signalled);
  stopped.log = job.err();
  return stopped;
}

}  // namespace

TEST_CASE("SIGTERM to --once -- CMD is passed on, and the exporter exits as a shell would",
          "[experiment][e2e][kernel_perf]") {
  const auto stopped = stop_when({"--once", "--log.level=info", "--", "sleep", "60"}, "runs sleep");
  INFO(stopped.log);
  CHECK(stopped.status == 128 + SIGTERM);
  // Well before the command's 60 s would have passed.
  CHECK(stopped.seconds < 20 * HWPERF_SLOWDOWN);
  CHECK_THAT(stopped.log, Catch::Contains("received SIGTERM, passed on to sleep 60") &&
                              Catch::Contains("terminated by signal 15 (SIGTERM)"));
}

TEST_CASE("Served -- CMD told to stop ends with the command, without the linger",
          "[experiment][e2e][kernel_perf]") {
  const auto stopped = stop_when(
      {"--web.listen-address=127.0.0.1:0", "--linger=60s", "--", "sleep", "60"}, "Listening on");
  INFO(stopped.log);
  CHECK(stopped.status == 128 + SIGTERM);
  // The command ends at once; the exporter within 2 s of it (the linger was 60 s).
  CHECK(stopped.seconds < 2 + 3 * HWPERF_SLOWDOWN);
  CHECK_THAT(stopped.log, Catch::Contains("not serving the final counts"));
}

TEST_CASE("A served command that ignores SIGTERM is killed after the grace period",
          "[experiment][e2e][kernel_perf]") {
  const std::vector<std::string> stubborn = {"--web.listen-address=127.0.0.1:0", "--", "sh", "-c",
                                             "trap '' TERM; while :; do sleep 0.1; done"};
  SECTION("when the grace period ends") {
    const auto stopped = stop_when(stubborn, "Listening on");
    INFO(stopped.log);
    CHECK(stopped.status == 128 + SIGKILL);
    CHECK(stopped.seconds >= 4.9);  // the grace period, 5 s
    CHECK(stopped.seconds < 5 + 5 * HWPERF_SLOWDOWN);
    CHECK_THAT(stopped.log, Catch::Contains("did not end within 5 s of SIGTERM; killing it"));
  }
  SECTION("at once on a second signal") {
    Job job(stubborn);
    REQUIRE(job.logged("Listening on", kStart));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    job.signal(SIGTERM);
    REQUIRE(job.logged("received SIGTERM, passed on", kStart));
    job.signal(SIGINT);
    CHECK(job.wait(60) == 128 + SIGKILL);
    INFO(job.err());
    CHECK_THAT(job.err(), Catch::Contains("received SIGINT again; killing"));
  }
}

TEST_CASE("Ctrl-C to the process group of --once --repeat prints the summary of what ran",
          "[experiment][e2e][kernel_perf]") {
  Job job({"--once", "--repeat=5", "--log.level=info", "--", "sleep", "60"});
  REQUIRE(job.logged("runs sleep", kStart));
  // The terminal's SIGINT reaches the exporter, the running command and the runs still waiting.
  job.signal_group(SIGINT);
  CHECK(job.wait(kStart) == 128 + SIGINT);
  INFO(job.err());
  CHECK_THAT(job.err(), Catch::Contains("Performance counter stats for 'sleep 60':") &&
                            Catch::Contains("terminated by signal 2 (SIGINT)") &&
                            Catch::Contains("stopped by SIGINT during run 1 of 5"));
}

TEST_CASE("A waiting run killed by another hand is reported, and the other runs are measured",
          "[experiment][e2e][kernel_perf]") {
  Job job({"--once", "--repeat=3", "--log.level=info", "--", "sleep", "2"});
  REQUIRE(job.logged("sleep.1: pid", kStart));
  REQUIRE(job.logged("runs sleep", kStart));
  const auto waiting = waiting_children(job.pid());
  REQUIRE(waiting.size() == 2);  // runs 2 and 3, forked in that order
  ::kill(std::max(waiting[0], waiting[1]), SIGKILL);
  CHECK(job.wait(kStart * 2) == 128 + SIGKILL);
  INFO(job.err());
  CHECK_THAT(job.err(), Catch::Contains("(2 runs):") &&
                            Catch::Contains("run 3 of 3 did not start") &&
                            Catch::Contains("terminated by signal 9 (SIGKILL)"));
}

TEST_CASE("Experiment mode: --once whose stdout cannot be written exits 1 with a log line",
          "[experiment][e2e][kernel_perf]") {
  Job job({"--once"}, "/dev/full");
  CHECK(job.wait(kStart) == 1);
  CHECK_THAT(job.err(), Catch::Contains("stdout: write failed (ENOSPC"));
}
