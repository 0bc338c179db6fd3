#include "collectors/rapl/rapl_collector.h"

#include <array>
#include <cmath>
#include <iterator>
#include <cstdio>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "collectors/exposition_text.h"
#include "collectors/metrics.h"
#include "collectors/prepared_family.h"
#include "common/text.h"
#include "config/errors.h"
#include "common/log.h"

namespace hwperf {
namespace rapl {
namespace {

const char* energy_help(Domain domain) {
  switch (domain) {
    case Domain::package:
      return "Energy used by the CPU package (RAPL package domain) since the exporter started.";
    case Domain::core:
      return "Energy used by the cores of the package (RAPL PP0; on AMD the sum of the per-core "
             "counters) since the exporter started. Part of the package domain.";
    case Domain::uncore:
      return "Energy used by the package's uncore, usually the integrated GPU (RAPL PP1), since "
             "the exporter started. Part of the package domain.";
    case Domain::dram:
      return "Energy used by the DRAM attached to the package (RAPL DRAM domain) since the "
             "exporter started.";
    case Domain::psys:
      return "Energy used by the whole platform as the SoC measures it (RAPL psys domain) since "
             "the exporter started.";
  }
  return "";
}

std::size_t domain_index(Domain domain) {
  std::size_t index = 0;
  while (index + 1 < std::size(kAllDomains) && kAllDomains[index] != domain) ++index;
  return index;
}

struct ProbeStatus {
  RaplInterface interface = RaplInterface::automatic;
  std::string reason;
  bool ok = false;
};

class RaplCollector final : public Collector, public PreparedText {
 public:
  RaplCollector(std::vector<ProbeStatus> probes, std::unique_ptr<RaplEngine> engine,
                PowerCeilings ceilings, GuardPlan plan)
      : probes_(std::move(probes)),
        ceilings_(std::move(ceilings)),
        plan_(plan),
        health_(health_families()),
        engine_(std::move(engine)) {
    for (Domain domain : kAllDomains) {
      energy_names_[domain] = counter_name({"rapl", to_string(domain), "joules"});
    }
    if (engine_ && plan_.needed) {
      RaplEngine* engine_ptr = engine_.get();
      guard_ = std::make_unique<WrapGuard>(std::chrono::duration<double>(plan_.interval_seconds),
                                           [engine_ptr] { engine_ptr->sample(); });
    }
    build_constant_families();
    prepare_text();
  }

  std::string name() const override { return "rapl"; }

  // What cannot change after startup, built once and copied into every scrape.
  void build_constant_families() {
    using prometheus::MetricType;
    auto& out = constant_;
    out.push_back(single_gauge(metric_name({"rapl", "energy", "available"}),
                               "Whether RAPL energy is being measured (1) or no interface could "
                               "be used (0; the log says why and how to fix it).",
                               {}, engine_ ? 1.0 : 0.0));
    auto probes = make_gauge_family({"rapl", "interface", "probe", "success"},
                                    "Whether the RAPL interface could be used when the exporter "
                                    "started, and if not why: absent, permission_denied, "
                                    "unsupported, error.");
    for (const auto& probe : probes_) {
      add_gauge(probes, {{"interface", to_string(probe.interface)}, {"reason", probe.reason}},
                probe.ok ? 1.0 : 0.0);
    }
    append_unless_empty(out, std::move(probes));
    if (!engine_) return;

    out.push_back(single_gauge(metric_name({"rapl", "interface", "info"}),
                               "The RAPL interface energy is read through.",
                               {{"interface", to_string(engine_->source().interface())}}, 1.0));
    if (guard_) {
      out.push_back(single_gauge(metric_name({"rapl", "wrap", "guard", "interval", "seconds"}),
                                 "How often the wrap guard reads every energy counter, so that "
                                 "none wraps twice (perf: passes 2^31 hardware units, which one "
                                 "kernel update cannot carry) between reads.",
                                 {}, plan_.interval_seconds));
    }
    auto ceiling = make_gauge_family({"rapl", "power", "ceiling", "watts"},
                                     "The most power a package is taken to draw: energy deltas "
                                     "above it (plus 1 s of slack) are rejected, and it sets the "
                                     "wrap guard's period.");
    for (const auto& [package, watts] : ceilings_.package_watts) {
      add_gauge(ceiling, {{"package", std::to_string(package)}}, watts);
    }
    append_unless_empty(out, std::move(ceiling));
  }

