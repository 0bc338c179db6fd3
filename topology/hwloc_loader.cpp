// Builds a Topology from hwloc. This is the only file in the project that includes hwloc.h, so that
// hwloc's types and its 1.x/2.x differences stay behind topology.h.
#include <hwloc.h>

#include <algorithm>
#include <optional>
#include <filesystem>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/files.h"
#include "common/text.h"
#include "topology/topology.h"

namespace hwperf {
namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology_t topology) const noexcept { hwloc_topology_destroy(topology); }
};
using TopologyHandle = std::unique_ptr<hwloc_topology, TopologyDeleter>;

std::runtime_error load_error(const TopologyConfig& source, const std::string& reason) {
  return std::runtime_error("topology " + source.to_string() + ": " + reason);
}

// hwloc has two XML backends and they reject a bad file at different steps: the minimal one in
// hwloc_topology_set_xml, the libxml2 one only in hwloc_topology_load, both with EINVAL. Which one
// is installed must not change what the user reads.
std::runtime_error xml_load_error(const TopologyConfig& source, int error) {
  if (error == EINVAL) {
    return load_error(source,
                      "cannot load: not a valid hwloc XML topology (HWLOC_XML_VERBOSE=1 shows "
                      "the parser's reason; produce one with `lstopo --of xml FILE`)");
  }
  return load_error(source, "cannot load: " + errno_text(error));
}

// Far above any real machine's lstopo XML (a 512-CPU one is a few MiB); a bound so that a file
// that never ends cannot take the memory.
constexpr std::size_t kMaxTopologyXmlBytes = 64u << 20;

// The XML is read here, as a bounded regular file, and handed to hwloc as a buffer: hwloc's own
// reader would block forever on a FIFO and read /dev/zero until memory ran out.
std::string read_topology_xml(const TopologyConfig& source) {
  auto text = read_regular_file(source.argument, kMaxTopologyXmlBytes);
  if (text.ok()) return std::move(text.value);
  switch (text.error) {
    case ENOTSUP:
      throw load_error(source,
                       "not a regular file (a FIFO, device or directory would block or "
                       "never end); name an XML file written by `lstopo --of xml FILE`");
    case EFBIG:
      throw load_error(source, "larger than " + std::to_string(kMaxTopologyXmlBytes >> 20) +
                                   " MiB, more than any machine's topology; name an XML file "
                                   "written by `lstopo --of xml FILE`");
    default: throw load_error(source, "cannot load: " + errno_text(text.error));
  }
}

TopologyHandle open_topology(const TopologyConfig& source) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    throw load_error(source, "cannot initialise hwloc: " + errno_text(errno));
  }
  TopologyHandle topology(raw);

  // hwloc 2.x drops instruction caches by default, and its filters apply to XML and synthetic
  // input as well as to the live machine, so L1i would silently vanish without this. The cache
  // filter covers data, unified and instruction CPU caches alike.
  if (hwloc_topology_set_cache_types_filter(topology.get(), HWLOC_TYPE_FILTER_KEEP_ALL) != 0) {
    throw load_error(source, "cannot keep CPU caches: " + errno_text(errno));
  }
  // The exporter describes the machine, not the cgroup cpuset it runs in: a DaemonSet pod pinned
  // to a few CPUs must still see (and count on) all of them.
  // A die with one core would otherwise be merged away as mere structure, and RAPL counts per die.
  if (hwloc_topology_set_type_filter(topology.get(), HWLOC_OBJ_DIE, HWLOC_TYPE_FILTER_KEEP_ALL) !=
      0) {
    throw load_error(source, "cannot keep dies: " + errno_text(errno));
  }
  if (hwloc_topology_set_flags(topology.get(), HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED) != 0) {
    throw load_error(source, "cannot include disallowed CPUs: " + errno_text(errno));
  }

  // A failed set_xml/set_synthetic leaves the topology pointed at the live machine, so it must stop
  // here: loading anyway would quietly describe the wrong machine.
  std::string xml;  // hwloc reads the buffer during hwloc_topology_load
  switch (source.kind) {
    case TopologyConfig::Kind::system: break;
    case TopologyConfig::Kind::xml:
      xml = read_topology_xml(source);
      if (xml.size() >= static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
          hwloc_topology_set_xmlbuffer(topology.get(), xml.c_str(),
                                       static_cast<int>(xml.size() + 1)) != 0) {
        throw xml_load_error(source, errno);
      }
      break;
    case TopologyConfig::Kind::synthetic:
      if (hwloc_topology_set_synthetic(topology.get(), source.argument.c_str()) != 0) {
        // hwloc only says EINVAL; the description is already in the message through source.
        throw load_error(source,
                         "invalid synthetic description (expected e.g. \"pack:2 l3:1(size=32MiB) "
                         "core:4 pu:2\"; HWLOC_SYNTHETIC_VERBOSE=1 shows where parsing stopped)");
      }
      break;
  }

  if (hwloc_topology_load(topology.get()) != 0) {
    const int error = errno;
    if (source.kind == TopologyConfig::Kind::xml) throw xml_load_error(source, error);
    throw load_error(source, "cannot load: " + errno_text(error));
  }
  return topology;
}

