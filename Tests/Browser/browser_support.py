"""What the browser tests stand on: a Cloak server of their own, merchant pages on other origins,
one headless Chromium, and polling helpers.

stdlib + selenium + requests only. Nothing here knows Cloak Elements' behaviour: the tests do.
"""
import contextlib
import functools
import hashlib
import http.server
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import requests

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))

CHROMIUM = os.environ.get("CLOAK_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CLOAK_CHROMEDRIVER", "/usr/bin/chromedriver")


class SetupError(Exception):
    """The test environment could not be made (no binary, no browser, server did not start): exit 2."""


# ---------------------------------------------------------------------------------------------
# Polling and checks


def wait_until(fn, timeout, what, detail=None):
    """Calls `fn` every 50 ms until it returns something truthy, and returns that. After `timeout`
    seconds: AssertionError "timed out after Ns waiting for <what>", plus `detail()` (what was seen)."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() >= deadline:
            extra = ""
            if detail is not None:
                try:
                    extra = "\n" + str(detail())
                except Exception as e:  # the detail is a courtesy; never hide the timeout behind it
                    extra = f"\n(could not describe what was seen: {type(e).__name__}: {e})"
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}{extra}")
        time.sleep(0.05)


def stays(fn, duration, what, detail=None):
    """A bounded negative check: `fn` must stay truthy for `duration` seconds (polled every 50 ms)."""
    deadline = time.monotonic() + duration
    while True:
        if not fn():
            extra = ""
            if detail is not None:
                extra = "\n" + str(detail())
            raise AssertionError(f"{what}{extra}")
        if time.monotonic() >= deadline:
            return
        time.sleep(0.05)


class Checks:
    """Soft checks: every failed expectation of a test is reported, not only the first."""

    def __init__(self):
        self.failures = []

    def expect(self, condition, message):
        if not condition:
            self.failures.append(message)
        return bool(condition)

    def equal(self, got, want, what):
        return self.expect(got == want, f"{what}: expected {want!r}, got {got!r}")

    def done(self):
        if self.failures:
            raise AssertionError("\n".join(self.failures))


def canon(value):
    """JSON text that tells true from 1 and ignores member order: what "exactly equal JSON" means here."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def short(value, limit=600):
    text = value if isinstance(value, str) else canon(value)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


# ---------------------------------------------------------------------------------------------
# Ports, pages and the server


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass

    def end_headers(self):
        self.send_header("Cache-Control", "no-store")
        super().end_headers()


class PageServer:
    """A merchant's web server: serves `directory` on 127.0.0.1 (pages use http://localhost:PORT, another
    origin and another site than Cloak's http://127.0.0.1:P1)."""

    def __init__(self, directory):
        handler = functools.partial(_QuietHandler, directory=directory)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.origin = f"http://localhost:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, name=f"pages:{self.port}", daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def token_sha256(token):
    return hashlib.sha256(token.encode()).hexdigest()


def write_config(path, config):
    """JSON is YAML: the file is the config as JSON text, so no value needs YAML quoting rules."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("# Written by Tests/Browser for one test run.\n")
        f.write(json.dumps(config, indent=2))
        f.write("\n")


def resolve_binary():
    path = os.environ.get("CLOAK_BIN", ".build/debug/cloak")
    candidates = [path] if os.path.isabs(path) else [os.path.abspath(path), os.path.join(REPO, path)]
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise SetupError(f"{path} is missing or not executable (build it first: swift build; or set CLOAK_BIN)")


def hermetic_env():
    """The caller's environment without any CLOAK_* override."""
    return {k: v for k, v in os.environ.items() if not k.startswith("CLOAK_")}


class CloakServer:
    """`cloak serve --config <dir>/cloak.yaml` on 127.0.0.1:port, its vault in `directory`."""

    def __init__(self, binary, directory, port, config):
        self.binary = binary
        self.directory = directory
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.config_path = os.path.join(directory, "cloak.yaml")
        self.log_path = os.path.join(directory, "server.log")
        write_config(self.config_path, config)
        self.log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [binary, "serve", "--config", self.config_path], cwd=directory, env=hermetic_env(),
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def log_tail(self, lines=40):
        try:
            with open(self.log_path, "rb") as f:
                return b"\n".join(f.read().splitlines()[-lines:]).decode("utf-8", "replace")
        except OSError:
            return "(no log)"

    def wait_healthy(self, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                if requests.get(self.url + "/healthz", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        state = f"exited with {self.process.returncode}" if self.process.poll() is not None else "still running"
        raise SetupError(f"cloak did not answer /healthz on {self.url} ({state}); its output:\n{self.log_tail()}")

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                print(f"cloak on {self.url} did not stop on SIGTERM; killing it", file=sys.stderr)
                self.process.kill()
                self.process.wait()
        self.log.close()


# ---------------------------------------------------------------------------------------------
# The browser


class Browser:
    """One headless Chromium for the whole run. With WebDriver BiDi (selenium >= 4.16) it also hears the
    console of cross-origin frames, which `get_log("browser")` does not (site isolation puts them in
    another renderer)."""

    def __init__(self):
        try:
            from selenium import webdriver
            from selenium.webdriver.chrome.service import Service
        except ImportError as e:
            raise SetupError(f"selenium is not installed ({e}): python3 -m pip install selenium") from e
        for path, what in [(CHROMIUM, "chromium"), (CHROMEDRIVER, "chromedriver")]:
            if not os.access(path, os.X_OK):
                raise SetupError(f"{what} not found at {path} (apt-get install -y chromium chromium-driver)")
        self.console = []  # (level, text) from BiDi, every frame
        self.js_errors = []
        self.bidi = False

        def options(bidi):
            o = webdriver.ChromeOptions()
            o.binary_location = CHROMIUM
            for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1400",
                        "--no-first-run", "--no-default-browser-check", "--disable-extensions"]:
                o.add_argument(arg)
            o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
            if bidi:
                o.enable_bidi = True
            return o

        try:
            self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options(True))
            self.driver.script.add_console_message_handler(self._on_console)
            self.driver.script.add_javascript_error_handler(self._on_js_error)
            self.bidi = True
        except Exception as e:  # an older selenium, or BiDi refused: classic WebDriver only
            print(f"(WebDriver BiDi unavailable, frame consoles unheard: {type(e).__name__}: {e})")
            with contextlib.suppress(Exception):
                self.driver.quit()
            self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options(False))
        self.driver.set_script_timeout(30)
        self.driver.set_page_load_timeout(30)
        self._page_log = []

    def _on_console(self, message):
        self.console.append((str(getattr(message, "level", "")), str(getattr(message, "text", message))))

    def _on_js_error(self, error):
        self.js_errors.append(str(getattr(error, "text", error)))

    def console_lines(self):
        """Every console line heard so far: BiDi (all frames) and the classic log (the page)."""
        try:
            self._page_log.extend(e.get("message", "") for e in self.driver.get_log("browser"))
        except Exception:
            pass
        return [text for _, text in self.console] + list(self._page_log)

    def quit(self):
        with contextlib.suppress(Exception):
            self.driver.quit()


