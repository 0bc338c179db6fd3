#!/usr/bin/env python3
"""The input series of the promtool rule tests (deploy/prometheus/*_test.yml, tests/deploy/*_test.yml)
checked against what the exporter really exposes, so that a rule test cannot go on feeding a shape
the exporter no longer has (issue 35 item 12: the dropped-events alert tested `== 1` against one
series per CPU, while the exporter exposes one series per event whose value is the number of CPUs).

Each hwperf_* input series, its labels but instance and job (Prometheus' own), must have the label
names of a series of the same family in the exposition; a family this machine does not export is
compared with its siblings (the same hwperf_<level>_ prefix, counters only: a hardware event's
hwperf_cpu_instructions_total{group} against a software event's hwperf_cpu_page_faults_total{group}).
A family without either is reported as not checked here, by name.
fleet_queries.py calls check_rule_test_series() with the expositions of its two exporters."""
import glob
import os
import re

LABEL = re.compile(r'\s*([a-zA-Z_]\w*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
SAMPLE = re.compile(r"^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+\S+")


def parse_labels(text):
    labels, position = {}, 0
    while position < len(text):
        match = LABEL.match(text, position)
        if not match:
            raise ValueError(f"cannot read the labels {{{text}}}")
        labels[match.group(1)] = match.group(2)
        position = match.end()
    return labels


def parse_series(selector):
    """name{labels} as promtool's input_series writes it: (name, {label: value})."""
    match = re.fullmatch(r"\s*([a-zA-Z_:][\w:]*)\s*(?:\{(.*)\})?\s*", selector)
    if not match:
        raise ValueError(f"cannot read the series {selector!r}")
    return match.group(1), parse_labels(match.group(2) or "")


def exposition_shapes(text):
    """{family: {frozenset of label names}} of a text exposition."""
    shapes = {}
    for line in text.splitlines():
        match = SAMPLE.match(line)
        if match and not line.startswith("#"):
            shapes.setdefault(match.group(1), set()).add(
                frozenset(parse_labels(match.group(2) or "")))
    return shapes


def rule_test_inputs(src):
    """(file, name, labels) of every input series of the rule tests."""
    found = []
    paths = glob.glob(os.path.join(src, "deploy", "prometheus", "*_test.yml"))
    paths += glob.glob(os.path.join(src, "tests", "deploy", "*_test.yml"))
    for path in sorted(paths):
        for match in re.finditer(r"^\s*-\s*series:\s*(['\"])(.*)\1\s*$", open(path).read(), re.M):
            name, labels = parse_series(match.group(2))
            found.append((os.path.relpath(path, src), name, labels))
    return found


def siblings(family, shapes):
    # Only event counters stand in for each other; a gauge says something of its own collector
    # (hwperf_hwmon_sensor_state is not shaped like hwperf_hwmon_energy_available).
    prefix = re.match(r"hwperf_[a-z]+_", family)
    if not prefix or not family.endswith("_total"):
        return set()
    return {shape for name, family_shapes in shapes.items()
            if name.startswith(prefix.group(0)) and name.endswith("_total")
            for shape in family_shapes}


def check_rule_test_series(src, expositions):
    """(problems, checked, not checked here) for the rule tests' inputs against the expositions."""
    shapes = {}
    for text in expositions:
        for family, family_shapes in exposition_shapes(text).items():
            shapes.setdefault(family, set()).update(family_shapes)
    problems, checked, unchecked = [], 0, set()
    for path, name, labels in rule_test_inputs(src):
        if not name.startswith("hwperf_"):
            continue  # another exporter's (kube-state-metrics), Prometheus' own (up, ALERTS)
        names = frozenset(labels) - {"instance", "job"}
        known = shapes.get(name) or siblings(name, shapes)
        if not known:
            unchecked.add(name)
            continue
        checked += 1
        if names not in known:
            expected = " or ".join("{" + ", ".join(sorted(s)) + "}" for s in sorted(known, key=sorted))
            where = "exposes" if name in shapes else "exposes for its siblings"
            problems.append(f"{path}: {name}{{{', '.join(sorted(names))}}}: the exporter {where} "
                            f"{expected}")
    return problems, checked, sorted(unchecked)