// hwloc leaves os_index unknown for objects the OS does not number (a Core in an XML file written
// without one, say). The logical index is unique machine-wide, hence also within a package, which
// is all a `core` or `package` label needs.
unsigned index_of(const hwloc_obj* object) {
  return object->os_index != HWLOC_UNKNOWN_INDEX ? object->os_index : object->logical_index;
}

// A PU may lie in the cpuset of several NUMA nodes: hwloc gives CPU-less memory (HBM in flat mode,
// CXL, persistent memory) the locality of the CPUs near it. Linux numbers the nodes that hold CPUs
// first, so the lowest os_index is the node Linux itself reports for that CPU.
int numa_node_of(hwloc_topology_t topology, unsigned cpu) {
  int best = -1;
  for (hwloc_obj_t node = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, nullptr);
       node != nullptr; node = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, node)) {
    if (node->os_index == HWLOC_UNKNOWN_INDEX || node->cpuset == nullptr ||
        !hwloc_bitmap_isset(node->cpuset, cpu)) {
      continue;
    }
    const int index = static_cast<int>(node->os_index);
    if (best < 0 || index < best) best = index;
  }
  return best;
}

std::vector<HardwareThread> read_threads(hwloc_topology_t topology, const TopologyConfig& source) {
  std::vector<HardwareThread> threads;
  for (hwloc_obj_t pu = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_PU, nullptr); pu != nullptr;
       pu = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_PU, pu)) {
    if (pu->os_index == HWLOC_UNKNOWN_INDEX) {
      throw load_error(source, "PU L#" + std::to_string(pu->logical_index) +
                                   " has no OS index, so it has no Linux CPU number");
    }
    HardwareThread thread;
    thread.cpu = pu->os_index;
    // Core and Package ids are hwloc's os_index as is: on Linux these are core_id and
    // physical_package_id. A synthetic topology numbers each level 0..n-1 across the whole machine,
    // so there core ids do not repeat from one package to the next as they do on real hardware.
    // A PU without a Core above it (some virtual machines, some XML files) is its own core.
    const hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(topology, HWLOC_OBJ_CORE, pu);
    thread.core = core != nullptr ? index_of(core) : pu->os_index;
    const hwloc_obj_t package = hwloc_get_ancestor_obj_by_type(topology, HWLOC_OBJ_PACKAGE, pu);
    thread.package = package != nullptr ? index_of(package) : 0;
    thread.numa_node = numa_node_of(topology, thread.cpu);
    // hwloc's Linux backend numbers a Die by its die_id; where the kernel reports no dies there
    // is no Die object and the package is one die.
    const hwloc_obj_t die = hwloc_get_ancestor_obj_by_type(topology, HWLOC_OBJ_DIE, pu);
    thread.die = die != nullptr && die->os_index != HWLOC_UNKNOWN_INDEX ? die->os_index : 0;
    threads.push_back(thread);
  }
  if (threads.empty()) throw load_error(source, "no CPUs (PU objects) found");
  return threads;
}

CacheType cache_type_of(hwloc_obj_cache_type_t type) {
  switch (type) {
    case HWLOC_OBJ_CACHE_DATA: return CacheType::data;
    case HWLOC_OBJ_CACHE_INSTRUCTION: return CacheType::instruction;
    case HWLOC_OBJ_CACHE_UNIFIED: return CacheType::unified;
  }
  return CacheType::unified;
}

