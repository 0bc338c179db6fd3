#!/usr/bin/env python3
"""Writes every query of a Grafana dashboard into a Prometheus rules file, one recording rule per
query, with Grafana's variables replaced by concrete values, so that promtool can parse them.
Fails when the dashboard has no queries, a panel has none, or a variable is left unreplaced."""
import json
import re
import sys

dashboard_path, rules_path = sys.argv[1], sys.argv[2]
dashboard = json.load(open(dashboard_path))

# Concrete values for Grafana's built-in variables and the dashboard's own.
values = {
    "__rate_interval": "1m", "__interval": "30s", "__range": "1h", "__range_s": "3600",
    "instance": ".*", "counter": "hwperf_cpu_page_faults_total", "datasource": "prometheus",
}
defined = {v["name"] for v in dashboard.get("templating", {}).get("list", [])}
problems = []
for name in defined:
    if name not in values:
        problems.append(f"template variable ${name} has no test value in {sys.argv[0]}")


def substitute(expr):
    def one(match):
        name = match.group(1) or match.group(2)
        if name not in values:
            problems.append(f"unknown variable ${name} in: {expr}")
            return match.group(0)
        return values[name]
    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)", one, expr)


def panels(items):
    for panel in items:
        yield panel
        yield from panels(panel.get("panels", []))


rules = []
for panel in panels(dashboard.get("panels", [])):
    if panel.get("type") == "row":
        continue
    targets = [t for t in panel.get("targets", []) if t.get("expr")]
    if not targets:
        problems.append(f"panel {panel.get('title')!r} has no query")
    for target in targets:
        expr = substitute(target["expr"])
        if "$" in expr:
            problems.append(f"panel {panel.get('title')!r}: unreplaced variable in {expr}")
        rules.append((panel.get("title"), target.get("refId"), expr))
for variable in dashboard.get("templating", {}).get("list", []):
    query = variable.get("query")
    if isinstance(query, dict):
        query = query.get("query")
    # label_values(metric, label) and metrics(regex) are Grafana functions; check their selector.
    match = re.fullmatch(r"label_values\((.+),\s*\w+\)", query or "")
    if match:
        rules.append((f"variable {variable['name']}", "query", substitute(match.group(1))))

if not rules:
    problems.append(f"{dashboard_path} has no queries")
for problem in problems:
    print(f"FAIL: {problem}", file=sys.stderr)

with open(rules_path, "w") as out:
    out.write("groups:\n  - name: grafana_queries\n    rules:\n")
    for i, (title, ref, expr) in enumerate(rules):
        out.write(f"      # {title} / {ref}\n")
        out.write(f"      - record: grafana_query_{i}\n")
        out.write(f"        expr: {json.dumps(expr)}\n")
print(f"{len(rules)} Grafana queries written to {rules_path}")
sys.exit(1 if problems else 0)
