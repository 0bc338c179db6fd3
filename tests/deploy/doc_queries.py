#!/usr/bin/env python3
"""The PromQL queries written in README.md and docs/**/*.md, found by reading the pages, so that
no list of them is kept by hand (fleet_queries.py runs them all against a real Prometheus).

A query is
  - every expression of a ```promql block (a new one starts on a line that follows a complete
    expression and does not continue it with an operator or a closing bracket; `#` comments and
    blank lines separate them too);
  - an inline code span that reads series: it names at least one series, by a name of ours
    (hwperf_*), a recording rule's (level:name:operations) or another exporter's (kube_*, up), and
    uses PromQL beyond a bare name (a call, a matcher, a range, an operator). A span starting with a
    binary operator is a fragment (`* on(instance, job, cpu) group_left(package) hwperf_cpu_info`):
    it is run on its own right-hand series.
Not queries, and listed as such with the reason: spans naming something that is no series
(`rate(aperf) / rate(mperf)`: shorthand in prose; command lines), the exposition's notation
(`name{cpu,package}`, `name{...}`, `name{cpu="0"} 1`), templates (`hwperf_<level>_...`) and
patterns of names (`hwperf_cpu_*`).
node_mixing() finds in a query the aggregations that add up the nodes of a fleet (fleet_queries.py
fails on them).
Usage: doc_queries.py SOURCE_DIR (prints what it finds)."""
import glob
import os
import re
import sys

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
            "bool", "offset", "inf", "nan"}
OPERATOR_START = re.compile(r"^(\*|/|\+|-(?!\d)|%|\^|==|!=|>=|<=|>|<|and\b|or\b|unless\b)")
CONTINUES = re.compile(r"^(\)|\]|\}|\*|/|\+|-|%|\^|==|!=|>=|<=|>|<|and\b|or\b|unless\b|on\b|"
                       r"ignoring\b|group_left\b|group_right\b|by\b|without\b)")


def pages(src):
    found = [os.path.join(src, "README.md")]
    found += sorted(glob.glob(os.path.join(src, "docs", "**", "*.md"), recursive=True))
    return found


def strip_strings(text):
    return re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', text)


def series_names(query):
    """The series a query reads: (name, matchers) of each selector, matchers as written."""
    text = strip_strings(query)
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges, subqueries
    # Label lists of by/without/on/ignoring/group_left/group_right.
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    found = []
    for match in re.finditer(r"(?<![\w:.])([a-zA-Z_:][\w:]*)\s*(\{[^}]*\})?(\s*\()?", text):
        name, matchers, call = match.group(1), match.group(2) or "", match.group(3)
        if call or name.lower() in KEYWORDS:
            continue
        found.append((name, matchers))
    # Selectors without a name: {__name__="..."}.
    for match in re.finditer(r"(?<![\w:])\{([^}]*__name__[^}]*)\}", text):
        found.append(("", "{" + match.group(1) + "}"))
    return found


def selector_text(query, name, matchers):
    """The selector as the query writes it (with its real label values), for running it alone."""
    if not name:
        return re.search(r"\{[^}]*__name__[^}]*\}", query).group(0)
    match = re.search(r"(?<![\w:.])" + re.escape(name) + r"\s*(\{(?:[^}\"]|\"(?:[^\"\\]|\\.)*\")*\})?",
                      query)
    return match.group(0) if match else name


def known_series(name):
    return (name.startswith("hwperf_") or ":" in name or name.startswith("kube_")
            or name in ("up", "ALERTS"))


def inline_verdict(span):
    """(query to run or None, why it is not a query)."""
    if re.search(r"<|\.\.\.|…", span):
        return None, "a template or an elision"
    if re.search(r"\w\*", span):
        return None, "a pattern of names"
    if re.search(r"\}\s+[-+0-9.eE]+$", span) or re.fullmatch(r"[\w:]+\s+[-+0-9.eE]+", span):
        return None, "an exposition sample"
    if re.search(r"\{[^}=~]*\}", span):
        return None, "the exposition's label-list notation"
    names = series_names(span)
    if not names:
        return None, "names no series"
    unknown = [n for n, _ in names if n and not known_series(n)]
    if unknown:
        return None, f"{', '.join(unknown)} is no series (prose shorthand or a command)"
    if not re.search(r"[(\[{]|[*/+%^<>=]|\b(and|or|unless)\b", span):
        return None, "a bare name"
    if OPERATOR_START.match(span.strip()):
        last = names[-1]
        return selector_text(span, *last) + " " + span.strip(), ""
    return span.strip(), ""


