// The test helpers that run the exporter binary or a shell command and speak HTTP to a
// server: process spawning, sockets, certificates and curl. The rest is in support.cpp.
#include "tests/support/support.h"

#include <algorithm>
#include <arpa/inet.h>
#include <crypt.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cctype>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "exporter/exposition.h"

namespace hwperf::test {
namespace fs = std::filesystem;

namespace {
// The words of HWPERF_TEST_EMULATOR ("qemu-aarch64-static -L SYSROOT" in the arm64 run of
// scripts/arm64-test.sh, where no binfmt_misc handler would start an arm64 binary for us).
std::vector<std::string> emulator_words() {
  std::vector<std::string> words;
  const char* emulator = std::getenv("HWPERF_TEST_EMULATOR");
  std::istringstream in(emulator != nullptr ? emulator : "");
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

int spawn(const std::vector<std::string>& args, const fs::path& out, const fs::path& err,
          const Environment& environment = {}) {
  std::vector<char*> argv;
  static std::string binary;
  binary = exporter_binary();
  std::vector<std::string> copies = emulator_words();
  copies.push_back(binary);
  copies.insert(copies.end(), args.begin(), args.end());
  for (auto& a : copies) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int in_fd = open("/dev/null", O_RDONLY);
    const int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(in_fd, 0);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    // The test binary may have blocked signals; the exporter must start with a clean mask.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (const auto& [name, value] : environment) setenv(name.c_str(), value.c_str(), 1);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

int wait_for(int pid, int timeout_seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  int status = 0;
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}
}  // namespace

ProcessResult run_exporter(const std::vector<std::string>& args, int timeout_seconds,
                           const Environment& environment) {
  TempDir dir;
  const fs::path out = dir.path() / "stdout";
  const fs::path err = dir.path() / "stderr";
  const int pid = spawn(args, out, err, environment);
  ProcessResult result;
  result.exit_code = wait_for(pid, timeout_seconds);
  result.out = read_file(out);
  result.err = read_file(err);
  return result;
}

UniqueFd connect_to(unsigned port, int receive_buffer) {
  UniqueFd socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!socket.valid()) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  if (receive_buffer > 0) {
    setsockopt(socket.get(), SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
  }
  timeval timeout{5, 0};
  setsockopt(socket.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(socket.get(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(socket.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    throw std::runtime_error(std::string("connect: ") + std::strerror(errno));
  }
  return socket;
}

bool closed_within(int fd, double seconds) {
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
         seconds) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char chunk[65536];
    const auto n = ::recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return true;
  }
  return false;
}
HttpResponse http_get(unsigned port, const std::string& path, const Headers& headers) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    throw std::runtime_error("connect to 127.0.0.1:" + std::to_string(port) + ": " + reason);
  }
  std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
  request += "\r\n";
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string raw;
  char buffer[65536];
  while (true) {
    const auto n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    raw.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  HttpResponse response;
  const auto header_end = raw.find("\r\n\r\n");
  if (header_end == std::string::npos) throw std::runtime_error("malformed HTTP response");
  std::istringstream head(raw.substr(0, header_end));
  std::string status_line;
  std::getline(head, status_line);
  response.status = std::stoi(status_line.substr(status_line.find(' ') + 1, 3));
  std::string line;
  while (std::getline(head, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    response.headers[name] = value;
  }
  response.body = raw.substr(header_end + 4);
  return response;
}

RunningExporter::RunningExporter(std::vector<std::string> args, const Environment& environment)
    : stderr_path_(unique_temp_path("hwperf-exporter-stderr-")) {
  // Before a `--`, after which the words are experiment mode's command.
  args.insert(std::find(args.begin(), args.end(), "--"), "--web.listen-address=127.0.0.1:0");
  const fs::path out = stderr_path_.string() + ".out";
  pid_ = spawn(args, out, stderr_path_, environment);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  const std::string marker = "Listening on 127.0.0.1:";
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string text = stderr_text();
    if (const auto at = text.find(marker); at != std::string::npos) {
      port_ = static_cast<unsigned>(std::stoul(text.substr(at + marker.size())));
      return;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("exporter exited before listening:\n" + text);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  stop();
  throw std::runtime_error("exporter did not start listening within 30 s:\n" + stderr_text());
}

RunningExporter::~RunningExporter() {
  stop();
  std::error_code ignored;
  fs::remove(stderr_path_, ignored);
  fs::remove(stderr_path_.string() + ".out", ignored);
}

HttpResponse RunningExporter::get(const std::string& path, const Headers& headers) const {
  return http_get(port_, path, headers);
}

int RunningExporter::stop() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    exit_code_ = wait_for(pid_, 10);
    pid_ = -1;
  }
  return exit_code_;
}

int RunningExporter::wait_exit(int timeout_seconds) {
  if (pid_ > 0) {
    exit_code_ = wait_for(pid_, timeout_seconds);
    pid_ = -1;
  }
  return exit_code_;
}

namespace {

std::string run_python(const std::string& script, const std::string& input) {
  TempDir dir;
  const auto path = dir.write("input", input);
  int exit_code = -1;
  std::string output =
      run_shell("/usr/bin/python3 -c '" + script + "' " + path.string(), &exit_code);
  if (exit_code != 0) return "python3 exited " + std::to_string(exit_code) + ": " + output;
  return output;
}

}  // namespace

std::string read_csv_with_python(const std::string& body, const std::string& input) {
  return run_python("import csv,sys\nrows = list(csv.DictReader(open(sys.argv[1])))\n" + body,
                    input);
}

std::string read_json_with_python(const std::string& body, const std::string& input) {
  return run_python("import json,sys\ns = json.load(open(sys.argv[1]))\n" + body, input);
}

std::string RunningExporter::stdout_text() const {
  return read_file(stderr_path_.string() + ".out");
}

std::string RunningExporter::stderr_text() const {
  std::ifstream in(stderr_path_, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}
std::string run_shell(const std::string& command, int* exit_code) {
  std::string output;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    *exit_code = -1;
    return "popen failed";
  }
  char buffer[4096];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return output;
}

bool have_program(const std::string& program) {
  int exit_code = -1;
  run_shell("command -v " + program, &exit_code);
  return exit_code == 0;
}

namespace {
std::string quoted(const fs::path& path) { return "'" + path.string() + "'"; }
}  // namespace

TestCertificates make_test_certificates(const TempDir& dir) {
  // Extensions as a CA, a TLS server and a TLS client need them, so that OpenSSL and curl verify
  // the chain as they would a real deployment's.
  const fs::path extensions = dir.write("openssl-test.cnf",
                                        "[req]\n"
                                        "distinguished_name = dn\n"
                                        "[dn]\n"
                                        "[ca]\n"
                                        "basicConstraints = critical,CA:TRUE\n"
                                        "keyUsage = critical,keyCertSign,cRLSign\n"
                                        "subjectKeyIdentifier = hash\n"
                                        "[server]\n"
                                        "basicConstraints = CA:FALSE\n"
                                        "keyUsage = critical,digitalSignature\n"
                                        "extendedKeyUsage = serverAuth\n"
                                        "subjectAltName = IP:127.0.0.1,DNS:localhost\n"
                                        "[client]\n"
                                        "basicConstraints = CA:FALSE\n"
                                        "keyUsage = critical,digitalSignature\n"
                                        "extendedKeyUsage = clientAuth\n"
                                        "subjectAltName = DNS:prometheus.example\n");
  const fs::path& d = dir.path();
  TestCertificates made{d / "ca.crt",     d / "server.crt", d / "server.key", d / "client.crt",
                        d / "client.key", d / "rogue.crt",  d / "rogue.key"};
  const std::string new_key = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 ";
  const std::string config = " -config " + quoted(extensions) + " ";
  const auto run = [](const std::string& command) {
    int exit_code = -1;
    const std::string output = run_shell(command, &exit_code);
    if (exit_code != 0) throw std::runtime_error("openssl failed: " + command + "\n" + output);
  };
  const auto signed_by_ca = [&](const std::string& name, const std::string& section,
                                const fs::path& cert, const fs::path& key) {
    const fs::path request = d / (name + ".csr");
    run("openssl req" + config + new_key + "-keyout " + quoted(key) + " -out " + quoted(request) +
        " -subj /CN=" + name);
    run("openssl x509 -req -in " + quoted(request) + " -CA " + quoted(made.ca_cert) + " -CAkey " +
        quoted(d / "ca.key") + " -set_serial 0x" + std::to_string(name.size()) + "01 -days 2" +
        " -extfile " + quoted(extensions) + " -extensions " + section + " -out " + quoted(cert));
  };
  run("openssl req -x509" + config + "-extensions ca" + new_key + "-keyout " +
      quoted(d / "ca.key") + " -out " + quoted(made.ca_cert) + " -subj /CN=hwperf-test-ca");
  signed_by_ca("127.0.0.1", "server", made.server_cert, made.server_key);
  signed_by_ca("prometheus", "client", made.client_cert, made.client_key);
  run("openssl req -x509" + config + "-extensions client" + new_key + "-keyout " +
      quoted(made.rogue_key) + " -out " + quoted(made.rogue_cert) + " -subj /CN=rogue");
  return made;
}

CurlResult curl(const std::vector<std::string>& args, const std::string& url) {
  const fs::path body = unique_temp_path("hwperf-curl-");
  std::string command = "curl --silent --show-error --max-time 10 --output " + quoted(body) +
                        " --write-out '\\n%{http_code}'";
  for (const auto& arg : args) command += " '" + arg + "'";
  command += " '" + url + "'";
  CurlResult result;
  const std::string output = run_shell(command, &result.exit_code);
  // The last line is the status curl writes out ("000" without a response); before it, errors.
  const auto newline = output.rfind('\n');
  const std::string status = newline == std::string::npos ? output : output.substr(newline + 1);
  result.error = newline == std::string::npos ? "" : output.substr(0, newline);
  result.status = std::atoi(status.c_str());
  std::error_code ignored;
  if (fs::exists(body, ignored)) result.body = read_file(body);
  fs::remove(body, ignored);
  return result;
}

}  // namespace hwperf::test
