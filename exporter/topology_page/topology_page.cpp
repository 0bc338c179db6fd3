#include "exporter/topology_page/topology_page.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "common/text.h"
#include "exporter/compression/gzip.h"

namespace hwperf {
namespace {

// One level of boxes between package and core: which group each CPU lies in, and how a group
// is drawn. Package and core are always the outermost and innermost; NUMA nodes and caches are
// ordered by what contains what on this machine (below).
struct Level {
  std::string css_class;                   // "pkg", "numa", "cache", "core"
  std::map<unsigned, std::int64_t> group;  // cpu -> group key
  std::map<std::int64_t, std::string> label;
  std::map<std::int64_t, std::string> id;     // element id, where scripts address the box
  std::map<std::int64_t, std::string> title;  // tooltip, where there is more to say
};

// Every group of `inner` lies within one group of `outer`.
bool nested_in(const Level& inner, const Level& outer) {
  std::map<std::int64_t, std::int64_t> parent;
  for (const auto& [cpu, key] : inner.group) {
    const auto found = outer.group.find(cpu);
    if (found == outer.group.end()) return false;
    const auto [it, inserted] = parent.emplace(key, found->second);
    if (!inserted && it->second != found->second) return false;
  }
  return true;
}

Level package_level(const Topology& topology) {
  Level level;
  level.css_class = "pkg";
  for (const HardwareThread& thread : topology.threads()) {
    const std::int64_t key = thread.package;
    level.group[thread.cpu] = key;
    level.label[key] = "Package P#" + std::to_string(thread.package);
    level.id[key] = "p" + std::to_string(thread.package);
  }
  return level;
}

std::optional<Level> numa_level(const Topology& topology) {
  Level level;
  level.css_class = "numa";
  for (const HardwareThread& thread : topology.threads()) {
    // A machine that reports no NUMA node for some CPU draws no NUMA boxes at all: a box that
    // holds only some of a package's CPUs would suggest a node that is not there.
    if (thread.numa_node < 0) return std::nullopt;
    level.group[thread.cpu] = thread.numa_node;
    level.label[thread.numa_node] = "NUMANode P#" + std::to_string(thread.numa_node);
    level.id[thread.numa_node] = "n" + std::to_string(thread.numa_node);
  }
  return level;
}

// One level per cache label of level 2 and above ("L3", "L2"), outermost first; L1 is said in
// the core's tooltip instead, as a box of its own per core would only repeat the core.
std::vector<Level> cache_levels(const Topology& topology) {
  std::map<std::string, Level, std::greater<>> by_label;
  const auto& caches = topology.caches();
  for (std::size_t i = 0; i < caches.size(); ++i) {
    const Cache& cache = caches[i];
    if (cache.level < 2) continue;
    Level& level = by_label[cache.label()];
    level.css_class = "cache";
    const auto key = static_cast<std::int64_t>(i);
    for (unsigned cpu : cache.cpus) level.group[cpu] = key;
    level.label[key] = cache.label() + " (" + lstopo_size(cache.size_bytes) + ")";
  }
  std::vector<Level> levels;
  for (auto& [label, level] : by_label) {
    // A cache level some CPUs lack cannot be drawn as boxes around every CPU.
    if (level.group.size() == topology.threads().size()) levels.push_back(std::move(level));
  }
  return levels;
}

Level core_level(const Topology& topology) {
  std::map<unsigned, std::string> first_level_caches;  // cpu -> "L1d 48KB, L1i 32KB"
  for (const Cache& cache : topology.caches()) {
    if (cache.level != 1) continue;
    for (unsigned cpu : cache.cpus) {
      std::string& text = first_level_caches[cpu];
      text += (text.empty() ? "" : ", ") + cache.label() + " " + lstopo_size(cache.size_bytes);
    }
  }
  Level level;
  level.css_class = "core";
  for (const HardwareThread& thread : topology.threads()) {
    // Core ids repeat across packages.
    const std::int64_t key = (static_cast<std::int64_t>(thread.package) << 32) | thread.core;
    level.group[thread.cpu] = key;
    level.label[key] = "Core P#" + std::to_string(thread.core);
    level.id[key] = "k" + std::to_string(thread.package) + "-" + std::to_string(thread.core);
    std::string title =
        "Package P#" + std::to_string(thread.package) + " Core P#" + std::to_string(thread.core);
    if (const auto l1 = first_level_caches.find(thread.cpu); l1 != first_level_caches.end()) {
      title += ": " + l1->second;
    }
    level.title[key] = title;
  }
  return level;
}

// Package, then NUMA node and caches with whatever contains the others outermost (a NUMA node
// holds its L3 on most machines; an L3 spans two nodes under sub-NUMA clustering), then core.
// Where both contain each other (one set of CPUs), NUMA comes first, then larger caches, as
// the issue's order has it. A level that crosses its parent's boundaries is drawn split.
std::vector<Level> levels_of(const Topology& topology) {
  std::vector<Level> middle;
  if (auto numa = numa_level(topology)) middle.push_back(std::move(*numa));
  for (auto& cache : cache_levels(topology)) middle.push_back(std::move(cache));
  for (std::size_t i = 1; i < middle.size(); ++i) {
    for (std::size_t j = i; j > 0; --j) {
      const bool later_contains_earlier = nested_in(middle[j - 1], middle[j]);
      const bool earlier_contains_later = nested_in(middle[j], middle[j - 1]);
      if (!later_contains_earlier || earlier_contains_later) break;
      std::swap(middle[j - 1], middle[j]);
    }
  }
  std::vector<Level> levels;
  levels.push_back(package_level(topology));
  for (auto& level : middle) levels.push_back(std::move(level));
  levels.push_back(core_level(topology));
  return levels;
}

class Renderer {
 public:
  explicit Renderer(std::vector<Level> levels) : levels_(std::move(levels)) {}

