#include "exporter/experiment/experiment.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/text.h"

namespace hwperf {
namespace {

// The command's environment: ours, with `setup`'s library first in LD_PRELOAD and its
// descriptor's number named; built before the fork, so the child only calls exec.
std::vector<std::string> command_environment(const CommandSetup& setup) {
  std::vector<std::string> environment;
  bool preloaded = false;
  const std::string preload_key = "LD_PRELOAD=";
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text(*entry);
    if (!setup.fd_env.empty() && text.rfind(setup.fd_env + "=", 0) == 0) continue;
    if (!setup.preload.empty() && text.rfind(preload_key, 0) == 0) {
      const std::string before = text.substr(preload_key.size());
      text = preload_key + setup.preload + (before.empty() ? "" : ":" + before);
      preloaded = true;
    }
    environment.push_back(std::move(text));
  }
  if (!setup.preload.empty() && !preloaded) environment.push_back(preload_key + setup.preload);
  if (setup.inherited.valid()) {
    environment.push_back(setup.fd_env + "=" + std::to_string(setup.inherited.get()));
  }
  return environment;
}

// Why exec failed, for a person: where it looked, and what to do.
std::string exec_failure(const std::string& program, int failure) {
  std::string text = "cannot run " + program + ": " + std::strerror(failure);
  if (failure == EACCES) {
    return text + " (not executable: chmod +x, or a file system mounted noexec)";
  }
  if (failure != ENOENT) return text;
  if (program.find('/') == std::string::npos) return text + " (not found in PATH)";
  // execve says ENOENT for a script whose #! interpreter is missing, too.
  if (::access(program.c_str(), F_OK) == 0) {
    return text + " (the file exists: the interpreter its #! line names does not)";
  }
  return text;
}

// How long the destructor waits for a command it asked to end before it kills it.
constexpr int kDestructorGraceMs = 1000;

}  // namespace

std::string signal_text(int signal_number) {
  const char* abbreviation = ::sigabbrev_np(signal_number);
  return abbreviation != nullptr ? std::string("SIG") + abbreviation
                                 : "signal " + std::to_string(signal_number);
}

std::string end_text(int exit_code, int signal_number) {
  if (signal_number == 0) return "exit status " + std::to_string(exit_code);
  return "terminated by signal " + std::to_string(signal_number) + " (" +
         signal_text(signal_number) + ")";
}

Experiment::Experiment(std::vector<std::string> command, std::string target, CommandSetup setup)
    : command_(std::move(command)), target_(std::move(target)), setup_(std::move(setup)) {
  if (command_.empty()) throw std::runtime_error("-- needs a command to run");
  std::vector<std::string> environment = command_environment(setup_);
  std::vector<char*> envp;
  for (auto& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);
  if (target_.empty()) target_ = program_name(command_[0]);
  int go[2], error[2];
  if (::pipe2(go, O_CLOEXEC) != 0 || ::pipe2(error, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("cannot run the command: pipe: ") + std::strerror(errno));
  }
  pid_ = ::fork();
  if (pid_ < 0) {
    throw std::runtime_error(std::string("cannot run the command: fork: ") + std::strerror(errno));
  }
  if (pid_ == 0) {
    // The command gets the signals the exporter waits for, as any program would.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // The exporter ignores SIGPIPE (a write error is its to report); an ignored signal stays
    // ignored across exec, and a program expects the default.
    ::signal(SIGPIPE, SIG_DFL);
    ::close(go[1]);
    ::close(error[0]);
    char byte = 0;
    ssize_t n;
    do {
      n = ::read(go[0], &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) ::_exit(127);  // the exporter gave up before attaching
    std::vector<char*> argv;
    for (auto& word : command_) argv.push_back(word.data());
    argv.push_back(nullptr);
    // Cleared in the child only: the exporter's copy stays close-on-exec for anything else it
    // may run.
    if (setup_.inherited.valid()) ::fcntl(setup_.inherited.get(), F_SETFD, 0);
    ::execvpe(argv[0], argv.data(), envp.data());
    const int failure = errno;
    (void)!::write(error[1], &failure, sizeof failure);
    // As a shell says it: 127 not found, 126 found but not executable.
    ::_exit(failure == ENOENT ? 127 : 126);
  }
  ::close(go[0]);
  ::close(error[1]);
  go_fd_ = go[1];
  error_fd_ = error[0];
}

Experiment::~Experiment() {
  if (go_fd_ >= 0) ::close(go_fd_);  // an unreleased child reads EOF and exits
  if (error_fd_ >= 0) ::close(error_fd_);
  if (reaped_ || pid_ <= 0) return;
  // Only on a path that gave up on the command: asked to end, then killed if it will not.
  ::kill(pid_, SIGTERM);
  for (int waited = 0; waited < kDestructorGraceMs; waited += 10) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
    ::usleep(10 * 1000);
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

std::string Experiment::command_line() const { return join(command_, " "); }

bool Experiment::release() {
  const char go = 1;
  // EPIPE (SIGPIPE is ignored) when nothing reads: the waiting child was killed.
  const bool told = ::write(go_fd_, &go, 1) == 1;
  ::close(go_fd_);
  go_fd_ = -1;
  int failure = 0;
  ssize_t n;
  do {
    n = ::read(error_fd_, &failure, sizeof failure);
  } while (n < 0 && errno == EINTR);
  ::close(error_fd_);
  error_fd_ = -1;
  if (n == static_cast<ssize_t>(sizeof failure)) {
    wait();
    throw std::runtime_error(exec_failure(command_[0], failure));
  }
  if (!told) wait();
  return told;
}

void Experiment::reaped(int status) {
  reaped_ = true;
  signal_ = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  status_ = WIFEXITED(status) ? WEXITSTATUS(status) : signal_ != 0 ? 128 + signal_ : 1;
}

int Experiment::wait() {
  if (!reaped_) {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped(status);
  }
  return status_;
}

std::optional<int> Experiment::poll() {
  if (reaped_) return status_;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
  reaped(status);
  return status_;
}

void Experiment::forward(int signal_number) {
  if (!reaped_) ::kill(pid_, signal_number);
}

}  // namespace hwperf
