#!/usr/bin/env python3
"""What a cluster admin does with the shipped files (issue 35), run for real (ctest fleet_queries):
three exporters scraped by one Debian prometheus as three instances of job hwperf (each with its
CPU 0), with the shipped rule files (the rule_files of deploy/prometheus.yml) loaded, scraping and
evaluating every second.
  - node-a runs the DaemonSet's configuration (deploy/kubernetes/configmap.yaml, paths pointed at
    this machine); node-b a lab's: PAPI_TOT_INS named (dropped on every CPU of a machine without a
    PMU), the software group, a process target (this script) and a cgroup made for the test under
    `roots`; node-c the same lab with the process target per CPU (per_cpu), no cgroup.
  - Every query of README.md and docs/ (doc_queries.py finds them) and of the Grafana dashboard
    must answer: an error (a join that finds duplicate series once two nodes have a CPU 0) fails,
    and so does an empty answer when every series the query reads exists and it filters nothing.
  - Every rule of the shipped files evaluates without error on the nodes' series.
  - HwperfPapiEventsDropped is pending for node-b, its value the number of CPUs that dropped the
    event (read from node-b's exposition).
  - Every input series of the promtool rule tests has the labels the exporters expose
    (series_shapes.py), and every query of the docs that reads another exporter's series
    (kube-state-metrics) is tested word for word by a promtool rule test.
  - No query of the docs or the dashboard adds up the nodes: an aggregation over our series
    keeps `instance` (or a container or pod, which lives on one node) in its grouping
    (doc_queries.node_mixing).
Usage: fleet_queries.py SOURCE_DIR EXPORTER_BINARY"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc_queries import (doc_queries, node_mixing, series_names, selector_text,  # noqa: E402
                         strip_strings)
from grafana_queries import dashboard_queries, rule_files  # noqa: E402
from series_shapes import check_rule_test_series  # noqa: E402

DEADLINE_SECONDS = 60
FILTERS = re.compile(r"==|!=|>=|<=|>|<|\b(and|unless)\b")


class Fleet:
    def __init__(self, src, exporter, tmp):
        self.src, self.exporter, self.tmp = src, exporter, tmp
        self.processes, self.problems, self.cgroup = [], [], None

    def fail(self, message):
        self.problems.append(message)
        print(f"FAIL: {message}", file=sys.stderr)

    def spawn(self, name, argv):
        log = open(os.path.join(self.tmp, name + ".log"), "w")
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        self.processes.append((name, process))
        return process

    def log(self, name):
        return open(os.path.join(self.tmp, name + ".log")).read()

    def stop(self):
        for _, process in reversed(self.processes):
            process.send_signal(signal.SIGTERM)
        for _, process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self.cgroup:
            try:
                os.rmdir(self.cgroup)
            except OSError as error:
                print(f"note: {self.cgroup} left behind: {error}", file=sys.stderr)


def wait_for(what, check, seconds=DEADLINE_SECONDS):
    """What check() returns once it is true, asked every 0.25 s for at most `seconds`."""
    for attempt in range(int(seconds / 0.25)):
        if attempt:
            time.sleep(0.25)
        found = check()
        if found:
            return found
    raise RuntimeError(f"timed out after {seconds} s waiting for {what}")


def configmap_config(src):
    """The exporter configuration of the DaemonSet's ConfigMap (its hwperf.yml block)."""
    lines = open(os.path.join(src, "deploy", "kubernetes", "configmap.yaml")).read().split("\n")
    start = next(i for i, line in enumerate(lines) if re.match(r"\s+hwperf\.yml:\s*\|\s*$", line))
    block = []
    for line in lines[start + 1:]:
        if line.strip() and not line.startswith("    "):
            break
        block.append(line[4:])
    return "\n".join(block)


