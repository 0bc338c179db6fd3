#include "exporter/reference.h"

#include <algorithm>

#include "common/text.h"
#include "collectors/configuration.h"
#include "config/config.h"
#include "config/web_config.h"
#include "exporter/cli.h"

namespace hwperf {
namespace {

// What a key means, written once per key. Which keys exist, what each takes and its default come
// from the readers; only what they cannot say is here.
struct KeyText {
  std::string path;
  std::string meaning;
  std::string flag = "";           // the flag that overrides it
  std::string value = "";          // when the reader's own "expected ..." says too little
  std::string default_value = "";  // when --check-config does not dump it
};

const std::vector<KeyText>& config_texts() {
  static const std::vector<KeyText> texts = {
      {"web.listen_address",
       "where to serve; `:PORT` is every IPv4 address (Debian 12's CivetWeb has no IPv6 support, "
       "so an IPv6 address is refused with that explanation)",
       "--web.listen-address"},
      {"web.telemetry_path",
       "path of the metrics endpoint; it must start with `/` and cannot be `/` (the landing page) "
       "or `/-/healthy`",
       "--web.telemetry-path"},
      {"paths.sysfs",
       "sysfs root: hwloc's topology, RAPL powercap zones, hwmon power meters, perf PMU "
       "descriptions, CPU hotplug",
       "--path.sysfs"},
      {"paths.procfs", "procfs root: `cpuinfo`, `sys/kernel/perf_event_paranoid`", "--path.procfs"},
      {"paths.devfs", "devfs root: `cpu/N/msr`", "--path.devfs"},
      {"topology.source",
       "where the topology comes from: the live machine, an XML file written by "
       "`lstopo --of xml`, or an hwloc synthetic description such as "
       "`synthetic:pack:2 core:4 pu:2` ([topology](collectors/topology.md))"},
      {"log.level", "least severe level logged (logfmt on stderr)", "--log.level"},
      {"groups",
       "your event groups, by name: `events` maps the names formulas use to events (a name or "
       "`{event, metric, help}`), `metrics` maps metric names to `{expr, help}`, `expr` being "
       "arithmetic over those names, each standing for its event's rate "
       "([groups](collectors/groups.md))",
       "", "`{NAME: {events: {VAR: EVENT, ...}, metrics: {METRIC: {expr: FORMULA, help: TEXT}}}}`",
       "none"},
      {"collectors.topology.enabled",
       "export `hwperf_cpu_info` and the cache families ([topology](collectors/topology.md))"},
      {"collectors.papi.enabled", "count PAPI events ([PAPI](collectors/papi.md))"},
      {"collectors.papi.cpus",
       "CPUs counted: every online CPU of the topology, or a Linux CPU list; a CPU that is not "
       "online is a configuration error"},
      {"collectors.papi.granularity",
       "`cpu`: one series per hardware thread; `core`, `package`, `machine`: summed over each"},
      {"collectors.papi.domain",
       "what is counted: user mode, kernel mode or both; an event's own `:u`/`:k` qualifier wins"},
      {"collectors.papi.attach",
       "how counters are bound to CPUs: `cpu_attach` (PAPI_CPU_ATTACH, needs a hardware PMU), "
       "`qualifier` (`cpu=N` on each event, works without one), `auto` the first where it works "
       "([binding](collectors/papi.md#how-counters-are-bound-to-cpus))"},
      {"collectors.papi.multiplex",
       "let PAPI time-share counters when events outnumber them (counts become scaled "
       "estimates)"},
      {"collectors.papi.events",
       "PAPI presets or native events with qualifiers, each a name or `{event, metric, help}` "
       "(`metric` without `hwperf_<level>_` and `_total`); unknown names stop startup",
       "", "",
       "with no groups listed either: perf::CONTEXT-SWITCHES, CPU-MIGRATIONS, PAGE-FAULTS, best "
       "effort (the rest of the default counts are the default groups); with groups listed: none"},
      {"collectors.papi.groups",
       "event groups counted on every selected CPU, each as one kernel group: built-in "
       "(`ipc`, `branch`, `cache`, `l1d`, `l2`, `freq`, `topdown`, `aperf_mperf`, `software`) or "
       "defined under "
       "`groups` ([groups](collectors/groups.md))",
       "", "", "ipc, branch, cache, freq, best effort, with the default events"},
      {"collectors.rapl.enabled", "read CPU energy ([RAPL](collectors/rapl.md))"},
      {"collectors.rapl.interface",
       "which kernel interface reads the counters; `auto` tries perf, then powercap, then msr"},
      {"collectors.rapl.domains", "only these domains", "", "", "every domain found"},
      {"collectors.rapl.max_power_watts",
       "ceiling per package, for the wrap guard and the plausibility check; 0 takes it from the "
       "hardware (4x its largest power figure), else 1000 W "
       "([power ceiling](collectors/rapl.md#power-ceiling))"},
      {"collectors.rapl.wrap_guard_interval_seconds",
       "how often the wrap guard reads every counter; 0 derives it from the counter ranges and "
       "the ceiling ([wrap guard](collectors/rapl.md#wrap-guard))"},
      {"collectors.process.enabled",
       "count the configured process targets ([process](collectors/process.md)); the collector "
       "is built only when targets are listed"},
      {"collectors.process.events",
       "events counted for every target, in the PAPI collector's vocabulary", "", "",
       "perf::TASK-CLOCK, PAGE-FAULTS, CONTEXT-SWITCHES, CPU-MIGRATIONS, INSTRUCTIONS, CYCLES, "
       "CACHE-MISSES, BRANCH-MISSES, best effort"},
      {"collectors.process.groups",
       "event groups counted for every target, each as one kernel group per thread "
       "([groups](collectors/groups.md))",
       "", "", "software, ipc, branch, cache, best effort, with no default events"},
      {"collectors.process.domain",
       "privilege levels counted; user mode only when the kernel allows no more"},
      {"collectors.process.per_cpu",
       "one series per target and CPU, with the CPU's topology labels"},
      {"collectors.process.regions",
       "export the marked regions of each counted process that runs with the marker library "
       "([regions](collectors/region.md))"},
      {"collectors.process.rescan_interval_seconds",
       "how often /proc is looked at in the background for processes that start and end"},
      {"collectors.process.targets",
       "each {name, and one of pid: N, pidfile: PATH, match: {comm, exe, cmdline regular "
       "expressions}} ([targets](collectors/process.md#configuration))"},
      {"collectors.cgroup.enabled",
       "count each container cgroup with cgroup perf events "
       "([cgroup](collectors/cgroup.md)); needs root or CAP_PERFMON"},
      {"collectors.cgroup.events",
       "events counted for every cgroup, in the PAPI collector's vocabulary", "", "",
       "perf::CPU-CLOCK, INSTRUCTIONS, CYCLES, CACHE-MISSES, best effort"},
      {"collectors.cgroup.groups",
       "event groups counted for every cgroup, each as one kernel group per CPU "
       "([groups](collectors/groups.md))",
       "", "", "none"},
      {"collectors.cgroup.granularity",
       "how each cgroup's per-CPU counts are summed: per package, or for the machine", "",
       "package or machine"},
      {"collectors.cgroup.roots",
       "cgroups (paths in the perf_event hierarchy) whose leaves are counted besides the "
       "containers and services found by name"},
      {"collectors.cgroup.match",
       "regular expressions over cgroup paths: matching leaves are counted too"},
      {"collectors.cgroup.max_cgroups",
       "at most this many cgroups are counted (each holds events x CPUs descriptors); the rest "
       "are counted in hwperf_container_left_out",
       "", "a whole number from 1 to 65536"},
      {"collectors.cgroup.rescan_interval_seconds",
       "how often the hierarchy is walked in the background for cgroups that appear and go"},
      {"collectors.cgroup.runtime",
       "the container runtime of a node whose kubelet uses the cgroupfs driver, whose cgroup "
       "paths (`kubepods/<qos>/pod<uid>/<id>`) do not name it: their container_id is written "
       "`<runtime>://<id>` as kube-state-metrics writes it, so that the join with "
       "kube_pod_container_info matches; none leaves it bare "
       "([cgroup](collectors/cgroup.md#what-is-counted))"},
      {"collectors.cgroup.mode",
       "how cgroups are counted: perf, one perf event per cgroup, CPU and event; bpf, one "
       "counter per CPU and event and a BPF program at each cgroup switch (CAP_BPF with "
       "CAP_PERFMON, or CAP_SYS_ADMIN, and the kernel's BTF; a startup error where it cannot "
       "load); auto, bpf where it can load, perf otherwise, saying why in the log and in "
       "hwperf_container_counting_mode ([cgroup](collectors/cgroup.md#counting-modes))"},
      {"collectors.uncore.enabled",
       "count memory traffic per package (IMC, UMC), aperf/mperf/tsc per CPU and C-state "
       "residency from the kernel's perf PMUs, best effort: what this machine or the exporter's "
       "privileges (root or CAP_PERFMON) do not allow is logged once and reported in "
       "hwperf_uncore_source_available ([uncore](collectors/uncore.md))"},
      {"collectors.uncore.peak_memory_bytes_per_second",
       "what one package's memory can move per second (channels x transfers per second x 8 "
       "bytes), exported as hwperf_memory_peak_bytes_per_second for the share-of-peak rule; 0 "
       "exports nothing ([uncore](collectors/uncore.md#peak-bandwidth))"},
      {"collectors.hwmon.enabled",
       "read the power meters the kernel's hwmon class exposes: ACPI power meters (the node's, "
       "or NVIDIA Grace's per socket), X-Gene/Altra SLIMpro, IBM AEM "
       "([hwmon](collectors/hwmon.md)); a machine without one exports "
       "hwperf_hwmon_energy_available 0"},
      {"collectors.hwmon.interval_seconds",
       "how often every meter is read, by a thread of the collector's own (scrapes read nothing): "
       "power readings are integrated between two reads "
       "([integration](collectors/hwmon.md#integration))"},
      {"collectors.hwmon.stale_after_seconds",
       "a reading unchanged for longer than this is stuck: its joules stop growing and "
       "hwperf_hwmon_sensor_state says stale until it moves; 0 never "
       "([bad input](collectors/hwmon.md#bad-input))"},
  };
  return texts;
}

const std::vector<KeyText>& web_config_texts() {
  static const std::vector<KeyText> texts = [] {
    const TlsServerConfig tls;
    const HttpServerConfig http;
    std::string headers;
    for (const char* name : kAllowedResponseHeaders) {
      headers += std::string(headers.empty() ? "" : ", ") + "`" + name + "`";
    }
    return std::vector<KeyText>{
        {"tls_server_config.cert_file",
         "PEM certificate, followed by its chain; relative paths are from the web config file's "
         "folder; read again when it changes",
         "", "", "none (no TLS section: plain HTTP)"},
        {"tls_server_config.key_file", "PEM private key of the certificate", "", "", "none"},
        {"tls_server_config.cert", "the PEM certificate itself, instead of `cert_file`", "", "",
         "none"},
        {"tls_server_config.key", "the PEM private key itself, instead of `key_file`", "", "",
         "none"},
        {"tls_server_config.client_ca_file",
         "CAs that client certificates must chain to; read again when it changes", "", "", "none"},
        {"tls_server_config.client_ca",
         "the PEM CA certificates themselves, instead of `client_ca_file`", "", "", "none"},
        {"tls_server_config.client_auth_type",
         "as in Go's `crypto/tls`; the two that verify need `client_ca_file` or `client_ca`", "",
         "", name_of(kClientAuthNames, tls.client_auth)},
        {"tls_server_config.client_allowed_sans",
         "with `RequireAndVerifyClientCert`: a SAN of the client's certificate (DNS, email, IP, "
         "URI) must be one of these",
         "", "", "any"},
        {"tls_server_config.min_version", "lowest TLS version accepted", "", "",
         name_of(kTlsVersionNames, tls.min_version)},
        {"tls_server_config.max_version", "highest TLS version offered", "", "",
         "the newest OpenSSL has"},
        {"tls_server_config.cipher_suites",
         "Go's names of the TLS 1.0-1.2 suites, in order of preference (TLS 1.3's cannot be "
         "chosen, as in Go)",
         "", "", "OpenSSL's"},
        {"tls_server_config.prefer_server_cipher_suites",
         "the server's order of suites wins over the client's", "", "",
         tls.prefer_server_cipher_suites ? "true" : "false"},
        {"tls_server_config.curve_preferences",
         "Go's curve names: `CurveP256`, `CurveP384`, `CurveP521`, `X25519`", "", "", "OpenSSL's"},
        {"basic_auth_users",
         "every path but `/-/healthy` answers 401 unless the request names one of these users "
         "and its password (`htpasswd -nBC 10 USER` makes a hash)",
         "", "a mapping of user names to bcrypt hashes", "none (no authentication)"},
        {"http_server_config.http2", "accepted; this server answers HTTP/1.1", "", "",
         http.http2 ? "true" : "false"},
        {"http_server_config.headers", "added to every response; only " + headers + " can be set",
         "", "a mapping of header names to values", "none"},
        {"rate_limit.interval",
         "one request per interval on average; beyond the burst, 429 (`/-/healthy` is never "
         "limited)",
         "", "", "none (no limit)"},
        {"rate_limit.burst", "requests allowed at once before the interval applies", "", "",
         "none"},
    };
  }();
  return texts;
}

// A table cell: one line, and no `|` that would end the cell.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else {
      out += c == '\n' ? ' ' : c;
    }
  }
  return out;
}

