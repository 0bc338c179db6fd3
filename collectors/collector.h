// The one interface every collector implements. A collector builds fresh families on every
// scrape, or writes them straight into the exposition (collect_text), and may throw;
// CollectorSet (collector_set.h) is the only caller and the only catch site. What never changes
// is handed over once, at startup (collect_constant).
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
  // Appends to a /metrics exposition in `format` the text of the families collect() would
  // append, byte for byte: by default collect()'s families, serialized. A collector whose series
  // are fixed at startup writes them from text made once (collectors/prepared_family.h) instead,
  // which is most of what a small scrape costs otherwise. What it appended before throwing is
  // removed by the caller. Must be safe to call from several threads at once.
  virtual void collect_text(std::string& out, ExpositionFormat format) {
    std::vector<prometheus::MetricFamily> families;
    collect(families);
    append_families(out, families, format);
  }
  // Appends the families that never change once the collector is built (the topology, cache
  // geometry). The exporter gathers them once at startup and serializes them once per format, so
  // a scrape costs nothing for them however large the machine; collect() leaves them out.
  virtual void collect_constant(std::vector<prometheus::MetricFamily>& out) const { (void)out; }
  // The families collect() exports under configured names, so that CollectorSet can refuse at
  // startup a name another collector exports too. Constant families need not be listed.
  virtual std::vector<FamilyDeclaration> declared_families() const { return {}; }
  // The configured targets a scrape may name with ?target= (process targets); none by default.
  virtual std::vector<std::string> target_names() const { return {}; }
  // Like collect(), for only the listed targets (each one of target_names()). Reads only: a
  // filter never attaches or opens anything.
  virtual void collect_targets(std::vector<prometheus::MetricFamily>& out,
                               const std::vector<std::string>& names) {
    (void)names;
    collect(out);
  }
  // Looks again, now, at what the collector discovers in the background (process targets rescan
  // /proc): experiment mode calls it once its command has executed, so that what a scrape shows
  // of the command (its name after exec) need not wait for the next rescan.
  virtual void refresh() {}
};

}  // namespace hwperf