def start_exporter(fleet, name, config_text):
    """Its port, once it listens (its log says where); an exporter that exits is a failure."""
    config = os.path.join(fleet.tmp, name + ".yml")
    open(config, "w").write(config_text)
    process = fleet.spawn(name, [fleet.exporter, "--config.file=" + config, "--path.sysfs=/sys",
                                 "--path.procfs=/proc", "--path.devfs=/dev",
                                 "--web.listen-address=127.0.0.1:0"])

    def listening():
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with status {process.returncode} at startup")
        return re.search(r"Listening on 127\.0\.0\.1:(\d+)", fleet.log(name))
    return int(wait_for(f"{name} to listen", listening).group(1))


def perf_event_root(fleet, config_text):
    """Where the exporter finds the perf_event cgroup hierarchy (its --check-config line)."""
    config = os.path.join(fleet.tmp, "check.yml")
    open(config, "w").write(config_text)
    out = subprocess.run([fleet.exporter, "--config.file=" + config, "--check-config",
                          "--path.sysfs=/sys", "--path.procfs=/proc", "--path.devfs=/dev"],
                         capture_output=True, text=True, timeout=60)
    match = re.search(r"perf_event hierarchy: cgroup v\d at (\S+)", out.stdout + out.stderr)
    return match.group(1) if match else None


def lab_config(leaf, per_cpu):
    """A lab's configuration: a dropped event, a group, this script as a process target (per CPU or
    not) and, given a leaf, that cgroup under `roots`, with an event and a group."""
    cgroup = f"""  cgroup:
    enabled: true
    events: [perf::CPU-CLOCK]
    groups: [software]
    roots: [/{leaf}]
    rescan_interval_seconds: 0.5
""" if leaf else ""
    return f"""collectors:
  papi:
    events: [PAPI_TOT_INS, perf::PAGE-FAULTS, perf::TASK-CLOCK]
    groups: [software]
  process:
    events: [perf::TASK-CLOCK, perf::PAGE-FAULTS]
    groups: [software]
    per_cpu: {str(per_cpu).lower()}
    targets:
      - {{name: fleet, pid: {os.getpid()}}}
""" + cgroup


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_prometheus(fleet, ports):
    config = os.path.join(fleet.tmp, "prometheus.yml")
    rules = rule_files(os.path.join(fleet.src, "deploy", "prometheus.yml"))
    targets = ", ".join(f"'127.0.0.1:{port}'" for port in ports)
    open(config, "w").write(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
        "rule_files:\n" + "".join(f"  - {os.path.abspath(path)}\n" for path in rules) +
        f"scrape_configs:\n  - job_name: hwperf\n    static_configs:\n      - targets: [{targets}]\n")
    port = free_port()
    fleet.spawn("prometheus", ["prometheus", "--config.file=" + config,
                               "--storage.tsdb.path=" + os.path.join(fleet.tmp, "tsdb"),
                               "--web.listen-address=127.0.0.1:" + str(port)])
    return port


def api(port, path, **params):
    url = f"http://127.0.0.1:{port}{path}"
    if params:
        url += "?" + urllib.parse.urlencode(params)
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:  # 400 and 422 carry the query's error as JSON
        return json.load(error)
    except (urllib.error.URLError, ConnectionError):
        return None


def query(port, text):
    return api(port, "/api/v1/query", query=text) or {"status": "error", "error": "no answer"}


def result(port, text):
    return query(port, text).get("data", {}).get("result")


def scraped_enough(port, targets):
    """Every target up, each scraped at least 4 times, and every rule evaluated at least once."""
    answer = query(port, "count_over_time(up[1m]) >= 4 and up == 1")
    if not answer or answer.get("status") != "success" or len(answer["data"]["result"]) < targets:
        return False
    rules = api(port, "/api/v1/rules") or {}
    health = [r.get("health") for g in rules.get("data", {}).get("groups", []) for r in g["rules"]]
    return bool(health) and "unknown" not in health


def filters(text):
    """Whether a query may rightly answer nothing: a comparison or set operation outside matchers."""
    return bool(FILTERS.search(re.sub(r"\{[^}]*\}", "", strip_strings(text))))