def block_queries(lines):
    """The expressions of a promql block's lines."""
    queries, current = [], []

    def balanced(text):
        text = strip_strings(text)
        return all(text.count(o) == text.count(c) for o, c in ("()", "[]", "{}"))

    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            if current:
                queries.append(" ".join(current))
            current = []
            continue
        if current and balanced(" ".join(current)) and not CONTINUES.match(stripped):
            queries.append(" ".join(current))
            current = []
        current.append(stripped)
    if current:
        queries.append(" ".join(current))
    return queries


def page_queries(path):
    """(line, query, why-not) for every candidate of one page; why-not is "" for a query."""
    found, lines = [], open(path).read().split("\n")
    fence, block, paragraph, start = None, [], [], 0

    def flush_paragraph():
        text = " ".join(paragraph)
        for span in re.findall(r"`([^`]+)`", text):
            if not re.search(r"\b(hwperf_|kube_)\w+|\w+:\w+:\w+", span):
                continue
            query, why = inline_verdict(span)
            found.append((start, query or span, why))
        paragraph.clear()

    for number, line in enumerate(lines, 1):
        fence_match = re.match(r"^\s*```(\w*)\s*$", line)
        if fence is None and fence_match:
            flush_paragraph()
            fence, block, fence_line = fence_match.group(1), [], number
            continue
        if fence is not None:
            if line.strip() == "```":
                if fence == "promql":
                    found += [(fence_line, q, "") for q in block_queries(block)]
                fence = None
            else:
                block.append(line)
            continue
        if not line.strip():
            flush_paragraph()
            continue
        if not paragraph:
            start = number
        paragraph.append(line.strip())
    flush_paragraph()
    return found


AGGREGATORS = re.compile(r"\b(sum|avg|min|max|count|group|stddev|stdvar|topk|bottomk|quantile)\s*"
                         r"(?:(by|without)\s*\(([^)]*)\)\s*)?\(")
# A grouping that keeps one of these keeps each node apart: the node itself, or something that
# lives on one node only (a container, a pod: kube-state-metrics' joins group by them).
ONE_NODE = {"instance", "container_id", "pod_uid", "pod"}


def closing(text, start):
    """The index of the bracket closing the one opened at text[start]."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return len(text)


def node_mixing(query):
    """The aggregations of a query that add up or compare the nodes of a fleet: one over series of
    ours (hwperf_*, a recording rule) whose grouping keeps no label of ONE_NODE (`sum by (target)`
    adds one target's series of every node; `sum by (cpu)` every node's CPU 0), or drops instance
    (`without (instance)`), or that has no grouping at all. topk and bottomk pick series and keep
    their labels; they mix nothing."""
    text, found = strip_strings(query), []
    for match in AGGREGATORS.finditer(text):
        name, modifier, labels = match.group(1), match.group(2), match.group(3)
        end = closing(text, match.end() - 1)
        if not modifier:  # the modifier may follow the argument: sum(x) by (a)
            after = re.match(r"\s*(by|without)\s*\(([^)]*)\)", text[end + 1:])
            modifier, labels = (after.group(1), after.group(2)) if after else (None, None)
        if name in ("topk", "bottomk"):
            continue
        argument = text[match.end():end]
        if not any(n.startswith("hwperf_") or ":" in n for n, _ in series_names(argument)):
            continue
        kept = {label.strip() for label in (labels or "").split(",") if label.strip()}
        if modifier == "without" and "instance" not in kept:
            continue
        if modifier == "by" and kept & ONE_NODE:
            continue
        found.append(text[match.start():match.end() - 1].strip() if modifier else f"{name}(...)")
    return found


def doc_queries(src):
    """[(page:line, query)] and [(page:line, span, why it is not one)]."""
    queries, skipped = [], []
    for path in pages(src):
        for line, text, why in page_queries(path):
            where = f"{os.path.relpath(path, src)}:{line}"
            (skipped if why else queries).append((where, text, why) if why else (where, text))
    return queries, skipped


if __name__ == "__main__":
    found, passed_over = doc_queries(sys.argv[1])
    for where, query in found:
        print(f"query  {where}: {query}")
    for where, span, why in passed_over:
        print(f"not a query  {where}: {span} ({why})")
