#!/usr/bin/env python3
"""Writes every query of a Grafana dashboard into a Prometheus rules file, one recording rule per
query, with Grafana's variables replaced by concrete values, so that promtool can parse them.
Fails when the dashboard has no queries, a panel has none, or a variable is left unreplaced.
Given a Prometheus configuration as a third argument, also fails when a query reads a recording
rule (a name with a colon) that none of the rule files that configuration loads records, and when
a family of energy or memory traffic that those rule files read is shown by no panel (SHOWN).
fleet_queries.py imports dashboard_queries() and rule_files() to run the same queries live.
Usage: grafana_queries.py DASHBOARD RULES_OUT [PROMETHEUS_YML]"""
import json
import os
import re
import sys

# Concrete values for Grafana's built-in variables and the dashboard's own.
VALUES = {
    "__rate_interval": "1m", "__interval": "30s", "__range": "1h", "__range_s": "3600",
    "instance": ".*", "counter": "hwperf_cpu_page_faults_total", "datasource": "prometheus",
}


def substitute(expr, problems):
    def one(match):
        name = match.group(1) or match.group(2)
        if name not in VALUES:
            problems.append(f"unknown variable ${name} in: {expr}")
            return match.group(0)
        return VALUES[name]
    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)", one, expr)


def panels(items):
    for panel in items:
        yield panel
        yield from panels(panel.get("panels", []))


def dashboard_queries(dashboard_path):
    """[(panel title, refId, query)] with the variables replaced, and the problems found."""
    dashboard = json.load(open(dashboard_path))
    problems, queries = [], []
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable["name"] not in VALUES:
            problems.append(f"template variable ${variable['name']} has no test value in "
                            f"{os.path.basename(__file__)}")
    for panel in panels(dashboard.get("panels", [])):
        if panel.get("type") == "row":
            continue
        targets = [t for t in panel.get("targets", []) if t.get("expr")]
        if not targets:
            problems.append(f"panel {panel.get('title')!r} has no query")
        for target in targets:
            expr = substitute(target["expr"], problems)
            if "$" in expr:
                problems.append(f"panel {panel.get('title')!r}: unreplaced variable in {expr}")
            queries.append((panel.get("title"), target.get("refId"), expr))
    for variable in dashboard.get("templating", {}).get("list", []):
        query = variable.get("query")
        if isinstance(query, dict):
            query = query.get("query")
        # label_values(metric, label) and metrics(regex) are Grafana functions; check their selector.
        match = re.fullmatch(r"label_values\((.+),\s*\w+\)", query or "")
        if match:
            queries.append((f"variable {variable['name']}", "query",
                            substitute(match.group(1), problems)))
    if not queries:
        problems.append(f"{dashboard_path} has no queries")
    return queries, problems


def rule_files(config_path):
    """The rule files a Prometheus configuration loads (its rule_files list, as paths beside it;
    read as text, no YAML module needed)."""
    files, in_list = [], False
    for line in open(config_path):
        if re.match(r"rule_files:\s*$", line):
            in_list = True
        elif in_list and re.match(r"\s+-\s+\S", line):
            files.append(line.split("-", 1)[1].strip().strip("\"'"))
        elif in_list and line.strip() and not line.lstrip().startswith("#"):
            in_list = False
    return [os.path.join(os.path.dirname(config_path), name) for name in files]


# The dashboard's subject: the energy a node and its packages draw and the bytes their memory
# moves. Every such family a loaded rule reads must reach a panel, which reads it or a rule that
# reads it (through other rules): a rule written for other hardware (the total of Arm's memory
# controllers, a node's power meter) cannot stay off the dashboard.
SHOWN = re.compile(r"^hwperf_\w*(_joules_total|memory\w*_bytes_total)$")


def names_read(expr):
    """The series and recording rules an expression reads (ours: hwperf_* or level:name:ops)."""
    unquoted = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    return {name for name in re.findall(r"(?<![\w:])[a-zA-Z_][\w:]*", unquoted)
            if name.startswith("hwperf_") or ":" in name}


def rule_reads(config_path):
    """{recorded name: the names its expression reads} of the rule files a configuration loads
    (read as text: an expr is one line or a folded block more indented than its key)."""
    reads = {}
    for path in rule_files(config_path):
        lines, record = open(path).read().split("\n"), None
        for i, line in enumerate(lines):
            rule = re.match(r"^\s*-\s*(record|alert):\s*(\S+)", line)
            if rule:
                record = rule.group(2) if rule.group(1) == "record" else None
                continue
            expr = re.match(r"^(\s*)expr:\s*(.*)$", line)
            if not expr or record is None:
                continue
            body = expr.group(2)
            if re.fullmatch(r"[|>][-+]?", body.strip()):
                block = []
                for next_line in lines[i + 1:]:
                    if next_line.strip() and \
                            len(next_line) - len(next_line.lstrip()) <= len(expr.group(1)):
                        break
                    block.append(next_line)
                body = " ".join(block)
            reads.setdefault(record, set()).update(names_read(body))
    return reads


def unshown_families(queries, config_path):
    """[(family, the rules that read it)] of SHOWN's families no panel reaches."""
    reads = rule_reads(config_path)
    reached, todo = set(), [name for _, _, expr in queries for name in names_read(expr)]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo.extend(reads.get(name, ()))
    families = {name for names in reads.values() for name in names if SHOWN.match(name)}
    return [(family, sorted(rule for rule, names in reads.items() if family in names))
            for family in sorted(families - reached)]


def recorded_by(config_path):
    """Names recorded by the rule files a Prometheus configuration loads."""
    names, files = set(), rule_files(config_path)
    for path in files:
        names.update(re.findall(r"^\s*-?\s*record:\s*([\w:]+)", open(path).read(), re.M))
    return [os.path.relpath(path, os.path.dirname(config_path)) for path in files], names


def main(argv):
    dashboard_path, rules_path = argv[1], argv[2]
    prometheus_path = argv[3] if len(argv) > 3 else None
    rules, problems = dashboard_queries(dashboard_path)
    if prometheus_path:
        files, recorded = recorded_by(prometheus_path)
        for title, ref, expr in rules:
            unquoted = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
            for name in re.findall(r"(?<![\w:])[a-zA-Z_]\w*:[\w:]*", unquoted):
                if name not in recorded:
                    problems.append(f"panel {title!r}: {name} is recorded by none of the rule "
                                    f"files {prometheus_path} loads ({', '.join(files)})")
        for family, readers in unshown_families(rules, prometheus_path):
            problems.append(f"{family} is read by the rules {', '.join(readers)}, and no panel "
                            f"shows it: read it, or one of those rules, in a panel")
    for problem in problems:
        print(f"FAIL: {problem}", file=sys.stderr)

    with open(rules_path, "w") as out:
        out.write("groups:\n  - name: grafana_queries\n    rules:\n")
        for i, (title, ref, expr) in enumerate(rules):
            out.write(f"      # {title} / {ref}\n")
            out.write(f"      - record: grafana_query_{i}\n")
            out.write(f"        expr: {json.dumps(expr)}\n")
    print(f"{len(rules)} Grafana queries written to {rules_path}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