def check_query(fleet, port, where, text):
    answer = query(port, text)
    if answer.get("status") != "success":
        fleet.fail(f"{where}: {text}\n    {answer.get('errorType')}: {answer.get('error')}")
        return "error"
    if answer.get("warnings"):
        fleet.fail(f"{where}: {text}\n    warnings: {answer['warnings']}")
    if answer["data"]["result"] or filters(text):
        return "answered" if answer["data"]["result"] else "empty"
    # Empty: fine where a series it reads is not exported here (hardware this VM lacks, another
    # exporter's series); a failure where every one exists, as a join matching nothing would.
    selectors = [selector_text(text, *name) for name in series_names(text)]
    missing = [s for s in selectors if not result(port, f"count({s})")]
    if selectors and not missing:
        fleet.fail(f"{where}: {text}\n    answers nothing, though every series it reads exists: "
                   f"{', '.join(selectors)}")
        return "error"
    return "empty"


def check_rules(fleet, port):
    rules = api(port, "/api/v1/rules")["data"]["groups"]
    count = 0
    for group in rules:
        for rule in group["rules"]:
            count += 1
            if rule.get("health") != "ok":
                fleet.fail(f"rule {rule['name']} ({group['file']}): {rule.get('health')}: "
                           f"{rule.get('lastError')}")
    print(f"{count} rules of {len(rules)} groups evaluated on the nodes' series")


def check_dropped_alert(fleet, port, lab_instance, exposition):
    dropped = re.search(r'^hwperf_papi_event_dropped\{event="PAPI_TOT_INS",[^}]*cpus="([^"]*)"\} '
                        r'(\S+)$', exposition, re.M)
    if not dropped:
        print("NOT CHECKED: PAPI_TOT_INS is counted on this machine (a hardware PMU), so no event "
              "is dropped and HwperfPapiEventsDropped has nothing to go pending on")
        return
    cpus = float(dropped.group(2))
    alerts = api(port, "/api/v1/alerts")["data"]["alerts"]
    mine = [a for a in alerts if a["labels"].get("alertname") == "HwperfPapiEventsDropped"
            and a["labels"].get("instance") == lab_instance]
    states = [(a["state"], a["labels"].get("event"), float(a["value"])) for a in mine]
    if ("pending", "PAPI_TOT_INS", cpus) not in states:
        fleet.fail(f"HwperfPapiEventsDropped for {lab_instance}: expected pending for PAPI_TOT_INS "
                   f"with value {cpus:g} (CPUs {dropped.group(1)}), got {states or 'no alert'}")
    else:
        print(f"HwperfPapiEventsDropped pending for {lab_instance}: PAPI_TOT_INS dropped on "
              f"{cpus:g} CPUs ({dropped.group(1)})")


def test_exprs(src):
    """Every expr of the promtool rule tests, whitespace removed (block scalars read as text)."""
    found = set()
    for directory in ("deploy/prometheus", "tests/deploy"):
        for name in sorted(os.listdir(os.path.join(src, directory))):
            if not name.endswith("_test.yml"):
                continue
            lines = open(os.path.join(src, directory, name)).read().split("\n")
            for i, line in enumerate(lines):
                match = re.match(r"^(\s*)(?:-\s*)?expr:\s*(.*)$", line)
                if not match:
                    continue
                body = match.group(2)
                if re.fullmatch(r"[|>][-+]?", body):
                    indent = len(match.group(1)) + (2 if line.lstrip().startswith("-") else 0)
                    block = []
                    for next_line in lines[i + 1:]:
                        if next_line.strip() and len(next_line) - len(next_line.lstrip()) <= indent:
                            break
                        block.append(next_line)
                    body = " ".join(block)
                found.add(re.sub(r"\s+", "", body.strip().strip("'\"")))
    return found


def check_foreign_queries_tested(fleet, queries):
    tested = test_exprs(fleet.src)
    for where, text in queries:
        foreign = [n for n, _ in series_names(text)
                   if n and not n.startswith("hwperf_") and ":" not in n and n not in ("up", "ALERTS")]
        if foreign and re.sub(r"\s+", "", text) not in tested:
            fleet.fail(f"{where}: {text}\n    reads {', '.join(foreign)} (another exporter's "
                       f"series), and no promtool rule test runs this query word for word")