  void collect(std::vector<prometheus::MetricFamily>& out) override {
    out.insert(out.end(), constant_.begin(), constant_.end());
    if (!engine_) return;
    add_series_families(engine_->snapshot(), out);
  }

  // The same bytes as collect()'s families, from text made once (prepare_text): the constant
  // families whole, and for each sample only its value.
  void collect_text(std::string& out, ExpositionFormat format) override {
    out += constant_text_[static_cast<std::size_t>(format)];
    if (!engine_) return;
    const auto series = engine_->snapshot();
    // The engine's series are fixed when it is built (series_keys), so this never throws; were
    // it ever to change, a failed scrape says so where prepared labels would mislabel values.
    if (series.size() != prepared_domain_.size()) {
      throw std::logic_error("rapl: the engine has " + std::to_string(series.size()) + " series, " +
                             std::to_string(prepared_domain_.size()) + " were prepared at startup");
    }
    for (std::size_t domain = 0; domain < std::size(kAllDomains); ++domain) {
      PreparedFamily::Writer energy(prepared_energy_[domain], out, format);
      for (std::size_t s = 0; s < series.size(); ++s) {
        if (series[s].frozen || prepared_domain_[s] != domain) continue;
        energy.sample(prepared_position_[s], series[s].tally.energy.joules());
      }
    }
    for (std::size_t property = 0; property < health_.size(); ++property) {
      PreparedFamily::Writer writer(prepared_health_[property], out, format);
      for (std::size_t s = 0; s < series.size(); ++s) {
        writer.sample(s, health_[property].value(series[s]));
      }
    }
  }

 private:
  void add_series_families(const std::vector<SeriesSnapshot>& series,
                           std::vector<prometheus::MetricFamily>& out) {
    using prometheus::MetricType;
    // One slot per domain, in kAllDomains' order (the order a map by domain had), and every
    // family's samples reserved at once: a scrape allocates what it exports, little more.
    std::array<prometheus::MetricFamily, std::size(kAllDomains)> energy;
    auto health = health_;
    for (auto& property : health) property.family.metric.reserve(series.size());
    for (const auto& s : series) {
      const SeriesLabels& labels = labels_for(s.key);
      if (!s.frozen) {
        prometheus::MetricFamily& family = energy[domain_index(s.key.domain)];
        if (family.name.empty()) {
          family = make_family(energy_names_.at(s.key.domain), energy_help(s.key.domain),
                               MetricType::Counter);
          family.metric.reserve(series.size());
        }
        add_counter(family, labels.place, s.tally.energy.joules());
      }
      for (auto& property : health) property.add(labels.with_domain, s);
    }
    for (auto& family : energy) {
      if (!family.name.empty()) out.push_back(std::move(family));
    }
    if (!series.empty()) {
      for (auto& property : health) out.push_back(std::move(property.family));
    }
  }

  // The constant families' text in both formats, and each family of the engine's series (fixed
  // when it was built) prepared with every series it can have.
  void prepare_text() {
    for (const auto format : {ExpositionFormat::text_0_0_4, ExpositionFormat::openmetrics_1_0_0}) {
      append_families(constant_text_[static_cast<std::size_t>(format)], constant_, format);
    }
    if (!engine_) return;
    const std::vector<SeriesKey> keys = engine_->series_keys();
    std::array<prometheus::MetricFamily, std::size(kAllDomains)> energy;
    for (std::size_t domain = 0; domain < std::size(kAllDomains); ++domain) {
      energy[domain] =
          make_family(energy_names_.at(kAllDomains[domain]), energy_help(kAllDomains[domain]),
                      prometheus::MetricType::Counter);
    }
    auto health = health_;
    for (const auto& key : keys) {
      const SeriesLabels& labels = labels_for(key);
      const std::size_t domain = domain_index(key.domain);
      prepared_domain_.push_back(domain);
      prepared_position_.push_back(energy[domain].metric.size());
      add_counter(energy[domain], labels.place, 0.0);
      for (auto& property : health) property.add(labels.with_domain, SeriesSnapshot{});
    }
    for (const auto& family : energy) prepared_energy_.emplace_back(family);
    for (const auto& property : health) prepared_health_.emplace_back(property.family);
  }