std::string code(const std::string& text) { return text.empty() ? "" : "`" + text + "`"; }

std::string key_table(const std::vector<ConfigKeyInfo>& keys, const std::vector<KeyText>& texts,
                      const std::string& reader, std::vector<std::string>& problems) {
  std::string table =
      "| key | value | default | flag | meaning |\n"
      "|---|---|---|---|---|\n";
  for (const auto& key : keys) {
    if (key.section) continue;
    const auto text = std::find_if(texts.begin(), texts.end(),
                                   [&](const KeyText& t) { return t.path == key.path; });
    if (text == texts.end()) {
      problems.push_back(key.path + " is read by " + reader +
                         " but has no meaning in exporter/reference.cpp; write one there");
      table += "| " + code(key.path) + " | " + cell(key.expected) + " | " +
               code(key.default_value) + " | | |\n";
      continue;
    }
    const std::string value = text->value.empty() ? key.expected : text->value;
    if (value.empty()) {
      problems.push_back(key.path +
                         ": its reader says nothing of what it takes; give a value in "
                         "exporter/reference.cpp");
    }
    if (!text->flag.empty()) {
      const auto& flags = cli_flags();
      if (std::none_of(flags.begin(), flags.end(),
                       [&](const CliFlag& flag) { return text->flag == flag.name; })) {
        problems.push_back(key.path + ": no flag " + text->flag);
      }
    }
    const std::string default_value =
        text->default_value.empty() ? code(key.default_value) : text->default_value;
    table += "| " + code(key.path) + " | " + cell(value) + " | " + cell(default_value) + " | " +
             code(text->flag) + " | " + cell(text->meaning) + " |\n";
  }
  for (const auto& text : texts) {
    if (std::none_of(keys.begin(), keys.end(),
                     [&](const ConfigKeyInfo& key) { return key.path == text.path; })) {
      problems.push_back("exporter/reference.cpp describes " + text.path + ", which " + reader +
                         " does not read");
    }
  }
  return table;
}

