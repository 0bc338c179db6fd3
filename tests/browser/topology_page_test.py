#!/usr/bin/python3
"""The /topology page in a real browser: Debian's chromium, headless, driven by chromedriver.

Starts the exporter (PAPI software events per CPU, as root), loads the page and checks that
  - there is one box per CPU, nested in the core, NUMA node and package /metrics names for it;
  - CPU time (perf::CPU-CLOCK, the default family) reads about one second per second on each CPU;
  - a help text with <script> and quotes renders as text (one <script> element on the page);
  - with page faults selected, a page-faulting loop pinned to CPU 1 (taskset) changes CPU 1's
    value and colour within 5 s, while CPU 0's stays lower;
  - RAPL power is written on the package box (a second exporter reads a powercap tree whose
    energy counters this test advances at 90 W for the package and 6 W for DRAM);
  - the browser logged no console error and no Content-Security-Policy violation.
A missing browser, driver or Selenium fails with the package to install, never skips.

  topology_page_test.py --exporter PATH [--screenshot PNG]
With HWPERF_UPDATE_SCREENSHOT=1 and --screenshot, the screenshot is also written there (the docs'
picture, docs/images/topology-page.png); otherwise it goes to the temporary directory only.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from chromium import open_chromium

EVIL_HELP = "<script>window.hwperfInjected=1</script> \"double\" 'single' & done"


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def need_browser():
    try:
        from selenium import webdriver  # noqa: F401
    except ImportError:
        fail("python3-selenium is not installed: apt-get install python3-selenium "
             "(scripts/deps.sh installs it); run this test with Debian's /usr/bin/python3")
    if shutil.which("chromium") is None:
        fail("chromium is not installed: apt-get install chromium (scripts/deps.sh installs it)")
    if shutil.which("chromedriver") is None:
        fail("chromedriver is not installed: apt-get install chromium-driver "
             "(scripts/deps.sh installs it)")


PAPI_EVENTS = ("collectors:\n"
               "  papi:\n"
               "    events:\n"
               "      - perf::CPU-CLOCK\n"
               "      - perf::PAGE-FAULTS\n"
               "      - event: perf::CONTEXT-SWITCHES\n"
               "        help: '" + EVIL_HELP.replace("'", "''") + "'\n")


def start_exporter(binary, workdir, yaml=PAPI_EVENTS + "  rapl:\n    enabled: false\n"):
    config = os.path.join(workdir, "hwperf.yml")
    with open(config, "w") as f:
        f.write(yaml)
    log_path = os.path.join(workdir, "exporter.log")
    log = open(log_path, "w")
    process = subprocess.Popen(
        [binary, "--config.file=" + config, "--web.listen-address=127.0.0.1:0"],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    deadline = time.time() + 30
    while time.time() < deadline:
        text = open(log_path).read()
        match = re.search(r"Listening on 127\.0\.0\.1:(\d+)", text)
        if match:
            return process, int(match.group(1)), log_path
        if process.poll() is not None:
            fail("the exporter exited before listening:\n" + text)
        time.sleep(0.1)
    process.kill()
    fail("the exporter did not listen within 30 s:\n" + open(log_path).read())


def cpu_places(port):
    """{cpu: (core, package, numa_node)} from hwperf_cpu_info in /metrics."""
    body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read()
    places = {}
    for line in body.decode().splitlines():
        if not line.startswith("hwperf_cpu_info{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
        places[int(labels["cpu"])] = (labels["core"], labels["package"],
                                      labels.get("numa_node", ""))
    if not places:
        fail("no hwperf_cpu_info in /metrics: the topology collector is needed")
    return places


def open_browser(workdir):
    return open_chromium(workdir, "1280,720", browser_log=True,
                         driver_log=os.path.join(workdir, "chromedriver.log"))


def wait_for(what, predicate, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    fail("%s within %.0f s" % (what, seconds))


def thread_state(driver, cpu):
    return driver.execute_script(
        "const el = document.getElementById('c' + arguments[0]);"
        "return el ? [el.dataset.value, getComputedStyle(el).backgroundColor, el.title] : null;",
        cpu)


def value_of(driver, cpu):
    state = thread_state(driver, cpu)
    return float(state[0]) if state and state[0] else None


def start_faulting_on(cpu):
    # Fresh anonymous pages touched once each: every touch is a page fault on the CPU it ran on.
    program = ("import mmap\n"
               "n = 64 << 20\n"
               "while True:\n"
               "    m = mmap.mmap(-1, n)\n"
               "    m[0:n:4096] = bytes(n // 4096)\n"
               "    m.close()\n")
    return subprocess.Popen(["taskset", "-c", str(cpu), "/usr/bin/python3", "-c", program])


def check_power(binary, driver):
    """RAPL watts on the package box, from a powercap tree whose counters advance here."""
    workdir = tempfile.mkdtemp(prefix="hwperf_browser_rapl_")
    zones = {"intel-rapl:0": ("package-0", 261999999939, 90),
             "intel-rapl:0:2": ("dram", 64424509425, 6)}
    for zone, (name, span, _) in zones.items():
        folder = os.path.join(workdir, "sys/class/powercap", zone)
        os.makedirs(folder)
        for file, text in (("name", name), ("energy_uj", "1000000"),
                           ("max_energy_range_uj", str(span)), ("enabled", "1")):
            with open(os.path.join(folder, file), "w") as f:
                f.write(text + "\n")
    stop = threading.Event()

    def advance():
        energy = {zone: 1000000 for zone in zones}
        while not stop.wait(0.25):
            for zone, (_, _, watts) in zones.items():
                energy[zone] += watts * 250000  # microjoules in a quarter second
                with open(os.path.join(workdir, "sys/class/powercap", zone, "energy_uj"), "w") as f:
                    f.write("%d\n" % energy[zone])
    writer = threading.Thread(target=advance)
    writer.start()
    exporter, port, _ = start_exporter(
        binary, workdir, "paths:\n  sysfs: " + workdir + "/sys\n"
        "collectors:\n  rapl:\n    interface: powercap\n  papi:\n    enabled: false\n")
    try:
        driver.get("http://127.0.0.1:%d/topology" % port)
        text = wait_for("watts on package P#0", lambda: driver.execute_script(
            "return document.getElementById('w0').textContent"), 10)
        match = re.fullmatch(r"package ([\d.]+) W, dram ([\d.]+) W", text)
        # Reads one second apart see four or five quarter-second steps.
        if not match or not 60 < float(match.group(1)) < 120 or not 3 < float(match.group(2)) < 8:
            fail("package P#0 reads %r, expected about 90 W package and 6 W dram" % text)
        print("ok: package P#0 reads %r (written at 90 W and 6 W)" % text)
        problems = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        if problems:
            fail("browser log on the power page: %r" % problems)
        driver.get("about:blank")  # no more polls of an exporter about to stop
    finally:
        stop.set()
        writer.join()
        exporter.send_signal(signal.SIGTERM)
        exporter.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--screenshot")
    args = parser.parse_args()
    need_browser()
    if shutil.which("taskset") is None:
        fail("taskset is not installed: apt-get install util-linux")
    workdir = tempfile.mkdtemp(prefix="hwperf_browser_")
    exporter, port, log_path = start_exporter(args.exporter, workdir)
    driver = None
    spinner = None
    try:
        places = cpu_places(port)
        if 1 not in places or 0 not in places:
            fail("this test needs CPUs 0 and 1 online; the exporter sees %s" % sorted(places))
        driver = open_browser(workdir)
        driver.get("http://127.0.0.1:%d/topology" % port)

        # One box per CPU, inside the boxes of its core, NUMA node and package.
        boxes = driver.execute_script("return document.querySelectorAll('#machine .pu').length")
        if boxes != len(places):
            fail("%d CPU boxes on the page, %d CPUs in hwperf_cpu_info" % (boxes, len(places)))
        for cpu, (core, package, numa) in sorted(places.items()):
            nesting = driver.execute_script(
                "const el = document.getElementById('c' + arguments[0]);"
                "if (!el) return null;"
                "const up = s => { const b = el.closest(s); return b ? b.id : null; };"
                "return [up('.core'), up('.numa'), up('.pkg'), el.textContent];", cpu)
            expected = ["k%s-%s" % (package, core), "n%s" % numa if numa else None,
                        "p%s" % package, str(cpu)]
            if nesting != expected:
                fail("CPU %d is drawn in %s, expected %s" % (cpu, nesting, expected))
        print("ok: %d CPU boxes, each in its core, NUMA node and package" % boxes)

        # The default family is CPU time; it needs two reads for a rate.
        wait_for("the family list", lambda: driver.execute_script(
            "return document.getElementById('family').options.length > 0"), 10)
        default = driver.execute_script("return document.getElementById('family').value")
        if default != "hwperf_cpu_clock_seconds_total":
            fail("default family %r, expected hwperf_cpu_clock_seconds_total" % default)
        for cpu in (0, 1):
            rate = wait_for("a CPU-CLOCK rate for CPU %d" % cpu, lambda: value_of(driver, cpu), 10)
            # perf's cpu-clock counted per CPU advances with wall time, busy or idle.
            if not 0.5 < rate < 1.5:
                fail("CPU %d reads %.3f s/s of CPU-CLOCK, expected about 1" % (cpu, rate))
        print("ok: CPU-CLOCK is the default, about 1 s/s on CPUs 0 and 1")

        # A help text with markup and quotes is text.
        texts = driver.execute_script(
            "const o = [...document.querySelectorAll('#family option')]"
            "  .find(o => o.value === 'hwperf_cpu_context_switches_total');"
            "return [o ? o.title : null, document.scripts.length, window.hwperfInjected || 0,"
            "        document.querySelectorAll('#family script').length];")
        if texts[0] is None or not texts[0].startswith(EVIL_HELP):
            fail("the help with <script> and quotes reads %r" % texts[0])
        if texts[1:] != [1, 0, 0]:
            fail("markup in a help text became elements: %r" % texts)
        print("ok: a help with <script> and quotes is shown as text")

        # Page faults per CPU: a loop faulting pages on CPU 1 must show there.
        from selenium.webdriver.support.ui import Select
        Select(driver.find_element("id", "family")).select_by_value(
            "hwperf_cpu_page_faults_total")
        wait_for("a page-fault rate for CPU 1", lambda: value_of(driver, 1) is not None, 10)
        # The colour scale tops at the highest rate of the last 30 reads: faulting on CPU 0 first
        # raises it, so that CPU 1's colour before is not already the top of the scale by chance
        # (other work on the machine faults too).
        spinner = start_faulting_on(0)
        time.sleep(2.5)
        spinner.kill()
        spinner.wait()
        time.sleep(2.5)  # two more reads: CPU 1's rate from before the loop starts there
        before = thread_state(driver, 1)
        spinner = start_faulting_on(1)
        started = time.time()
        after = None
        while time.time() - started < 5:
            state, zero = thread_state(driver, 1), value_of(driver, 0)
            if (state[0] and float(state[0]) > 1.5 * float(before[0] or 0) + 1000 and
                    state[1] != before[1] and zero is not None and zero < float(state[0])):
                after = state
                break
            time.sleep(0.1)
        took = time.time() - started
        if after is None:
            fail("within 5 s of faulting on CPU 1: CPU 1 %r (before: %r), CPU 0 %r" %
                 (thread_state(driver, 1), before, thread_state(driver, 0)))
        print("ok: CPU 1 went from %s (%s) to %s (%s) in %.1f s; CPU 0 reads %s" %
              (before[2], before[1], after[2], after[1], took, thread_state(driver, 0)[2]))
        shot = os.path.join(workdir, "topology-page.png")
        driver.set_window_size(900, 300)  # the docs' picture: the machine, little empty page
        driver.save_screenshot(shot)
        if args.screenshot and os.environ.get("HWPERF_UPDATE_SCREENSHOT"):
            shutil.copyfile(shot, args.screenshot)
            print("screenshot written: " + args.screenshot)

        # The browser's log: any error, and every CSP violation, fails.
        status = driver.execute_script("return document.getElementById('status').textContent")
        problems = [e for e in driver.get_log("browser")
                    if e["level"] == "SEVERE" or "Content Security Policy" in e["message"]
                    or "Content-Security-Policy" in e["message"]]
        if problems or status.startswith("blocked"):
            fail("browser log: %r; status: %r" % (problems, status))
        print("ok: no console error, no CSP violation")
        check_power(args.exporter, driver)
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
        if driver is not None:
            driver.quit()
        exporter.send_signal(signal.SIGTERM)
        try:
            exporter.wait(timeout=10)
        except subprocess.TimeoutExpired:
            exporter.kill()
    shutil.rmtree(workdir, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
