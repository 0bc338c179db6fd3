#!/usr/bin/python3
"""How long the /topology page for 512 synthetic CPUs takes to load and draw in Debian's chromium.

Serves the page with build/bench/hwperf_topology_bench --serve (512 CPUs, PAPI's eight typical
events per CPU from a fake counter source whose totals grow) and loads it N times in headless
chromium at 1920x1080. Prints, per load and as medians, in milliseconds from navigation start:
  dom       DOMContentLoaded (the HTML parsed, every box laid out)
  load      the load event (style and script fetched)
  drawn     the first /topology.json applied (family list, legend, every box titled)
  coloured  the first frame with rates (needs a second read, one poll interval later)
  draw      one full redraw of the 512 boxes (the script's own measurement)
and whether all 512 boxes fit on one 1920x1080 screen. A figure, never pass/fail.

  bench/topology_page_bench.py [--bench build/bench/hwperf_topology_bench] [--loads 5]
                               [--screenshot docs/images/topology-page-512.png]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "browser"))
from chromium import open_chromium  # noqa: E402 (found through the path above)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", default=os.path.join(here, "..", "build", "bench",
                                                        "hwperf_topology_bench"))
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--screenshot")
    args = parser.parse_args()

    server = subprocess.Popen([args.bench, "--serve"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    if not line.startswith("serving on "):
        sys.exit("hwperf_topology_bench did not start: %r" % line)
    url = "http://127.0.0.1:%d/topology" % int(line.split()[-1])

    workdir = tempfile.mkdtemp(prefix="hwperf_page_bench_")
    driver = open_chromium(workdir, "1920,1080")
    rows = []
    try:
        for _ in range(args.loads):
            driver.get(url)
            deadline = time.time() + 10
            figures = None
            while time.time() < deadline:
                figures = driver.execute_script("""
                  const nav = performance.getEntriesByType('navigation')[0];
                  const mark = performance.getEntriesByName('hwperf-topology-first-draw')[0];
                  const last = document.getElementById('c511');
                  if (!mark || !last.dataset.value) return null;
                  const box = document.getElementById('machine').getBoundingClientRect();
                  return {dom: nav.domContentLoadedEventEnd, load: nav.loadEventEnd,
                          drawn: mark.startTime, coloured: performance.now(),
                          draw: Number(document.getElementById('machine').dataset.drawMs),
                          fits: box.right <= innerWidth && box.bottom <= innerHeight,
                          width: Math.round(box.right), height: Math.round(box.bottom)};""")
                if figures:
                    break
                time.sleep(0.02)
            if not figures:
                sys.exit("the page did not draw rates within 10 s")
            rows.append(figures)
            print("dom %6.0f  load %6.0f  drawn %6.0f  coloured %6.0f  draw %5.1f   "
                  "boxes end at %dx%d, one screen: %s" %
                  (figures["dom"], figures["load"], figures["drawn"], figures["coloured"],
                   figures["draw"], figures["width"], figures["height"], figures["fits"]))
        if args.screenshot:
            driver.save_screenshot(args.screenshot)
            print("screenshot: " + args.screenshot)
    finally:
        driver.quit()
        server.stdin.close()
        server.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)
    median = {key: statistics.median(row[key] for row in rows)
              for key in ("dom", "load", "drawn", "coloured", "draw")}
    print("median of %d loads (ms from navigation start): DOMContentLoaded %.0f, load %.0f, "
          "first JSON drawn %.0f, first rates coloured %.0f (one 1 s poll later); one redraw of "
          "512 boxes %.1f ms" % (len(rows), median["dom"], median["load"], median["drawn"],
                                 median["coloured"], median["draw"]))


if __name__ == "__main__":
    main()