  void render(const std::vector<unsigned>& cpus, std::size_t depth, std::string& out) {
    if (depth == levels_.size()) {
      for (unsigned cpu : cpus) {
        const std::string number = std::to_string(cpu);
        out += "<div class=\"pu\" id=\"c" + number + "\">" + number + "</div>\n";
      }
      return;
    }
    const Level& level = levels_[depth];
    // Groups in the order of their lowest CPU; each keeps its CPUs ascending.
    std::vector<std::pair<std::int64_t, std::vector<unsigned>>> groups;
    std::map<std::int64_t, std::size_t> index;
    for (unsigned cpu : cpus) {
      const std::int64_t key = level.group.at(cpu);
      const auto [it, inserted] = index.emplace(key, groups.size());
      if (inserted) groups.push_back({key, {}});
      groups[it->second].second.push_back(cpu);
    }
    for (const auto& [key, members] : groups) {
      // A box holding exactly one box of the next level, over the same CPUs, is drawn as one
      // box with both labels, as lstopo draws "L2 (1024KB) + Core L#0": a level of nesting
      // fewer keeps 512 threads on one screen. Only where at most one of them has an id.
      std::vector<std::pair<const Level*, std::int64_t>> merged{{&level, key}};
      std::size_t next = depth + 1;
      bool has_id = level.id.count(key) != 0;
      while (next < levels_.size()) {
        const Level& inner = levels_[next];
        const std::int64_t inner_key = inner.group.at(members.front());
        const bool same =
            std::all_of(members.begin(), members.end(),
                        [&](unsigned cpu) { return inner.group.at(cpu) == inner_key; }) &&
            covers(inner, inner_key, members.size());
        const bool inner_id = inner.id.count(inner_key) != 0;
        if (!same || (has_id && inner_id)) break;
        merged.push_back({&inner, inner_key});
        has_id = has_id || inner_id;
        ++next;
      }
      open_box(merged, out);
      render(members, next, out);
      out += "</div>\n";
    }
  }

 private:
  // The group `key` of `level` has `size` CPUs in all (not only among those being drawn).
  static bool covers(const Level& level, std::int64_t key, std::size_t size) {
    std::size_t count = 0;
    for (const auto& entry : level.group) count += entry.second == key ? 1 : 0;
    return count == size;
  }

  void open_box(const std::vector<std::pair<const Level*, std::int64_t>>& merged,
                std::string& out) {
    std::string classes = "box", id, title, label, power;
    for (const auto& [level, key] : merged) {
      if (classes.find(" " + level->css_class) == std::string::npos) {
        classes += " " + level->css_class;
      }
      // A group drawn split across two parents keeps its id on the first part only: ids stay
      // unique.
      if (const auto found = level->id.find(key);
          found != level->id.end() && used_ids_.insert(found->second).second) {
        id = found->second;
      }
      if (const auto found = level->title.find(key); found != level->title.end()) {
        title = found->second;
      }
      label += (label.empty() ? "" : " + ") + level->label.at(key);
      // Power is drawn on the package boxes (RAPL counts per package and die).
      if (level->css_class == "pkg") {
        power = " <span class=\"w\" id=\"w" + std::to_string(key) + "\"></span>";
      }
    }
    out += "<div class=\"" + classes + "\"";
    if (!id.empty()) out += " id=\"" + html_escape_text(id) + "\"";
    if (!title.empty()) out += " title=\"" + html_escape_text(title) + "\"";
    out += "><div class=\"t\">" + html_escape_text(label) + power + "</div>\n";
  }

