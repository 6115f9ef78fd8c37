#!/usr/bin/env python3
"""Takes a screenshot of the example checkout page (examples/web) with headless Chromium: waits for
Cloak's four fields to be ready, types a test card into the frames like a person, waits for the form
to be valid, and saves a PNG.

Starts nothing but Chromium: Cloak and the page's web server must be running (scripts/screenshot
starts both and calls this).

  python3 examples/web/screenshot.py [--url http://localhost:8000/] [--out examples/web/screenshot.png]

Needs selenium (python3 -m pip install selenium) and Chromium with its driver
(apt-get install -y chromium chromium-driver; CLOAK_CHROMIUM, CLOAK_CHROMEDRIVER name other paths).
"""
import argparse
import datetime
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def wait_for(driver, script, timeout, what):
    """Polls `script` (JavaScript returning a value) every 50 ms until it is truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = driver.execute_script(script)
        if value:
            return value
        if time.monotonic() > deadline:
            banner = driver.execute_script("var b = document.getElementById('banner'); return b && !b.hidden ? b.textContent : ''")
            raise SystemExit(f"screenshot: timed out after {timeout}s waiting for {what}"
                             + (f"; the page says: {banner}" if banner else ""))
        time.sleep(0.05)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://localhost:8000/", help="the checkout page (default %(default)s)")
    parser.add_argument("--out", default=os.path.join(HERE, "screenshot.png"), help="the PNG to write")
    parser.add_argument("--width", type=int, default=1024, help="viewport width in CSS pixels (default %(default)s)")
    parser.add_argument("--scale", type=float, default=1, help="device pixel ratio (default %(default)s)")
    args = parser.parse_args()

    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
    except ImportError:
        sys.exit("screenshot: selenium is not installed (python3 -m pip install selenium)")

    chromium = os.environ.get("CLOAK_CHROMIUM", "/usr/bin/chromium")
    chromedriver = os.environ.get("CLOAK_CHROMEDRIVER", "/usr/bin/chromedriver")
    for path in (chromium, chromedriver):
        if not os.access(path, os.X_OK):
            sys.exit(f"screenshot: {path} not found (apt-get install -y chromium chromium-driver)")

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--hide-scrollbars",
                f"--window-size={args.width},900", f"--force-device-scale-factor={args.scale}"]:
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    try:
        driver.get(args.url)
        wait_for(driver, "return document.documentElement.dataset.cloak === 'ready' ||"
                         " document.documentElement.dataset.cloak === 'error'", 20, "Cloak's fields")
        if driver.execute_script("return document.documentElement.dataset.cloak") == "error":
            banner = driver.execute_script("return document.getElementById('banner').textContent")
            sys.exit(f"screenshot: the page could not mount Cloak's fields: {banner}")

        year = (datetime.date.today().year + 3) % 100
        for slot, text in [("number", "4111111111111111"), ("exp", f"12{year:02d}"), ("cvc", "123"),
                           ("holder", "Jane Doe")]:
            driver.switch_to.frame(driver.find_element(By.CSS_SELECTOR, f"#{slot} iframe"))
            driver.find_element(By.TAG_NAME, "input").send_keys(text)
            driver.switch_to.default_content()
        wait_for(driver, "return document.documentElement.dataset.valid === 'true'", 10, "a valid form")
        driver.find_element(By.ID, "order-title").click()  # leave the fields, as a person would before paying
        wait_for(driver, "return !document.getElementById('pay').disabled", 5, "the Pay button")

        # The window as tall as the page's content (the body is at least 100vh tall, so measure the card).
        height = driver.execute_script(
            "return Math.ceil(document.querySelector('.checkout').getBoundingClientRect().bottom + window.scrollY + 48)")
        chrome = driver.execute_script("return window.outerHeight - window.innerHeight")
        driver.set_window_size(args.width, max(height, 400) + max(chrome, 0))
        wait_for(driver, f"return Math.abs(window.innerHeight - {max(height, 400)}) <= 2", 5, "the window to fit the page")
        out = os.path.abspath(args.out)
        if not driver.save_screenshot(out):
            sys.exit(f"screenshot: could not write {out}")
        print(f"screenshot: {out}")
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