def make_temp_dir(prefix):
    return tempfile.mkdtemp(prefix=prefix)


def remove_dir(path):
    shutil.rmtree(path, ignore_errors=True)


def random_token():
    return "browser-" + secrets.token_hex(24)


# ---------------------------------------------------------------------------------------------
# Running a suite


def run_suite(label, tests, make_run, argv, banner, prefix="", before_each=None, earlier_failures=None,
              describe=None, after_each=None):
    """Runs the `test_*` functions of `tests` named in argv (all without names; `--except NAME...`
    all but those) on one `make_run()`
    (its `start()`, `close()`, `cloak` and `browser`); prints one ok/FAIL line each (`prefix` before
    the name), then "N passed, M failed". Hooks: `before_each(run)`; `earlier_failures(run)`, the
    checks that failed before an assertion stopped the test; `describe(run)`, what the page shows
    after an unexpected error; `after_each(run, name, failed)`. Exit status: 0, 1 a test failed, 2
    the environment could not be made."""
    import traceback
    names = argv[1:]
    excluding = bool(names) and names[0] == "--except"
    if excluding:
        names = names[1:]
    wanted = set(names)
    known = {f.__name__[5:] for f in tests}
    if wanted - known:
        print(f"{label}: no test named {', '.join(sorted(wanted - known))}; tests: "
              + " ".join(f.__name__[5:] for f in tests), file=sys.stderr)
        return 2
    if excluding:  # `--except NAME...`: every test but those
        wanted = known - wanted
    started = time.monotonic()
    run = make_run()
    try:
        run.start()
    except SetupError as e:
        print(f"{label}: {e}", file=sys.stderr)
        run.close()
        return 2
    except BaseException:
        run.close()
        raise
    passed = failed = 0
    earlier = earlier_failures or (lambda run: [])
    try:
        print(banner(run))
        for test in tests:
            name = test.__name__[5:]
            if wanted and name not in wanted:
                continue
            t0 = time.monotonic()
            if before_each:
                before_each(run)
            ok = False
            try:
                test(run)
                ok = True
                passed += 1
                print(f"ok   {prefix}{name} ({time.monotonic() - t0:.1f}s)")
            except AssertionError as e:
                failed += 1
                print(f"FAIL {prefix}{name} ({time.monotonic() - t0:.1f}s)")
                text = str(e)
                for line in [f for f in earlier(run) if f not in text] + text.splitlines():
                    print(f"       {line}")
            except Exception as e:  # a WebDriver or HTTP failure: report it with where it happened
                failed += 1
                print(f"FAIL {prefix}{name} ({time.monotonic() - t0:.1f}s): {type(e).__name__}: {short(str(e), 800)}")
                for line in earlier(run):
                    print(f"       {line}")
                for line in traceback.format_exc().splitlines()[-8:]:
                    print(f"       {line}")
                if describe:
                    try:
                        print("       " + describe(run).replace("\n", "\n       "))
                    except Exception:
                        pass
            finally:
                if after_each:
                    with contextlib.suppress(Exception):
                        after_each(run, name, not ok)
        if failed:
            lines = [l for l in run.cloak.log_tail(400).splitlines() if '"msg":"request"' not in l]
            if lines:
                print("cloak's last log lines (request lines left out):")
                for line in lines[-15:]:
                    print(f"  {short(line, 400)}")
        if run.browser and run.browser.js_errors:
            print(f"JavaScript errors heard in the browser ({len(run.browser.js_errors)}):")
            for err in run.browser.js_errors[:15]:
                print(f"  {short(err, 300)}")
    finally:
        run.close()
    print(f"({time.monotonic() - started:.0f}s)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0
