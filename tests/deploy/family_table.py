#!/usr/bin/env python3
"""README.md's table of metric families ("What it exports") against every family the exporter
can export, so that the table cannot drift from the code again (hwperf_memory_bytes_total was
exported, and listed on the uncore page, but not in the table).

The families come from
  - the collectors' sources: every family name built from literal parts
    (make_gauge_family / make_counter_family / metric_name / counter_name of string literals under
    collectors/; a name with a part computed at run time is left to the expositions), and
  - expositions given on the command line: fixture runs of the exporter (tests/integration/
    test_family_table.cpp runs it on the RAPL, uncore and hwmon fixtures and on this machine).
A family is in the table when
  - a row of the table names it (its first cell's code spans), or
  - a row's pattern covers it (`hwperf_cpu_<name>_total`, `hwperf_resctrl_monitor_group_*`) and a
    collector page that row links to (docs/collectors/*.md) names it, or covers it by a pattern, in
    the first column of its Metrics table: the collector's page says what the pattern stands for.
Each name the table gives exactly must also be a family the exporter declares or a run exported,
so that a renamed family does not stay in the table under its old name.
Usage: family_table.py SOURCE_DIR [EXPOSITION...] (prints each problem; exit 1 if any)."""
import glob
import os
import re
import sys

BUILT = re.compile(r"\b(make_gauge_family|make_counter_family|metric_name|counter_name)\s*\(\s*"
                   r"\{([^{}]*)\}")
TYPE_LINE = re.compile(r"^# TYPE (hwperf_\w+) (\w+)$", re.M)
CODE_SPAN = re.compile(r"`([^`]+)`")
LINK = re.compile(r"\]\(([^)#]+\.md)(?:#[^)]*)?\)")


def declared_families(src):
    """{family: source file} of the names built from literal parts, and how many names were not."""
    found, computed = {}, 0
    for path in sorted(glob.glob(os.path.join(src, "collectors", "**", "*.cpp"), recursive=True)):
        for match in BUILT.finditer(open(path).read()):
            parts = [part.strip() for part in match.group(2).split(",")]
            if not all(re.fullmatch(r'"[a-z0-9_]+"', part) for part in parts):
                computed += 1
                continue
            counter = match.group(1) in ("make_counter_family", "counter_name")
            name = "hwperf_" + "_".join(part.strip('"') for part in parts)
            found.setdefault(name + ("_total" if counter else ""), os.path.relpath(path, src))
    return found, computed


def exported_families(path):
    """The families of a text exposition (its # TYPE lines); OpenMetrics drops a counter's _total
    there, the text format keeps it: either is read as the family the samples carry."""
    families = set()
    for name, kind in TYPE_LINE.findall(open(path).read()):
        families.add(name + "_total" if kind == "counter" and not name.endswith("_total") else name)
    return families


def pattern(span):
    """A family name or pattern of the docs as a regular expression: `<word>` and a trailing `*`
    stand for one or more characters of a name."""
    text = re.escape(span)
    text = re.sub(r"<\w+>", "[a-z0-9_]+", text.replace(r"\<", "<").replace(r"\>", ">"))
    return re.compile(text.replace(r"\*", "[a-z0-9_]+") + "$")


def names_in(cell):
    """The family names and patterns a table cell's code spans give."""
    return [span for span in CODE_SPAN.findall(cell) if re.fullmatch(r"hwperf_[\w<>*]+", span)]


def table_rows(text, heading):
    """(first cell, whole row) of each row of the first table after `heading`."""
    start = text.find(heading)
    if start < 0:
        return []
    rows, in_table = [], False
    for line in text[start:].split("\n")[1:]:
        if line.startswith("|"):
            in_table = True
            if not re.match(r"^\|\s*-", line) and not re.match(r"^\|\s*(family|name)\s*\|", line,
                                                                 re.I):
                rows.append((line.split("|")[1], line))
        elif in_table or line.startswith("#"):
            break
    return rows


def page_names(src, page):
    """The names and patterns of the first column of a page's Metrics table."""
    path = os.path.join(src, page)
    if not os.path.exists(path):
        return []
    return [name for first, _ in table_rows(open(path).read(), "## Metrics")
            for name in names_in(first)]


def readme_table(src):
    """[(names and patterns of a row, pages it links to)] of README.md's table of families."""
    rows = table_rows(open(os.path.join(src, "README.md")).read(), "## What it exports")
    return [(names_in(first), [os.path.normpath(link) for link in LINK.findall(row)
                               if link.startswith("docs/collectors/")])
            for first, row in rows]


def where_documented(family, table, src):
    """How the table covers a family: "exact", "pattern" (and its page), or None."""
    for names, _ in table:
        if family in names:
            return "exact"
    for names, pages in table:
        if any("<" in name or "*" in name for name in names if pattern(name).match(family)):
            for page in pages:
                if any(pattern(name).match(family) for name in page_names(src, page)):
                    return "pattern"
    return None


def check(src, expositions):
    """(problems, a summary line)."""
    declared, computed = declared_families(src)
    if not declared:
        return [f"no family name built from literal parts found under {src}/collectors: "
                f"has the way names are built changed? ({os.path.basename(__file__)})"], ""
    families = {family: f"declared in {where}" for family, where in declared.items()}
    for path in expositions:
        exported = exported_families(path)
        if not exported:
            return [f"{path} holds no family (no # TYPE line)"], ""
        for family in sorted(exported):
            families.setdefault(family, f"exported by the run {os.path.basename(path)}")
    table = readme_table(src)
    if not table:
        return ["README.md has no table of families under '## What it exports'"], ""
    problems, counts = [], {"exact": 0, "pattern": 0}
    for family, origin in sorted(families.items()):
        how = where_documented(family, table, src)
        if how:
            counts[how] += 1
            continue
        problems.append(f"{family} ({origin}) is not in README.md's table of families: add it to "
                        f"its collector's row (or give the row a pattern that covers it, and the "
                        f"linked docs/collectors/ page's Metrics table the family itself)")
    for names, _ in table:
        for name in names:
            if "<" not in name and "*" not in name and name not in families:
                problems.append(f"README.md's table lists {name}, which no collector declares "
                                f"and no run exported: renamed, or gone?")
    summary = (f"{len(families)} families ({len(declared)} declared in the sources, "
               f"{computed} names computed at run time left to {len(expositions)} expositions): "
               f"{counts['exact']} named in README.md's table, {counts['pattern']} covered by a "
               f"pattern of it and named on their collector's page")
    return problems, summary


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    problems, summary = check(os.path.abspath(argv[1]), argv[2:])
    for problem in problems:
        print(f"FAIL: {problem}", file=sys.stderr)
    if summary:
        print(summary)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