std::vector<Cache> read_caches(hwloc_topology_t topology,
                               const std::vector<HardwareThread>& threads) {
  std::set<unsigned> known;
  for (const HardwareThread& thread : threads) known.insert(thread.cpu);

  std::vector<Cache> caches;
  const int depth_count = hwloc_topology_get_depth(topology);
  for (int depth = 0; depth < depth_count; ++depth) {
    // hwloc_obj_type_is_cache() covers CPU caches only; memory-side caches are not per CPU.
    const int count = hwloc_get_nbobjs_by_depth(topology, depth);
    for (int i = 0; i < count; ++i) {
      const hwloc_obj_t object = hwloc_get_obj_by_depth(topology, depth, static_cast<unsigned>(i));
      if (object == nullptr || !hwloc_obj_type_is_cache(object->type)) continue;
      const auto& attr = object->attr->cache;
      Cache cache;
      cache.level = attr.depth;
      cache.type = cache_type_of(attr.type);
      cache.size_bytes = attr.size;
      cache.line_size_bytes = attr.linesize;
      cache.associativity = attr.associativity;
      for (int bit = hwloc_bitmap_first(object->cpuset); bit >= 0;
           bit = hwloc_bitmap_next(object->cpuset, bit)) {
        // Only CPUs that are PUs here: a cpuset may name CPUs hwloc knows of but did not keep.
        const auto cpu = static_cast<unsigned>(bit);
        if (known.count(cpu) != 0) cache.cpus.push_back(cpu);
      }
      if (!cache.cpus.empty()) caches.push_back(std::move(cache));
    }
  }
  return caches;
}

std::string plural(std::size_t count, const char* singular, const char* many) {
  return std::to_string(count) + " " + (count == 1 ? singular : many);
}

std::string describe(const std::vector<HardwareThread>& threads, const TopologyConfig& source) {
  std::set<unsigned> packages;
  std::set<std::pair<unsigned, unsigned>> cores;  // core ids repeat across packages
  for (const HardwareThread& thread : threads) {
    packages.insert(thread.package);
    cores.emplace(thread.package, thread.core);
  }
  return plural(packages.size(), "package", "packages") + ", " +
         plural(cores.size(), "core", "cores") + ", " + plural(threads.size(), "CPU", "CPUs") +
         " (" + source.to_string() + ")";
}

std::string api_version_text() {
  const unsigned version = hwloc_get_api_version();
  return std::to_string((version >> 16) & 0xffu) + "." + std::to_string((version >> 8) & 0xffu) +
         "." + std::to_string(version & 0xffu);
}

// The folder hwloc's Linux backend should take as "/" (HWLOC_FSROOT) so that it reads the same
// tree as every collector: the parent of --path.sysfs when that is a folder named "sys" that
// describes CPUs (a host's /sys mounted at /host/sys in a container). Empty for "/sys" itself, or
// when the tree holds no CPU description (test fixtures of RAPL files only): then hwloc reads the
// process's own /sys, and the log says so.
std::string fsroot_for(const PathsConfig& paths) {
  namespace fs = std::filesystem;
  const fs::path sysfs = fs::path(paths.sysfs).lexically_normal();
  if (sysfs == "/sys" || sysfs == "/sys/") return "";
  std::error_code error;
  if (sysfs.filename() != "sys" || !fs::is_directory(sysfs / "devices/system/cpu", error)) {
    return "";
  }
  return sysfs.parent_path().string();
}

// Sets an environment variable for the duration of a scope (hwloc reads HWLOC_FSROOT while
// loading). Startup is single-threaded then, so the environment is not read concurrently.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) previous_ = old;
    if (!value.empty()) setenv(name, value.c_str(), 1);
    active_ = !value.empty();
  }
  ~ScopedEnvironment() {
    if (!active_) return;
    if (previous_) {
      setenv(name_, previous_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  const char* name_;
  std::optional<std::string> previous_;
  bool active_ = false;
};

}  // namespace

Topology Topology::load(const TopologyConfig& source, const PathsConfig& paths) {
  const std::string fsroot =
      source.kind == TopologyConfig::Kind::system ? fsroot_for(paths) : std::string();
  const ScopedEnvironment hwloc_fsroot("HWLOC_FSROOT", fsroot);
  const TopologyHandle topology = open_topology(source);
  std::vector<HardwareThread> threads = read_threads(topology.get(), source);
  std::vector<Cache> caches = read_caches(topology.get(), threads);
  std::string description = describe(threads, source);
  if (!fsroot.empty()) description += " read under " + fsroot;
  // The CPU model is the machine's, whichever source describes its shape.
  return Topology(std::move(threads), std::move(caches), std::move(description),
                  read_cpu_identity(paths.procfs));
}

std::string hwloc_library_version() {
  // hwloc_get_api_version() is the API level, which only moves when the API does (hwloc 2.9.0
  // reports 2.8.0). The library stamps its own release into the root object's "hwlocVersion" info
  // on every load, so a one-PU synthetic load (no I/O) tells the release actually running.
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) == 0) {
    const TopologyHandle topology(raw);
    if (hwloc_topology_set_synthetic(topology.get(), "pu:1") == 0 &&
        hwloc_topology_load(topology.get()) == 0) {
      const char* release =
          hwloc_obj_get_info_by_name(hwloc_get_root_obj(topology.get()), "hwlocVersion");
      if (release != nullptr && *release != '\0') return release;
    }
  }
  return api_version_text();
}

}  // namespace hwperf