  std::vector<Level> levels_;
  std::set<std::string> used_ids_;
};

// Beyond this many hardware threads the core labels go (the core's tooltip still names it), so
// that 512 threads fit one screen.
constexpr std::size_t kCompactAbove = 64;

std::string render_page(const Topology& topology, const std::string& telemetry_path) {
  const std::size_t cpus = topology.threads().size();
  std::string out;
  out.reserve(160 * cpus + 2048);
  // Relative URLs: the page keeps working behind a reverse proxy that adds a path prefix.
  out +=
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<title>hwperf_exporter: topology</title>\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<link rel=\"icon\" href=\"data:,\">\n"
      "<link rel=\"stylesheet\" href=\"topology.css\">\n"
      "<script src=\"topology.js\" defer></script>\n"
      "</head><body>\n<header>\n<h1>hwperf_exporter topology</h1>\n<span id=\"desc\">" +
      html_escape_text(topology.description()) + "</span>\n<a href=\"" +
      html_escape_text(telemetry_path.size() > 1 ? telemetry_path.substr(1) : telemetry_path) +
      "\">metrics</a> <a href=\"topology.json\">json</a>\n"
      "<label>colour by <select id=\"family\"></select></label>\n"
      "<span id=\"legend\"><span id=\"lo\"></span> <span class=\"scale\"></span> "
      "<span id=\"hi\"></span></span>\n<span id=\"status\">loading</span>\n</header>\n"
      "<main id=\"machine\" class=\"" +
      std::string(cpus > kCompactAbove ? "compact" : "full") + "\" data-cpus=\"" +
      std::to_string(cpus) + "\">\n";
  Renderer(levels_of(topology)).render(topology.cpus(), 0, out);
  out += "</main>\n</body></html>\n";
  return out;
}

void add_security_headers(HttpResponse& response, const char* cache_control) {
  response.headers.emplace_back("Content-Security-Policy", std::string(topology_page_csp()));
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  response.headers.emplace_back("Referrer-Policy", "no-referrer");
  response.headers.emplace_back("Cache-Control", cache_control);
}

}  // namespace

std::string lstopo_size(std::uint64_t bytes) {
  // hwloc's hwloc_memory_size_printf_value/unit (non-verbose): the unit is chosen so that the
  // number stays at least 10 in it, and rounding is to nearest.
  static constexpr const char* kUnits[] = {"KB", "MB", "GB", "TB"};
  std::size_t unit = 0;
  unsigned shift = 10;
  while (unit + 1 < std::size(kUnits) && bytes >= (std::uint64_t{10} << (shift + 10))) {
    ++unit;
    shift += 10;
  }
  const std::uint64_t rounded = ((bytes >> (shift - 1)) + 1) >> 1;
  return std::to_string(rounded) + kUnits[unit];
}

TopologyPage::TopologyPage(const Topology& topology, const std::string& telemetry_path)
    : html_(render_page(topology, telemetry_path)) {}

bool TopologyPage::serves(std::string_view path) {
  return path == kPagePath || path == kJsonPath || path == kScriptPath || path == kStylePath;
}

HttpResponse TopologyPage::json_response(const std::vector<prometheus::MetricFamily>& families,
                                         bool gzip) const {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  HttpResponse response;
  response.content_type = "application/json";
  response.body = topology_json(families, std::chrono::duration<double>(now).count());
  // At 512 CPUs the totals are about 100 KB of digits, polled every second: gzip takes most.
  if (gzip) {
    response.body = gzip_compress(response.body);
    response.headers.emplace_back("Content-Encoding", "gzip");
  }
  response.headers.emplace_back("Vary", "Accept-Encoding");
  // Totals change with every read; a cached one would make a zero rate.
  add_security_headers(response, "no-store");
  return response;
}

HttpResponse TopologyPage::static_response(std::string_view path) const {
  HttpResponse response;
  if (path == kScriptPath) {
    response.content_type = "text/javascript; charset=utf-8";
    response.body = std::string(topology_page_script());
  } else if (path == kStylePath) {
    response.content_type = "text/css; charset=utf-8";
    response.body = std::string(topology_page_style());
  } else {
    response.content_type = "text/html; charset=utf-8";
    response.body = html_;
  }
  // Revalidated on each load, so an upgraded exporter never runs an old script on a new page.
  add_security_headers(response, "no-cache");
  return response;
}

}  // namespace hwperf
