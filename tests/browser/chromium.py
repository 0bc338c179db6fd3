"""Debian's chromium, headless, driven by chromedriver: the one way the browser test
(topology_page_test.py) and the page bench (bench/topology_page_bench.py) open it."""
import os
import shutil


def open_chromium(workdir, window_size, browser_log=False, driver_log=None):
    """A headless chromium at `window_size` ("1280,720") with its profile under `workdir`.

    browser_log keeps the page's console messages for driver.get_log("browser"); driver_log is
    where chromedriver writes its own log (None: nowhere). Selenium is imported here so that a
    caller can say which package is missing when it is."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for argument in ["--headless=new", "--disable-gpu", "--window-size=" + window_size,
                     "--disable-dev-shm-usage", "--user-data-dir=" + workdir + "/profile"]:
        options.add_argument(argument)
    if os.geteuid() == 0:
        options.add_argument("--no-sandbox")  # chromium refuses to run as root with its sandbox
    if browser_log:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=shutil.which("chromedriver"), log_output=driver_log)
    return webdriver.Chrome(service=service, options=options)