def check_per_node(fleet, queries):
    """A query an admin pastes keeps each node apart: two nodes' series of one target, CPU or
    package are not one quantity, and a sum over them reads as one node's. Statically, since a
    Prometheus answers such a sum without complaint (nodes b and c both count target "fleet")."""
    for where, text in queries:
        mixing = node_mixing(text)
        if mixing:
            fleet.fail(f"{where}: {text}\n    {', '.join(mixing)} adds up the nodes of a fleet: "
                       f"keep `instance` in the grouping (`by (instance, ...)`)")


def start_fleet(fleet):
    """node-a and node-b serving, and prometheus scraping them; their ports."""
    configmap = configmap_config(fleet.src)
    root = perf_event_root(fleet, configmap)
    leaf = f"hwperf-fleet-{os.getpid()}"
    if root and os.access(root, os.W_OK):
        fleet.cgroup = os.path.join(root, leaf)
        os.mkdir(fleet.cgroup)
    else:
        print(f"note: no cgroup made under {root}: node-b counts no container")
    nodes = [start_exporter(fleet, "node-a", configmap),
             start_exporter(fleet, "node-b", lab_config(leaf, False)),
             start_exporter(fleet, "node-c", lab_config(None, True))]
    return nodes, start_prometheus(fleet, nodes)


def run(fleet):
    queries, passed_over = doc_queries(fleet.src)
    dashboard, problems = dashboard_queries(os.path.join(fleet.src, "deploy/grafana/hwperf.json"))
    for problem in problems:
        fleet.fail(problem)
    pasted = queries + [(f"grafana {title} / {ref}", q) for title, ref, q in dashboard]
    check_foreign_queries_tested(fleet, queries)
    check_per_node(fleet, pasted)
    nodes, port = start_fleet(fleet)
    wait_for("prometheus to scrape every exporter 4 times and evaluate every rule",
             lambda: scraped_enough(port, len(nodes)))
    time.sleep(2)  # a few more evaluations of the rules, over at least 4 samples each
    expositions = [urllib.request.urlopen(f"http://127.0.0.1:{p}/metrics", timeout=10).read()
                   .decode() for p in nodes]

    counts = {}
    for where, text in pasted:
        outcome = check_query(fleet, port, where, text)
        counts[outcome] = counts.get(outcome, 0) + 1
        print(f"{outcome:8} {where}: {text}")
    print(f"{len(queries)} queries of the docs ({len(passed_over)} code spans are no query: "
          f"doc_queries.py lists them) and {len(dashboard)} of the dashboard: "
          + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    check_rules(fleet, port)
    check_dropped_alert(fleet, port, f"127.0.0.1:{nodes[1]}", expositions[1])

    problems, checked, unchecked = check_rule_test_series(fleet.src, expositions)
    for problem in problems:
        fleet.fail(f"rule test input: {problem}")
    print(f"{checked} input series of the rule tests have the exporters' labels; not exported "
          f"on this machine, so not checked here: {', '.join(unchecked) or 'none'}")


def main(argv):
    src, exporter = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    for program in ("prometheus", exporter):
        if not shutil.which(program):
            print(f"FAIL: {program} not found (Debian's prometheus package: scripts/deps.sh)",
                  file=sys.stderr)
            return 1
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hwperf-fleet-") as tmp:
        fleet = Fleet(src, exporter, tmp)
        try:
            run(fleet)
        except Exception as error:  # a timeout or an exporter that did not start: say which
            fleet.fail(f"{type(error).__name__}: {error}")
            for name, _ in fleet.processes:
                print(f"--- {name} log (end)\n{fleet.log(name)[-3000:]}", file=sys.stderr)
        finally:
            fleet.stop()
    print(f"fleet queries: {len(fleet.problems)} failed, {time.monotonic() - started:.1f} s")
    return 1 if fleet.problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
