// The floor a scrape cannot go below on this machine: a server that does nothing but answer every
// GET on a kept-alive loopback connection with bytes captured from the real exporter (status line,
// headers and body), so that the CPU it spends per request is the kernel's and the socket's alone.
// scripts/bench-side-by-side.sh runs it beside hwperf_exporter and node_exporter and prints
// hwperf's CPU per scrape as a multiple of it.
//
//   hwperf_floor_server PORT IDENTITY_RESPONSE GZIP_RESPONSE [FILE...]
//
// A request whose headers name gzip in Accept-Encoding gets GZIP_RESPONSE, any other
// IDENTITY_RESPONSE; "Connection: close" closes after the answer. Each FILE (held open) is read
// with one pread() before every answer: given the energy_uj files the exporter holds, that is the
// reading floor, what any exporter of those counters pays the kernel per scrape besides the socket.
// One thread and epoll, one read() per request and one write() per answer: what a do-nothing server
// costs, no more. One thread, so that its CPU time is read from one schedstat that never goes away
// with a connection.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace {

std::string read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool contains_ignoring_case(const std::string& text, const char* needle) {
  const std::size_t length = std::strlen(needle);
  for (std::size_t i = 0; i + length <= text.size(); ++i) {
    if (strncasecmp(text.data() + i, needle, length) == 0) return true;
  }
  return false;
}

bool write_all(int fd, const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

struct Connection {
  std::string pending;
};

// Reads each of `files` from its start, as a scrape of those counters would.
void read_counters(const std::vector<int>& files) {
  char value[64];
  for (const int file : files) {
    if (::pread(file, value, sizeof value, 0) < 0) std::perror("hwperf_floor_server: pread");
  }
}

// Answers every complete request in `connection`; false when the connection is to be closed.
bool answer(int fd, Connection& connection, const std::string& identity, const std::string& gzip,
            const std::vector<int>& files) {
  for (;;) {
    const std::size_t end = connection.pending.find("\r\n\r\n");
    if (end == std::string::npos) return true;
    const std::string request = connection.pending.substr(0, end);
    connection.pending.erase(0, end + 4);
    read_counters(files);
    const bool wants_gzip = contains_ignoring_case(request, "accept-encoding: gzip");
    if (!write_all(fd, wants_gzip ? gzip : identity)) return false;
    if (contains_ignoring_case(request, "connection: close")) return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s PORT IDENTITY_RESPONSE GZIP_RESPONSE [FILE...]\n", argv[0]);
    return 2;
  }
  std::vector<int> files;
  for (int i = 4; i < argc; ++i) {
    files.push_back(::open(argv[i], O_RDONLY | O_CLOEXEC));
    if (files.back() < 0) {
      std::perror(argv[i]);
      return 2;
    }
  }
  const std::string identity = read_file(argv[2]);
  const std::string gzip = read_file(argv[3]);
  if (identity.empty() || gzip.empty()) {
    std::fprintf(stderr, "%s: a captured response is empty or unreadable\n", argv[0]);
    return 2;
  }
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int on = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(std::stoi(argv[1])));
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listener, 128) != 0) {
    std::perror("hwperf_floor_server: bind/listen");
    return 1;
  }
  const int poller = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event listen_event{};
  listen_event.events = EPOLLIN;
  listen_event.data.fd = listener;
  ::epoll_ctl(poller, EPOLL_CTL_ADD, listener, &listen_event);
  std::map<int, Connection> connections;
  char buffer[8192];
  for (;;) {
    epoll_event ready[64];
    const int count = ::epoll_wait(poller, ready, 64, -1);
    for (int i = 0; i < count; ++i) {
      const int fd = ready[i].data.fd;
      if (fd == listener) {
        const int accepted = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        if (accepted < 0) continue;
        ::setsockopt(accepted, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        epoll_event event{};
        event.events = EPOLLIN;
        event.data.fd = accepted;
        ::epoll_ctl(poller, EPOLL_CTL_ADD, accepted, &event);
        connections[accepted];
        continue;
      }
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      bool keep = n > 0;
      if (keep) {
        Connection& connection = connections[fd];
        connection.pending.append(buffer, static_cast<std::size_t>(n));
        keep = answer(fd, connection, identity, gzip, files);
      } else if (n < 0 && errno == EINTR) {
        continue;
      }
      if (!keep) {
        ::epoll_ctl(poller, EPOLL_CTL_DEL, fd, nullptr);
        ::close(fd);
        connections.erase(fd);
      }
    }
  }
}
