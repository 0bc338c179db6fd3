// The one interface every collector implements, and the capabilities some also have. A collector
// builds fresh families on every scrape (collect) and may throw; CollectorSet (collector_set.h) is
// the only caller and the only catch site. What else a collector can do it says by implementing
// a capability beside Collector, which CollectorSet looks for once, when the collector is added:
//   ConstantFamilies    families that never change once it is built, serialized once at startup
//   PreparedText        its series written into the exposition from text made once
//   NamedTargets        what a scrape may name with ?target=, and a rescan on demand
//   ConfiguredFamilies  families it exports under names the user chose, checked unique
// (Prometheus' client_golang asks a Collector for Describe and Collect alone, and node_exporter's
// Collector has only Update: whatever else a reader must learn is opt-in.)
#pragma once

#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/exposition_text.h"
#include "common/interface.h"

namespace hwperf {

// A family a collector exports under a name the user chose (a PAPI event's `metric:`), with where
// that name was written (file:line:column, or "" when built in).
struct FamilyDeclaration {
  std::string name;
  std::string where;
};

class Collector : public Interface {
 public:
  // Stable, short, [a-z_]: the value of the `collector` label in the self metrics.
  virtual std::string name() const = 0;
  // Appends this collector's families. Must be safe to call from several threads at once.
  virtual void collect(std::vector<prometheus::MetricFamily>& out) = 0;
};

// The capabilities: interfaces a collector implements beside Collector when it has them. None is
// ever owned or deleted through its pointer.
class ConstantFamilies {
 public:
  // Appends the families that never change once the collector is built (the topology, cache
  // geometry). The exporter gathers them once at startup and serializes them once per format, so
  // a scrape costs nothing for them however large the machine; collect() leaves them out.
  virtual void collect_constant(std::vector<prometheus::MetricFamily>& out) const = 0;

 protected:
  ~ConstantFamilies() = default;
};

class PreparedText {
 public:
  // Appends to a /metrics exposition in `format` the text of the families collect() would
  // append, byte for byte, from text made once (collectors/prepared_family.h): each sample's
  // value is all a scrape writes, which is most of what a small scrape costs otherwise. What it
  // appended before throwing is removed by the caller. Must be safe to call from several threads
  // at once.
  virtual void collect_text(std::string& out, ExpositionFormat format) = 0;

 protected:
  ~PreparedText() = default;
};

class NamedTargets {
 public:
  // The configured targets a scrape may name with ?target= (process targets).
  virtual std::vector<std::string> target_names() const = 0;
  // Like collect(), for only the listed targets (each one of target_names()). Reads only: a
  // filter never attaches or opens anything.
  virtual void collect_targets(std::vector<prometheus::MetricFamily>& out,
                               const std::vector<std::string>& names) = 0;
  // Looks again, now, at what the collector discovers in the background (process targets rescan
  // /proc): experiment mode calls it once its command has executed, so that what a scrape shows
  // of the command (its name after exec) need not wait for the next rescan.
  virtual void refresh() = 0;

 protected:
  ~NamedTargets() = default;
};

class ConfiguredFamilies {
 public:
  // The families collect() exports under configured names, so that CollectorSet can refuse at
  // startup a name another collector exports too. Constant families need not be listed.
  virtual std::vector<FamilyDeclaration> declared_families() const = 0;

 protected:
  ~ConfiguredFamilies() = default;
};

// What a collector offers beside collect(), found once (dynamic_cast): null where it has not.
struct Capabilities {
  const ConstantFamilies* constant = nullptr;
  PreparedText* text = nullptr;
  NamedTargets* targets = nullptr;
  const ConfiguredFamilies* configured = nullptr;
};
Capabilities capabilities_of(Collector& collector);

// For a caller holding a Collector (the set, tests, the dry run), each capability's answer, or
// what a collector without it amounts to: no constant family, collect()'s families serialized, no
// configured name.
void collect_constant(Collector& collector, std::vector<prometheus::MetricFamily>& out);
void collect_text(Collector& collector, std::string& out, ExpositionFormat format);
std::vector<FamilyDeclaration> declared_families(Collector& collector);

}  // namespace hwperf
