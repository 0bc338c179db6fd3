// A workload whose own CPU time the process-target tests know exactly: each thread spins until
// CLOCK_THREAD_CPUTIME_ID says it has used its share, and the process reports what each thread
// used. Driven through stdin/stdout so that a test can attach counters between its steps:
//   workload threads PRE POST MS    PRE threads exist before "go"; after it, PRE + POST threads
//                                   spin MS ms each; prints "ns N N ..." and waits for "exit".
//   workload pinned MS              after "go", two threads pinned to CPU 0 and CPU 1 spin MS ms;
//                                   prints "ns N0 N1".
//   workload fork PAGES             after "go", forks a child that forks a grandchild; the
//                                   grandchild touches PAGES pages; prints "pages N" when both
//                                   have ended.
//   workload touch PAGES            touches PAGES pages at once and exits (for --once -- CMD).
//   workload spin MS                spins MS ms of CPU at once, prints "ns N" (what it used) and
//                                   exits (for served -- CMD).
// It prints "ready" once the state before "go" is set up.
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::uint64_t thread_ns() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1000000000u +
         static_cast<std::uint64_t>(now.tv_nsec);
}

// Spins until this thread has used `ms` of CPU; returns what it used in all.
std::uint64_t spin(unsigned ms) {
  const std::uint64_t until = thread_ns() + std::uint64_t{ms} * 1000000u;
  volatile std::uint64_t sink = 0;
  while (thread_ns() < until) {
    for (int i = 0; i < 10000; ++i) sink = sink + static_cast<std::uint64_t>(i);
  }
  return thread_ns();
}

void wait_for(const std::string& word) {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line == word) return;
  }
  std::exit(0);  // the test went away
}

void pin(unsigned cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

void touch(std::size_t pages) {
  const std::size_t size = pages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  auto* memory = static_cast<char*>(
      mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (memory == MAP_FAILED) std::exit(3);
  for (std::size_t offset = 0; offset < size;
       offset += static_cast<std::size_t>(sysconf(_SC_PAGESIZE))) {
    memory[offset] = 1;
  }
  munmap(memory, size);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "threads" && argc == 5) {
    const unsigned pre = static_cast<unsigned>(std::atoi(argv[2]));
    const unsigned post = static_cast<unsigned>(std::atoi(argv[3]));
    const unsigned ms = static_cast<unsigned>(std::atoi(argv[4]));
    std::atomic<bool> go{false};
    std::vector<std::uint64_t> used(pre + post, 0);
    std::vector<std::thread> threads;
    for (unsigned i = 0; i < pre; ++i) {
      threads.emplace_back([&, i] {
        while (!go.load()) usleep(1000);
        used[i] = spin(ms);
      });
    }
    std::cout << "ready" << std::endl;
    wait_for("go");
    go = true;
    for (unsigned i = pre; i < pre + post; ++i)
      threads.emplace_back([&, i] { used[i] = spin(ms); });
    for (auto& thread : threads) thread.join();
    std::cout << "ns";
    for (const auto ns : used) std::cout << " " << ns;
    std::cout << std::endl;
    wait_for("exit");
    return 0;
  }
  if (mode == "pinned" && argc == 3) {
    const unsigned ms = static_cast<unsigned>(std::atoi(argv[2]));
    std::cout << "ready" << std::endl;
    wait_for("go");
    std::uint64_t used[2] = {0, 0};
    std::thread first([&] {
      pin(0);
      used[0] = spin(ms);
    });
    std::thread second([&] {
      pin(1);
      used[1] = spin(ms);
    });
    first.join();
    second.join();
    std::cout << "ns " << used[0] << " " << used[1] << std::endl;
    wait_for("exit");
    return 0;
  }
  if (mode == "fork" && argc == 3) {
    const std::size_t pages = std::strtoul(argv[2], nullptr, 10);
    std::cout << "ready" << std::endl;
    wait_for("go");
    const pid_t child = fork();
    if (child == 0) {
      const pid_t grandchild = fork();
      if (grandchild == 0) {
        touch(pages);
        _exit(0);
      }
      int status = 0;
      waitpid(grandchild, &status, 0);
      _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    std::cout << "pages " << pages << " status " << status << std::endl;
    wait_for("exit");
    return 0;
  }
  if (mode == "spin" && argc == 3) {
    const auto used = spin(static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10)));
    std::cout << "ns " << used << std::endl;
    return 0;
  }
  if (mode == "touch" && argc == 3) {
    touch(std::strtoul(argv[2], nullptr, 10));
    return 0;
  }
  std::fprintf(stderr, "usage: see the comment at the top of workload.cpp\n");
  return 2;
}