std::string flag_table() {
  std::string table =
      "| flag | value | default | meaning |\n"
      "|---|---|---|---|\n";
  for (const auto& flag : cli_flags()) {
    if (flag.hidden) continue;
    table += "| " + code(flag.name) + " | " + code(flag.value_name ? flag.value_name : "") + " | " +
             cell(flag.default_value) + " | " + cell(flag.help) + " |\n";
  }
  return table;
}

}  // namespace

std::string reference_markdown(std::vector<std::string>& problems) {
  return "# Reference: flags and configuration keys\n\n"
         "<!-- Generated by `hwperf_exporter --print-reference` from the flag table "
         "(exporter/cli.cpp) and the readers of both files (config/loader.cpp, "
         "config/web_config.cpp); meanings of keys in exporter/reference.cpp. Do not edit: "
         "regenerate with ./build/exporter/hwperf_exporter --print-reference > "
         "docs/reference.md -->\n\n"
         "Flags override the configuration file, which overrides the defaults; no configuration "
         "file at all is valid. Both files are strict: an unknown key, a wrong type or a bad "
         "value is an error naming `file:line:column`, and every problem is reported in one run "
         "(exit 2). [`config/hwperf.yml`](../config/hwperf.yml) is the commented example of the "
         "configuration file.\n\n"
         "## Command-line flags\n\n" +
         flag_table() +
         "\nValues can follow the flag after `=` or as the next argument. Durations are written as "
         "Prometheus writes them (`500ms`, `5s`, `1m`).\n\n"
         "## Configuration file (`--config.file`)\n\n"
         "Keys are written here with their sections, dot-separated: `collectors.papi.cpus` is "
         "`cpus:` under `papi:` under `collectors:`.\n\n" +
         key_table(describe_config_keys(), config_texts(), "config/loader.cpp", problems) +
         "\n## Web configuration file (`--web.config.file`)\n\n"
         "The format of the Prometheus exporter-toolkit, so one file serves node_exporter and "
         "this exporter alike (see [security](security.md)).\n\n" +
         key_table(describe_web_config_keys(), web_config_texts(), "config/web_config.cpp",
                   problems);
}

}  // namespace hwperf
