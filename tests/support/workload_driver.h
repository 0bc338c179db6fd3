// The test workload (tests/helpers/workload.cpp) driven from a test: started as a child with its
// line protocol on stdin and stdout, for the process-target tests.
#pragma once

#include "tests/catch.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace hwperf::test {

// The workload (tests/helpers/workload.cpp) with a line protocol on its stdin and stdout.
class Workload {
 public:
  explicit Workload(std::vector<std::string> args) {
    int in[2], out[2];
    REQUIRE(pipe2(in, O_CLOEXEC) == 0);
    REQUIRE(pipe2(out, O_CLOEXEC) == 0);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      std::vector<char*> argv;
      static std::string program = HWPERF_TEST_WORKLOAD;
      argv.push_back(program.data());
      for (auto& arg : args) argv.push_back(arg.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = fdopen(out[0], "r");
    expect("ready");
  }
  ~Workload() {
    say("exit");
    close(to_);
    fclose(from_);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  pid_t pid() const { return pid_; }
  void say(const std::string& line) {
    const std::string text = line + "\n";
    (void)!write(to_, text.data(), text.size());
  }
  std::string line() {
    char buffer[4096];
    if (fgets(buffer, sizeof buffer, from_) == nullptr) return "";
    std::string text = buffer;
    if (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }
  void expect(const std::string& word) { REQUIRE(line() == word); }
  // "ns A B C" -> seconds of each thread.
  std::vector<double> thread_seconds() {
    std::istringstream words(line());
    std::string tag;
    words >> tag;
    REQUIRE(tag == "ns");
    std::vector<double> seconds;
    for (std::uint64_t ns; words >> ns;) seconds.push_back(static_cast<double>(ns) / 1e9);
    return seconds;
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1;
  FILE* from_ = nullptr;
};

}  // namespace hwperf::test