  // A series' labels: where it is (package, die), and with its domain for the health families.
  struct SeriesLabels {
    Labels place;
    Labels with_domain;
  };
  // The series never change after startup, so their labels are made once, at the first scrape
  // that sees each.
  const SeriesLabels& labels_for(const SeriesKey& key) {
    std::lock_guard<std::mutex> lock(labels_mutex_);
    auto it = labels_.find(key);
    if (it == labels_.end()) {
      SeriesLabels made;
      if (key.package) made.place.emplace_back("package", std::to_string(*key.package));
      if (key.die) made.place.emplace_back("die", std::to_string(*key.die));
      made.with_domain = {{"domain", std::string(to_string(key.domain))}};
      made.with_domain.insert(made.with_domain.end(), made.place.begin(), made.place.end());
      it = labels_.emplace(key, std::move(made)).first;
    }
    return it->second;
  }

  std::mutex labels_mutex_;
  std::map<SeriesKey, SeriesLabels> labels_;  // guarded by labels_mutex_; entries never erased
  std::vector<ProbeStatus> probes_;
  PowerCeilings ceilings_;
  GuardPlan plan_;
  std::map<Domain, std::string> energy_names_;
  // How each series' counter is kept, one family per property: named once, filled per scrape.
  struct Health {
    prometheus::MetricFamily family;
    double (*value)(const SeriesSnapshot& s);
    void add(const Labels& labels, const SeriesSnapshot& s) {
      if (family.type == prometheus::MetricType::Counter) {
        add_counter(family, labels, value(s));
      } else {
        add_gauge(family, labels, value(s));
      }
    }
  };
  static std::vector<Health> health_families() {
    return {
        {make_counter_family({"rapl", "wraps"},
                             "Counter wrap-arounds seen and accounted for, per RAPL domain."),
         [](const SeriesSnapshot& s) { return static_cast<double>(s.tally.wraps); }},
        {make_counter_family({"rapl", "rejected", "deltas"},
                             "Energy deltas rejected as implausible (more than the power ceiling "
                             "allows for the interval) and not added, per RAPL domain."),
         [](const SeriesSnapshot& s) { return static_cast<double>(s.tally.rejected); }},
        {make_counter_family({"rapl", "read", "errors"},
                             "Failed reads of a RAPL energy counter, per RAPL domain."),
         [](const SeriesSnapshot& s) { return static_cast<double>(s.tally.read_errors); }},
        {make_gauge_family({"rapl", "energy", "frozen"},
                           "1 while the domain's energy counter has not changed once since "
                           "startup, 5 s and more (exposed but not measured, as some hypervisors "
                           "do): its joules are then not exported. 0 otherwise."),
         [](const SeriesSnapshot& s) { return s.frozen ? 1.0 : 0.0; }},
    };
  }
  std::vector<Health> health_;
  std::vector<prometheus::MetricFamily> constant_;
  // The text path's (collect_text): the constant families' text per format, each series' energy
  // family (kAllDomains' order) and place in it, in the engine's order, and one prepared family
  // per entry of health_.
  std::array<std::string, 2> constant_text_;
  std::vector<std::size_t> prepared_domain_;
  std::vector<std::size_t> prepared_position_;
  std::vector<PreparedFamily> prepared_energy_;
  std::vector<PreparedFamily> prepared_health_;
  std::unique_ptr<RaplEngine> engine_;
  // Declared after engine_ so that it is destroyed (stopped and joined) before the engine it
  // ticks.
  std::unique_ptr<WrapGuard> guard_;
};

std::string describe_counters(const std::vector<CounterInfo>& counters) {
  std::map<Domain, int> per_domain;
  for (const auto& counter : counters) ++per_domain[counter.domain];
  std::string text;
  for (const auto& [domain, count] : per_domain) {
    if (!text.empty()) text += ", ";
    text += std::string(to_string(domain)) + " x" + std::to_string(count);
  }
  return text;
}

}  // namespace

std::unique_ptr<Collector> build_rapl_collector(std::vector<ProbeResult> probes,
                                                const RaplCollectorConfig& config,
                                                const Topology& topology, RaplEngine::NowFn now) {
  std::vector<ProbeStatus> statuses;
  std::unique_ptr<EnergySource> source;
  std::vector<std::string> failures;
  for (auto& probe : probes) {
    const bool ok = probe.source != nullptr;
    statuses.push_back({probe.interface, ok ? "ok" : probe.reason, ok});
    if (ok) {
      source = std::move(probe.source);
    } else {
      failures.push_back(probe.message);
    }
  }
  // With a working interface the others' problems are background; without one they are the
  // whole story, one line each with its remedy.
  for (const auto& message : failures) {
    if (source) {
      log::info(message);
    } else {
      log::warn(message);
    }
  }
  if (!source) {
    std::string tried;
    for (const auto& status : statuses)
      tried += (tried.empty() ? "" : ", ") + std::string(to_string(status.interface));
    log::warn("rapl: energy is unavailable (tried " + tried +
              "); exporting hwperf_rapl_energy_available 0 and no energy, the other collectors "
              "keep serving");
    return std::make_unique<RaplCollector>(std::move(statuses), nullptr, PowerCeilings{},
                                           GuardPlan{});
  }

  const auto& counters = source->counters();
  PowerCeilings ceilings = choose_power_ceilings(
      config.max_power_watts, source->package_power_hints(), topology.packages());
  std::vector<double> counter_ceilings;
  for (const auto& counter : counters)
    counter_ceilings.push_back(counter_ceiling(counter, ceilings));
  const GuardPlan plan =
      plan_wrap_guard(counters, counter_ceilings, config.wrap_guard_interval_seconds);

  double largest = 0;
  for (const auto& entry : ceilings.package_watts) largest = std::max(largest, entry.second);
  // Every interface has a range now (perf's is what one kernel update carries), so this shows
  // only for a source whose counters cannot lose counts between reads.
  std::string guard_text = "no wrap guard (no counter can wrap between reads)";
  if (plan.needed) {
    guard_text = "wrap guard every " + format_number(plan.interval_seconds) + " s (" +
                 (plan.configured ? "configured" : "derived") + "; counters can wrap after " +
                 format_number(plan.derived_seconds * kGuardSafetyFactor) + " s at the ceiling)";
    if (plan.configured && plan.interval_seconds > plan.derived_seconds) {
      log::warn("rapl: collectors.rapl.wrap_guard_interval_seconds=" +
                format_number(plan.interval_seconds) + " is longer than the safe " +
                format_number(plan.derived_seconds) +
                " s: near the power ceiling a counter can wrap twice between reads and energy is "
                "lost");
    } else if (!plan.configured && plan.derived_seconds < kGuardMinSeconds) {
      log::warn("rapl: counters can wrap after " +
                format_number(plan.derived_seconds * kGuardSafetyFactor) +
                " s at the power ceiling; the wrap guard runs at its floor of " +
                format_number(kGuardMinSeconds) +
                " s; set collectors.rapl.wrap_guard_interval_seconds to read faster");
    }
  }
  log::info("rapl: using " + std::string(to_string(source->interface())) + ": " +
            describe_counters(counters) + "; power ceiling " + format_number(largest) +
            " W per package (" + ceilings.origin + "), " + guard_text);

  auto engine =
      std::make_unique<RaplEngine>(std::move(source), std::move(counter_ceilings), std::move(now));
  return std::make_unique<RaplCollector>(std::move(statuses), std::move(engine),
                                         std::move(ceilings), plan);
}

}  // namespace rapl

}  // namespace hwperf
