#!/usr/bin/env python3
"""Every relative link in README.md, docs/**/*.md and bench/README.md must resolve: the file or
folder exists, and a #anchor names a heading of the target page as GitHub spells it.

    check_links.py SOURCE_DIR
"""
import pathlib
import re
import sys
import urllib.parse

INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HTML_HREF = re.compile(r"<a\s[^>]*href=\"([^\"]+)\"", re.IGNORECASE)
HTML_ANCHOR = re.compile(r"<a\s[^>]*(?:id|name)=\"([^\"]+)\"", re.IGNORECASE)
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def prose_lines(text):
    """(line number, line) outside fenced code blocks."""
    fenced = None
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if match:
            if fenced is None:
                fenced = match.group(1)
            elif match.group(1) == fenced:
                fenced = None
            continue
        if fenced is None:
            yield number, line


def slug(heading):
    """GitHub's anchor for a heading (github-slugger): the rendered text, lower case, without
    punctuation, each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link reads as its text
    text = re.sub(r"<[^>]+>", "", text)
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"(?<!\w)_|_(?!\w)", "", text)  # emphasis, not snake_case
    text = text.strip().lower()
    return "".join(c for c in text if c.isalnum() or c in " -_").replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found = set()
        seen = {}
        for _, line in prose_lines(path.read_text(encoding="utf-8")):
            found.update(HTML_ANCHOR.findall(line))
            match = HEADING.match(line)
            if not match:
                continue
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        cache[path] = found
    return cache[path]


def links(text):
    for number, line in prose_lines(text):
        line = CODE_SPAN.sub("", line)
        for pattern in (INLINE_LINK, DEFINITION, HTML_HREF):
            for target in pattern.findall(line):
                yield number, target


def check(root, page):
    problems = []
    for number, target in links(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):  # http:, mailto:, ...
            continue
        where = f"{page.relative_to(root)}:{number}: {target}"
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / urllib.parse.unquote(path_part)).resolve() if path_part else page
        if not linked.exists():
            problems.append(f"{where}: no such file or folder")
            continue
        if root.resolve() not in linked.resolve().parents and linked.resolve() != root.resolve():
            problems.append(f"{where}: outside the repository")
            continue
        if anchor:
            if linked.is_dir() or linked.suffix != ".md":
                problems.append(f"{where}: an anchor into something that is not a Markdown page")
            elif urllib.parse.unquote(anchor) not in anchors(linked):
                problems.append(f"{where}: {linked.relative_to(root.resolve())} has no heading "
                                f"with anchor #{anchor}")
    return problems


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    pages = [root / "README.md", root / "bench" / "README.md"]
    pages += sorted((root / "docs").rglob("*.md"))
    problems = []
    checked = 0
    for page in pages:
        if not page.exists():
            problems.append(f"{page.relative_to(root)}: missing")
            continue
        checked += sum(1 for _ in links(page.read_text(encoding="utf-8")))
        problems += check(root, page)
    for problem in problems:
        print(problem)
    if problems:
        print(f"FAIL: {len(problems)} broken links")
        return 1
    print(f"{checked} links in {len(pages)} pages resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
