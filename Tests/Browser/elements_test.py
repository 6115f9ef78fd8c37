#!/usr/bin/env python3
"""Cloak Elements in a real browser (headless Chromium through Selenium), against the built binary.

Starts its own `cloak serve` (CLOAK_BIN, default .build/debug/cloak; every CLOAK_* variable unset) on a
free 127.0.0.1 port P1 with a temporary vault, one bearer token and its forms (`checkout`, `parity`, `masked`, `kyc`,
`attributes`) and a small BIN table (`cloak bins import`, issue 48), and serves merchant test pages from two other origins: http://localhost:P2 (listed in
elements.allowed_origins) and http://localhost:P3 (not listed). The pages load
http://127.0.0.1:P1/elements/v1/cloak.js and record every event (Tests/Browser/harness.js).

The contract is docs/elements.md. Each test prints "ok" or "FAIL" with what was expected; the run ends
with "N passed, M failed" and exits 1 when a test failed, 2 when the environment could not be made.

Usage: python3 Tests/Browser/elements_test.py [test names...]   (all tests when none is named)
       (or scripts/browser-tests)
"""
import datetime
import gzip
import json
import os
import re
import subprocess
import sys
import time
import base64
import hashlib
import io
import secrets
import struct
import zipfile
import zlib
from urllib.parse import quote

import requests

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_support import (  # noqa: E402
    HERE, REPO, Browser, Checks, CloakServer, PageServer, SetupError, canon, free_port, make_temp_dir,
    hermetic_env, random_token, remove_dir, resolve_binary, run_suite, short, stays, token_sha256, wait_until)

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

FIXTURE = os.path.join(REPO, "Tests", "Fixtures", "collect-cases.json")
DEBUG = bool(os.environ.get("ELEMENTS_TEST_DEBUG"))

CARD = "4111111111111111"
TODAY = datetime.date.today()
EXP_YY = (TODAY.year + 5) % 100
EXP_TYPED = f"08{EXP_YY:02d}"             # typed as digits; the frame may show 08/31
EXP_SHAPES = [EXP_TYPED, f"08/{EXP_YY:02d}", f"08/20{EXP_YY:02d}", f"0820{EXP_YY:02d}"]
CVC = "837"
HOLDER = "Jane Doe"

CHECKOUT_NAMES = {"number": "card_data.card_number", "exp": "card_data.exp_date", "cvc": "card_data.card_cvc",
                  "holder": "card_data.card_holder"}
DEFAULT_TITLES = {"number": "Card number", "exp": "Expiration date", "cvc": "Security code",
                  "holder": "Cardholder name"}
AUTOCOMPLETE = {"number": "cc-number", "exp": "cc-exp", "cvc": "cc-csc", "holder": "cc-name"}
STATE_KEYS_CARD = {"isRequired", "isRequiredValidOnly", "isValid", "isEmpty", "isDirty", "inputLength",
                   "validationErrors", "cardBrand", "cardBrandName", "bin", "last4", "isFocused"}
PARITY_KINDS = ["card", "cvc", "exp", "ssn", "date", "name"]
SLOTS = ["number", "exp", "cvc", "holder", "card", "shown", "shown2", "shown3", "bound_ok", "bound_other", "mask",
         "kholder", "doc", "pages", "a_card", "a_picky"] + \
    [f"p_{k}" for k in PARITY_KINDS + ["identity_name"]]

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Cloak Elements: browser test page</title>
<style>
  body {{ font-family: sans-serif; margin: 16px; }}
  .slot {{ width: 380px; margin: 6px 0; min-height: 2px; }}
  #outside {{ padding: 8px; background: #eee; width: 380px; }}
</style>
<script src="harness.js"></script>
<script src="{cloak}/elements/v1/cloak.js"{sri}></script>
</head>
<body>
<p id="outside">Outside every frame</p>
{slots}
</body>
</html>
"""


def page_html(cloak_url, integrity=None):
    sri = f' integrity="{integrity}" crossorigin="anonymous"' if integrity else ""
    slots = "\n".join(f'<div class="slot" id="{s}"></div>' for s in SLOTS)
    return PAGE.format(cloak=cloak_url, sri=sri, slots=slots)


def checkout_form():
    return {
        "mapping_policy": "nestedJSON",
        "fields": [
            {"name": "card_data.card_number", "type": "cardNumber", "required": True, "required_valid_only": True,
             "tokenization": {"format": "FPE_T_FOUR", "storage": "PERSISTENT"}},
            {"name": "card_data.card_cvc", "type": "cvc", "card_field": "card_data.card_number", "required": True,
             "required_valid_only": True, "tokenization": {"format": "UUID", "storage": "VOLATILE"}},
            {"name": "card_data.exp_date", "type": "expDate", "required": True, "required_valid_only": True,
             "input_date_format": "shortYear", "output_date_format": "longYear",
             "serializers": [{"month": "card_data.exp_month"}, {"year": "card_data.exp_year"}]},
            {"name": "card_data.card_holder", "type": "cardHolderName", "required": True},
        ],
    }


def parity_form():
    return {"fields": [
        {"name": "card", "type": "cardNumber"},
        {"name": "cvc", "type": "cvc"},
        {"name": "exp", "type": "expDate"},
        {"name": "ssn", "type": "ssn"},
        {"name": "date", "type": "date"},
        {"name": "name", "type": "cardHolderName"},
        {"name": "identity_name", "type": "none", "validation": [{"pattern": "^[\\p{L} .'-]+$"}]},
    ]}


def mask_table():
    """The fixture's table of edits of a masked field (`maskEdits`, issue 44)."""
    with open(FIXTURE, encoding="utf-8") as f:
        return json.load(f)["maskEdits"]


def masked_form():
    """The table's field (the shipped checkout's `billing.phone`: its mask, transform and validation)."""
    table = mask_table()
    mask = [p["literal"] if "literal" in p else {"regex": p["regex"]} for p in table["mask"]]
    return {"fields": [{"name": table["field"], "type": "none", "mask": mask, "transform": table["transform"],
                        "validation": table["validation"]}]}


FILE_TYPES = ["image/png", "image/jpeg", "application/pdf"]
FILE_MAX_BYTES = 1048576
KYC_NAMES = {"kholder": "kyc.holder", "doc": "kyc.document", "pages": "kyc.pages"}
FILE_STATE_KEYS = ["isValid", "isEmpty", "validationErrors", "fileCount", "bytes", "mediaType"]
FILE_MARKER = "cloak-file-marker-" + secrets.token_hex(8)  # inside the PNG: the page must never see it


def kyc_form():
    """Issue 47: a text field, a required one-file field and an optional field of up to two files."""
    return {"fields": [
        {"name": "kyc.holder", "type": "cardHolderName", "required": True},
        {"name": "kyc.document", "type": "file", "max_bytes": FILE_MAX_BYTES, "types": FILE_TYPES, "max_files": 1,
         "required": True},
        {"name": "kyc.pages", "type": "file", "max_bytes": FILE_MAX_BYTES, "types": ["image/png", "application/pdf"],
         "max_files": 2},
    ]}


def png_bytes(text=FILE_MARKER, pad=0):
    """A real 1x1 PNG with a tEXt chunk (and `pad` zero bytes after IEND, to make it large)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"tEXt", b"Comment\x00" + text.encode()) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
            + chunk(b"IEND", b"") + b"\x00" * pad)


def zip_bytes():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("readme.txt", "an archive is never a document\n")
    return buf.getvalue()


# file name -> (content, the validationErrors and mediaType of a kyc.document holding it alone)
FILE_CASES = {
    "id.png": (png_bytes(), [], "image/png"),
    "scan.pdf": (b"%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n", [], "application/pdf"),
    "archive.zip": (zip_bytes(), ["FILE_EXECUTABLE_VALIDATION_ERROR"], None),
    "program.elf": (b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 120, ["FILE_EXECUTABLE_VALIDATION_ERROR"], None),
    "note.txt": (b"hello, this is text\n", ["FILE_TYPE_VALIDATION_ERROR"], None),
    "anim.gif": (b"GIF89a\x01\x00\x01\x00\x00\x00\x00;", ["FILE_TYPE_VALIDATION_ERROR"], "image/gif"),
    "empty.png": (b"", ["FILE_EMPTY_VALIDATION_ERROR"], None),
    "large.png": (png_bytes(pad=FILE_MAX_BYTES), ["FILE_SIZE_VALIDATION_ERROR"], "image/png"),
    "polyglot.png": (png_bytes() + zip_bytes(), ["FILE_POLYGLOT_VALIDATION_ERROR"], "image/png"),
    # Issue 55, item 11: an ELF identification anywhere past the start, not only in the first KiB;
    # the four magic bytes alone (as compressed data holds them by chance) are no ELF.
    "elf-inside.png": (png_bytes() + b"\x00" * 5000 + b"\x7fELF\x02\x01\x01" + b"\x00" * 100,
                       ["FILE_POLYGLOT_VALIDATION_ERROR"], "image/png"),
    "magic-only.png": (png_bytes() + b"\x00" * 5000 + b"\x7fELF\x00\x00\x00" + b"\x00" * 100, [], "image/png"),
}


# Issue 48: the BIN table the server gets (`cloak bins import`), and what it says of CARD's BIN.
BIN_TABLE = ("low,high,brand,funding,issuer,country,currency\n"
             "411111,411111,visa,credit,Test Bank,US,USD\n"
             "510510,510510,mastercard,debit,Other Bank,CA,CAD\n")
CARD_ATTRIBUTES = {"brand": "visa", "funding": "credit", "issuer": "Test Bank", "country": "US", "currency": "USD"}
DEBIT_CARD = "5105105105105100"   # 510510: a debit card of the table
NO_RANGE_CARD = "5555555555554444"  # no range of the table holds it
BINS_PATH = "/elements/v1/bins/"


def attributes_form():
    """Issue 48: a card number, and one whose `accept` rule takes debit cards only."""
    return {"fields": [
        {"name": "card", "type": "cardNumber"},
        {"name": "picky", "type": "cardNumber", "accept": {"funding": ["debit"]}},
    ]}


def server_config(port, directory, token, allowed_origins):
    config = {
        "server": {"listen": f"127.0.0.1:{port}"},
        "vault": {"store": f"sqlite:{directory}/cloak.db", "keys": f"file:{directory}/keys.json"},
        "auth": {"tokens": [{"id": "browser-tests", "sha256": token_sha256(token),
                             "scopes": ["aliases:create", "aliases:reveal"]}]},
        # Every upload comes from 127.0.0.1: more MiB a minute than the default 120 (issue 55).
        "limits": {"anonymous": {"requests_per_minute": 6000, "burst": 1000}, "upload_mib_per_minute": 4096},
        "forms": {"checkout": checkout_form(), "parity": parity_form(), "masked": masked_form(), "kyc": kyc_form(),
                  "attributes": attributes_form()},
        "bins": {"refresh_s": 1},  # the node adopts the table imported after its start within a second
    }
    if allowed_origins is not None:
        config["elements"] = {"allowed_origins": allowed_origins, "font_origins": []}
    return config


def digits(text):
    return re.sub(r"\D", "", text or "")


def without_focus(state):
    if isinstance(state, dict):
        return {k: v for k, v in state.items() if k != "isFocused"}
    return state


def state_diff(want, got):
    if not isinstance(got, dict):
        return f"browser state is {short(got, 200)}"
    parts = []
    for k in sorted(set(want) | set(got)):
        if k not in got:
            parts.append(f"{k}: missing in the browser (server {canon(want[k])})")
        elif k not in want:
            parts.append(f"{k}: not in the server's state (browser {canon(got[k])})")
        elif canon(want[k]) != canon(got[k]):
            parts.append(f"{k}: server {canon(want[k])}, browser {canon(got[k])}")
    return "; ".join(parts)


class Run:
    """Everything the tests share: the server, the page servers, the browser and a few results."""

    def __init__(self):
        self.tmp = make_temp_dir("cloak-browser-")
        self.pages = self.other = self.cloak = self.browser = None
        self.http = requests.Session()
        self.card_alias = None
        self.file_states = {}  # file name -> the state the file frame gave a kyc.document holding it
        self.timing = {}
        self.current_checks = None
        self.bins_error = None  # why the BIN table could not be imported (the attribute tests say so)

    def checks(self):
        """The soft checks of the running test (the runner reports them even when the test stops early)."""
        self.current_checks = Checks()
        return self.current_checks

    def start(self):
        self.binary = resolve_binary()
        self.pagedir = os.path.join(self.tmp, "pages")
        os.makedirs(self.pagedir)
        self.pages = PageServer(self.pagedir)      # P2: listed in elements.allowed_origins
        self.other = PageServer(self.pagedir)      # P3: not listed
        self.token = random_token()
        vault = os.path.join(self.tmp, "vault")
        os.makedirs(vault)
        port = free_port()
        self.cloak = CloakServer(self.binary, vault, port, server_config(port, vault, self.token, [self.pages.origin]))
        self.cloak.wait_healthy()
        self.url = self.cloak.url
        try:
            self.import_bins()
        except AssertionError as e:
            self.bins_error = str(e)
        with open(os.path.join(HERE, "harness.js"), encoding="utf-8") as f:
            harness = f.read()
        with open(os.path.join(self.pagedir, "harness.js"), "w", encoding="utf-8") as f:
            f.write(harness)
        with open(os.path.join(self.pagedir, "index.html"), "w", encoding="utf-8") as f:
            f.write(page_html(self.url))
        self.filedir = os.path.join(self.tmp, "files")
        os.makedirs(self.filedir)
        for name, (content, _, _) in FILE_CASES.items():
            with open(os.path.join(self.filedir, name), "wb") as f:
                f.write(content)
        self.browser = Browser()
        self.d = self.browser.driver

    def close(self):
        if self.browser is not None:
            self.browser.quit()
        for name in ["cloak", "pages", "other"]:
            obj = getattr(self, name, None)
            if obj is not None:
                try:
                    obj.stop()
                except Exception as e:
                    print(f"(stopping {name}: {e})", file=sys.stderr)
        remove_dir(self.tmp)

    # ---- server

    def import_bins(self):
        """`cloak bins import` of BIN_TABLE into the running server's store (the store and key ring exist
        once it started), then waits for the node to adopt it (bins.refresh_s is 1)."""
        path = os.path.join(self.tmp, "bins.csv")
        with open(path, "w", encoding="utf-8") as f:
            f.write(BIN_TABLE)
        p = subprocess.run([self.binary, "bins", "import", "--config", self.cloak.config_path, path,
                            "--source", "browser tests"], capture_output=True, text=True, timeout=60,
                           cwd=self.cloak.directory, env=hermetic_env())
        if p.returncode != 0:
            raise AssertionError(f"`cloak bins import` exited with {p.returncode}: {short(p.stdout + p.stderr, 600)}")

        def adopted():
            try:
                r = self.http.get(f"{self.url}{BINS_PATH}411111", timeout=5)
                return r.status_code == 200 and r.json().get("cardAttributes") == CARD_ATTRIBUTES
            except (requests.RequestException, ValueError):
                return False
        wait_until(adopted, 15, f"GET {BINS_PATH}411111 to answer the imported attributes {CARD_ATTRIBUTES}",
                   lambda: short(self.http.get(f"{self.url}{BINS_PATH}411111", timeout=5).text, 300))

    def auth(self):
        return {"Authorization": f"Bearer {self.token}"}

    def validate(self, form, fields):
        r = self.http.post(f"{self.url}/forms/{form}/validate", json={"fields": fields}, timeout=10)
        if r.status_code != 200:
            raise AssertionError(f"POST /forms/{form}/validate {short(fields, 200)} answered {r.status_code}: "
                                 f"{short(r.text, 300)}")
        return r.json()

    def create_alias(self, value, fmt):
        r = self.http.post(f"{self.url}/aliases", headers=self.auth(), timeout=10,
                           json={"data": [{"value": value, "format": fmt, "storage": "PERSISTENT"}]})
        if r.status_code != 201:
            raise AssertionError(f"POST /aliases answered {r.status_code}: {short(r.text, 300)}")
        return r.json()["data"][0]["aliases"][0]["alias"]

    def reveal_value(self, alias):
        r = self.http.get(f"{self.url}/aliases/{quote(alias, safe='')}", headers=self.auth(), timeout=10)
        if r.status_code != 200:
            raise AssertionError(f"GET /aliases/<alias> with the bearer token answered {r.status_code}: "
                                 f"{short(r.text, 300)}")
        return r.json()["data"][0]["value"]

    def new_session(self, aliases, ttl=60):
        r = self.http.post(f"{self.url}/elements/sessions", headers=self.auth(), timeout=10,
                           json={"aliases": aliases, "ttl_s": ttl})
        if r.status_code != 201:
            raise AssertionError(f"POST /elements/sessions answered {r.status_code}, expected 201: {short(r.text, 300)}")
        return r.json()

    # ---- page

    def open_page(self, origin=None, name="index.html"):
        self.d.switch_to.default_content()
        self.d.get(f"{origin or self.pages.origin}/{name}")
        wait_until(lambda: self.d.execute_script("return !!(window.__h && window.Cloak)"), 10,
                   "window.Cloak on the test page (cloak.js loaded)", self.why_no_cloak)

    def why_no_cloak(self):
        try:
            r = self.http.get(f"{self.url}/elements/v1/cloak.js", timeout=5)
            got = f"GET /elements/v1/cloak.js answers {r.status_code} ({len(r.content)} bytes)"
        except requests.RequestException as e:
            got = f"GET /elements/v1/cloak.js failed: {e}"
        return got + "\n" + self.describe()

    def js(self, script, *args):
        return self.d.execute_script(script, *args)

    def events(self, src=None, event=None, since=0):
        return self.js("return __h.ev(arguments[0], arguments[1], arguments[2])", src, event, since)

    def count(self):
        return self.js("return __h.count()")

    def frames(self):
        return self.js("return __h.frames()")

    def describe(self, src=None, n=14):
        """What the page saw lately: for timeout messages."""
        lines = []
        try:
            self.d.switch_to.default_content()
            evs = self.js("return (window.__h ? __h.ev(arguments[0], null, 0) : [])", src)
            lines.append(f"last events{' of ' + src if src else ''} ({len(evs)} in all):")
            for e in evs[-n:]:
                lines.append(f"  #{e['i']} {e['src']} {e['event']} {short(e['data'], 240)}"
                             + (f" more={short(e['more'], 120)}" if e.get("more") else ""))
            errors = self.js("return window.__errors || []")
            if errors:
                lines.append("page errors: " + short(errors, 600))
            frames = self.js("return window.__h ? __h.frames() : []")
            lines.append("iframes: " + short([{k: f[k] for k in ("slot", "name", "title", "height")} for f in frames],
                                             600))
        except Exception as e:
            lines.append(f"(page unreadable: {type(e).__name__}: {e})")
        console = [l for l in self.browser.console_lines()
                   if "favicon" not in l and "Launching Mapper" not in l][-8:]
        if console:
            lines.append("console (last lines, every frame):\n  " + "\n  ".join(short(l, 300) for l in console))
        if self.browser.js_errors:
            lines.append("JavaScript errors (every frame): " + short(self.browser.js_errors[-5:], 800))
        return "\n".join(lines)

    def wait_event(self, src, event, pred=None, since=0, timeout=10, what=None):
        def probe():
            for e in self.events(src, event, since):
                if pred is None or pred(e["data"]):
                    return e
            return None
        return wait_until(probe, timeout, what or f"a {event!r} event from {src}", lambda: self.describe(src))

    def wait_ready(self, form_key, srcs, timeout=15):
        for src in srcs:
            self.wait_event(src, "ready", timeout=timeout, what=f"the 'ready' event of field {src}")
        self.wait_event(f"form:{form_key}", "ready", timeout=timeout, what=f"the 'ready' event of form {form_key}")

    def checkout(self, key="co", extra=None):
        made = self.js("return __h.checkout(arguments[0], arguments[1])", key, extra)
        problems = [f"{k}: {v}" for k, v in made.items() if not v.get("ok")]
        if problems:
            raise AssertionError("mounting the checkout form failed: " + "; ".join(problems))
        self.wait_ready(key, list(CHECKOUT_NAMES))

    def frame_in(self, slot):
        els = self.d.find_elements(By.CSS_SELECTOR, f"#{slot} iframe")
        if len(els) != 1:
            raise AssertionError(f"expected one iframe in #{slot}, found {len(els)}\n{self.describe()}")
        return els[0]

    def enter(self, slot):
        """Switches into the one iframe of #slot."""
        self.d.switch_to.default_content()
        self.d.switch_to.frame(self.frame_in(slot))

    def type_in(self, slot, text, clear=False):
        self.enter(slot)
        try:
            inputs = self.d.find_elements(By.TAG_NAME, "input")
            if len(inputs) != 1:
                raise AssertionError(f"expected one <input> in the frame of #{slot}, found {len(inputs)}")
            keys = [Keys.CONTROL, "a", Keys.NULL, Keys.DELETE] if clear else []
            inputs[0].send_keys(*keys, text)
        finally:
            self.d.switch_to.default_content()

    def blur(self, slot):
        """Takes the focus off the input in #slot's frame, as leaving the field does."""
        self.enter(slot)
        try:
            self.d.execute_script("if (document.activeElement) document.activeElement.blur();")
        finally:
            self.d.switch_to.default_content()

    def fill_checkout(self, number=CARD, exp=EXP_TYPED, cvc=CVC, holder=HOLDER, key="co"):
        since = self.count()
        for slot, text in [("number", number), ("exp", exp), ("cvc", cvc), ("holder", holder)]:
            self.type_in(slot, text)
        return self.wait_event(f"form:{key}", "change", lambda s: isinstance(s, dict) and s.get("isValid") is True,
                               since, timeout=8, what=f"a form 'change' event with isValid true (form {key}) after "
                                                      f"typing {number!r}, {exp!r}, {cvc!r}, {holder!r}")

    def choose_files(self, slot, names):
        """Sets files on the <input type=file> in #slot's frame as a user choosing them does (WebDriver's file
        upload: ChromeDriver's DOM.setFileInputFiles, which fires `input` and `change` in the frame)."""
        self.enter(slot)
        try:
            inputs = self.d.find_elements(By.CSS_SELECTOR, "input[type=file]")
            if len(inputs) != 1:
                raise AssertionError(f"expected one <input type=file> in the frame of #{slot}, found {len(inputs)}")
            inputs[0].send_keys("\n".join(os.path.join(self.filedir, n) for n in names))
        finally:
            self.d.switch_to.default_content()

    def mount_kyc(self, key, slots=("kholder", "doc", "pages")):
        """The kyc form: kyc.holder with field(), the file fields with file()."""
        made = self.js("""
            var key = arguments[0], names = arguments[2], out = [__h.form(key, 'kyc')];
            arguments[1].forEach(function (s) {
              out.push(__h.field(key, s, '#' + s, {name: names[s]}, s === 'kholder' ? 'field' : 'file'));
            });
            return out;""", key, list(slots), KYC_NAMES)
        bad = [m for m in made if not m.get("ok")]
        if bad:
            raise AssertionError(f"mounting the kyc form failed: {bad}")
        self.wait_ready(key, list(slots))

    def submit(self, key, kind, options=None):
        return self.d.execute_async_script(
            "__h.submit(arguments[0], arguments[1], arguments[2], arguments[arguments.length - 1]);",
            key, kind, options)

    def seen_text(self):
        """What the page saw, as JSON text: events (without timestamps) and messages."""
        evs = self.js("return window.__events.map(function (e) { return [e.src, e.event, e.data, e.more]; })")
        msgs = self.js("return window.__messages")
        return canon(evs), canon(msgs)


# =============================================================================================
# The tests, in order


def test_mount(t):
    c = t.checks()
    t.open_page()
    t.checkout("co")
    times = t.js("return window.__times.co")
    if times and times.get("ready") is not None:
        t.timing["cold"] = times["ready"] - times["start"]
    frames = t.frames()
    for slot in CHECKOUT_NAMES:
        mine = [f for f in frames if f["slot"] == slot]
        if not c.expect(len(mine) == 1, f"#{slot}: expected exactly one iframe, found {len(mine)}"):
            continue
        c.equal(mine[0]["title"], DEFAULT_TITLES[slot], f"#{slot} iframe title")
    outside = [f for f in frames if f["slot"] not in CHECKOUT_NAMES]
    c.expect(len(outside) == 1, f"expected one controller iframe outside the field targets, found {len(outside)}: "
                                f"{short(outside, 400)}")

    def sized():
        fs = [f for f in t.frames() if f["slot"] in CHECKOUT_NAMES]
        return len(fs) == 4 and all(f["height"] > 0 and abs(f["height"] - 150) > 0.5 for f in fs)
    try:
        wait_until(sized, 5, "every field iframe to size itself (height > 0 and not the default 150px)",
                   lambda: short([{k: f[k] for k in ("slot", "height")} for f in t.frames()]))
    except AssertionError as e:
        c.expect(False, str(e))
    controller_visible = t.js("""
        var out = [];
        document.querySelectorAll('iframe').forEach(function (f) {
          if (f.closest('.slot')) return;
          var s = getComputedStyle(f), b = f.getBoundingClientRect();
          var hidden = s.display === 'none' || s.visibility === 'hidden' || b.width * b.height <= 1 ||
                       b.right <= 0 || b.bottom <= 0 || s.opacity === '0';
          if (!hidden) out.push({width: b.width, height: b.height, left: b.left, top: b.top});
        });
        return out;""")
    c.expect(not controller_visible, f"the controller frame should be hidden, but shows: {controller_visible}")
    for slot in CHECKOUT_NAMES:
        t.enter(slot)
        try:
            inputs = t.d.find_elements(By.TAG_NAME, "input")
            if not c.expect(len(inputs) == 1, f"#{slot} frame: expected exactly one <input>, found {len(inputs)}"):
                continue
            c.equal(inputs[0].get_attribute("autocomplete"), AUTOCOMPLETE[slot], f"#{slot} input autocomplete")
            if slot != "holder":
                c.equal(inputs[0].get_attribute("inputmode"), "numeric", f"#{slot} input inputmode")
        finally:
            t.d.switch_to.default_content()
    threw = t.events(None, "on-threw")
    c.expect(not threw, f"field.on()/form.on() threw for documented events: {short(threw)}")
    errors = t.events(None, "error")
    c.expect(not errors, f"unexpected error events: {short(errors)}")
    c.done()


def test_typing(t):
    c = t.checks()
    t.open_page()
    t.checkout("co")
    since = t.count()
    t.type_in("number", "4")
    first = t.wait_event("number", "change", lambda s: isinstance(s, dict) and s.get("inputLength") == 1, since,
                         what="a change event of the number with inputLength 1 after typing '4'")["data"]
    c.equal(first.get("cardBrand"), "visa", "cardBrand after the first digit '4'")
    c.equal(first.get("cardBrandName"), "Visa", "cardBrandName after the first digit '4'")
    c.equal(first.get("isValid"), False, "isValid after '4'")
    t.type_in("number", CARD[1:])
    typing = t.wait_event("number", "change", lambda s: isinstance(s, dict) and s.get("inputLength") == 16, since,
                          what=f"a change event with inputLength 16 after typing {CARD}")["data"]
    # While the field has focus a Visa number can still grow (19 digits): its validity, BIN and
    # last four wait for the blur, so the page never learns them for several lengths of one number.
    c.equal((typing.get("isValid"), typing.get("bin"), typing.get("last4"), typing.get("isFocused")),
            (False, "", "", True), "(isValid, bin, last4, isFocused) of the number while typing")
    since = t.count()
    t.blur("number")
    state = t.wait_event("number", "change", lambda s: isinstance(s, dict) and s.get("isFocused") is False
                         and s.get("isValid") is True, since, what="a valid change event after the blur")["data"]
    for key, want in [("bin", "41111111"), ("last4", "1111"), ("inputLength", 16), ("cardBrand", "visa"),
                      ("cardBrandName", "Visa"), ("validationErrors", []), ("isEmpty", False), ("isDirty", True)]:
        c.equal(state.get(key), want, f"number state {key}")
    c.equal(set(state), STATE_KEYS_CARD, "the keys of a card number's change state")
    form_state = t.fill_checkout(number="", key="co")["data"]  # the number is already there
    c.equal(sorted(form_state.get("fields", {})), sorted(CHECKOUT_NAMES.values()), "form change: field names")
    check_no_leak(t, c, "after typing")

    # paste: the whole number in one send_keys
    since = t.count()
    r = t.js("return __h.call('number', 'clear')")
    c.expect(r.get("ok"), f"number.clear() threw: {r}")
    t.wait_event("number", "change", lambda s: isinstance(s, dict) and s.get("isEmpty") is True, since,
                 what="a change event with isEmpty true after number.clear()")
    since = t.count()
    t.type_in("number", CARD)
    t.blur("number")
    t.wait_event("number", "change", lambda s: isinstance(s, dict) and s.get("isValid") is True
                 and s.get("last4") == "1111", since, what="a valid state after sending the whole number at once")
    # paste as a script does it (what autofill and paste leave behind): value set, one input event
    for pasted in [CARD, "4111 1111 1111 1111"]:
        since = t.count()
        t.type_in("number", "", clear=True)
        t.wait_event("number", "change", lambda s: isinstance(s, dict) and s.get("isEmpty") is True, since,
                     what="a change event with isEmpty true after select-all + Delete")
        since = t.count()
        t.enter("number")
        try:
            t.js("var i = document.querySelector('input'); i.value = arguments[0];"
                 "i.dispatchEvent(new Event('input', {bubbles: true})); i.blur();", pasted)
        finally:
            t.d.switch_to.default_content()
        got = t.wait_event("number", "change", lambda s: isinstance(s, dict) and s.get("isValid") is True
                           and s.get("isFocused") is False, since, what=f"a valid state after setting the input's value to {pasted!r} and "
                                       "dispatching 'input' inside the frame")["data"]
        c.equal((got.get("bin"), got.get("last4"), got.get("inputLength")), ("41111111", "1111", 16),
                f"(bin, last4, inputLength) after pasting {pasted!r}")
    check_no_leak(t, c, "after pasting")
    c.done()


def test_one_release_per_number(t):
    """A Visa is valid at 13 and at 16 digits: once the last four of one length left the frame (a
    blur, a submission), a longer or shorter version of the same digits releases nothing more."""
    c = t.checks()
    t.open_page()
    t.checkout("co")
    short_number, long_number = "4222222222222", "4222222222222006"
    since = t.count()
    t.type_in("number", short_number)
    t.blur("number")
    first = t.wait_event("number", "change", lambda s: isinstance(s, dict) and s.get("isFocused") is False
                         and s.get("inputLength") == 13, since, what="the state after leaving 13 digits")["data"]
    c.equal((first.get("isValid"), first.get("last4")), (True, "2222"), "13 valid digits, left: (isValid, last4)")
    since = t.count()
    t.type_in("number", long_number[13:])
    t.blur("number")
    second = t.wait_event("number", "change", lambda s: isinstance(s, dict) and s.get("isFocused") is False
                          and s.get("inputLength") == 16, since, what="the state after leaving 16 digits")["data"]
    c.equal((second.get("isValid"), second.get("last4")), (False, ""), "the same digits made longer: (isValid, last4)")
    r = t.submit("co", "validate")
    c.expect(r.get("rejected"), f"a submission of the lengthened number should reject, got {short(r)}")
    # Emptied, the field starts afresh.
    since = t.count()
    t.type_in("number", long_number, clear=True)
    t.blur("number")
    third = t.wait_event("number", "change", lambda s: isinstance(s, dict) and s.get("isFocused") is False
                         and s.get("inputLength") == 16, since, what="the state after retyping 16 digits")["data"]
    c.equal(third.get("last4"), "2006", "last4 after emptying the field and typing the number again")
    c.done()


def test_one_validity_per_number(t):
    """Issue 34, defect 9: typed digit by digit, a Visa passes through 13 and 16 digits, each of
    which may pass Luhn. While the input has focus and the number is shorter than its brand's
    longest length, the page learns no validity (isValid false, no bin, no last4): with the BIN and
    the last four, the Luhn outcome of each prefix would cut the middle digits' candidates by ten
    a length. The number's one validity comes with its one last four (blur or longest length)."""
    c = t.checks()
    t.open_page()
    t.checkout("co")
    number = "4222222222222006"  # 4222222222222 (13 digits) passes Luhn, and so do all 16
    since = t.count()
    for digit in number:
        t.type_in("number", digit)
    t.wait_event("number", "change", lambda s: isinstance(s, dict) and s.get("inputLength") == 16, since,
                 what="the change event of the 16th digit")
    typing = [e["data"] for e in t.events("number", "change", since) if isinstance(e["data"], dict)]
    told = [(s.get("inputLength"), s.get("isValid"), s.get("bin"), s.get("last4")) for s in typing
            if s.get("isFocused") and (s.get("isValid") or s.get("bin") or s.get("last4"))]
    c.equal(told, [], "(length, isValid, bin, last4) of states that told a prefix's validity while typing")
    errors = {tuple(s.get("validationErrors") or []) for s in typing if s.get("isFocused") and s.get("inputLength")}
    c.equal(errors, {("CARD_NUMBER_VALIDATION_ERROR",)},
            "the errors of every focused prefix (one state for valid and invalid prefixes alike)")
    since = t.count()
    t.blur("number")
    left = t.wait_event("number", "change", lambda s: isinstance(s, dict) and s.get("isFocused") is False, since,
                        what="the state after the blur")["data"]
    c.equal((left.get("isValid"), left.get("bin"), left.get("last4")), (True, "42222222", "2006"),
            "(isValid, bin, last4) once the field is left")
    c.done()


def test_tab_order(t):
    """Tab walks from the page's input before the fields, through each field frame in page order,
    to the page's input after them, as it would through plain inputs."""
    c = t.checks()
    t.open_page()
    t.js("var b = document.createElement('input'); b.id = 'before';"
         "document.getElementById('number').before(b);"
         "var a = document.createElement('input'); a.id = 'after';"
         "document.getElementById('holder').after(a);")
    t.checkout("co")
    t.d.execute_script("document.getElementById('before').focus();")
    for slot in ["number", "exp", "cvc", "holder"]:
        since = t.count()
        t.d.switch_to.active_element.send_keys(Keys.TAB)
        t.wait_event(slot, "focus", since=since, timeout=5, what=f"Tab to reach the {slot} frame's input")
        t.d.switch_to.default_content()
    t.d.switch_to.default_content()
    t.d.switch_to.frame(t.frame_in("holder"))
    t.d.switch_to.active_element.send_keys(Keys.TAB)
    t.d.switch_to.default_content()
    wait_until(lambda: t.d.execute_script("return document.activeElement && document.activeElement.id") == "after", 5,
               "Tab from the last frame to reach the page's input after it",
               lambda: repr(t.d.execute_script("return document.activeElement && document.activeElement.outerHTML")))
    c.done()


def check_no_leak(t, c, when):
    events, messages = t.seen_text()
    for secret in [CARD, "4111 1111 1111 1111", "411111111111"]:
        c.expect(secret not in events, f"{when}: an event carries {secret!r}")
        c.expect(secret not in messages, f"{when}: a postMessage to the page carries {secret!r}")
    for secret in [CVC] + EXP_SHAPES:
        c.expect(secret not in events, f"{when}: an event carries the typed {secret!r}")
    lines = t.browser.console_lines() + [x["text"] for x in t.js("return window.__console")]
    for secret in [CARD, "411111111111"]:
        bad = [l for l in lines if secret in l]
        c.expect(not bad, f"{when}: a console line carries {secret!r}: {short(bad, 300)}")


def test_isolation(t):
    c = t.checks()
    t.open_page()
    t.checkout("co")
    t.type_in("number", CARD)
    got = t.js("""
        return Array.prototype.map.call(document.querySelectorAll('iframe'), function (f) {
          var out = {slot: f.closest('.slot') ? f.closest('.slot').id : 'controller'};
          try { out.contentDocument = f.contentDocument === null ? 'null' : 'readable'; }
          catch (e) { out.contentDocument = 'threw ' + e.name; }
          try { var d = f.contentWindow.document; out.windowDocument = 'read: ' + String(d); }
          catch (e) { out.windowDocument = 'threw ' + e.name; }
          try { out.value = String(f.contentWindow.document.querySelector('input').value); }
          catch (e) { out.value = 'threw ' + e.name; }
          return out;
        });""")
    c.expect(len(got) >= 5, f"expected four field frames and a controller, found {len(got)} iframes")
    for f in got:
        c.equal(f["contentDocument"], "null", f"{f['slot']} iframe.contentDocument from the page")
        c.expect(f["windowDocument"].startswith("threw"),
                 f"{f['slot']}: reading contentWindow.document from the page should throw, got {f['windowDocument']!r}")
        c.expect(f["value"].startswith("threw"), f"{f['slot']}: the page read an input's value: {f['value']!r}")
    c.done()


def test_submit_tokens(t):
    c = t.checks()
    t.open_page()
    t.checkout("co")
    t.fill_checkout()
    r = t.submit("co", "tokens")
    if not r.get("resolved"):
        raise AssertionError(f'form.submit("tokens") did not resolve: {r}\n{t.describe()}')
    if r.get("status") != 200:
        raise AssertionError(f'form.submit("tokens"): expected status 200, got {r.get("status")}: {short(r.get("body"))}')
    body = r.get("body") or {}

    def pick(name):  # the tokens answer is flat (README); tolerate a nested one too
        if name in body:
            return body[name]
        node = body
        for part in name.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return node
    alias = pick("card_data.card_number")
    if not isinstance(alias, str):
        raise AssertionError(f"the tokens answer has no card_data.card_number alias: {short(body)}")
    c.expect(digits(alias) != CARD, f"the card alias is the number itself: {alias!r}")
    c.expect(digits(alias)[-4:] == "1111" and len(digits(alias)) == 16,
             f"an FPE_T_FOUR alias keeps the length and the last four digits: {alias!r}")
    cvc_alias = pick("card_data.card_cvc")
    c.expect(isinstance(cvc_alias, str) and cvc_alias.startswith("tok_"),
             f"card_data.card_cvc should be a UUID alias (tok_…), got {cvc_alias!r}")
    c.equal(pick("card_data.exp_month"), "08", "card_data.exp_month in the answer")
    c.equal(pick("card_data.exp_year"), f"20{EXP_YY:02d}", "card_data.exp_year in the answer")
    c.equal(pick("card_data.card_holder"), HOLDER, "card_data.card_holder in the answer")
    value = t.reveal_value(alias)
    c.equal(digits(value), CARD, "the revealed card alias (digits)")
    t.card_alias = alias
    if isinstance(cvc_alias, str):
        c.equal(t.reveal_value(cvc_alias), CVC, "the revealed CVC alias")

    # invalid: an empty required field is an answer (422, 1001), not a rejection
    since = t.count()
    t.js("return __h.call('cvc', 'clear')")
    t.wait_event("cvc", "change", lambda s: isinstance(s, dict) and s.get("isEmpty") is True, since,
                 what="a change event with isEmpty true after cvc.clear()")
    r = t.submit("co", "tokens")
    c.expect(r.get("resolved"), f'submit("tokens") with an empty CVC should resolve, got {r}')
    c.equal(r.get("status"), 422, 'submit("tokens") with an empty CVC: status')
    err = (r.get("body") or {}).get("error") or {}
    c.equal(err.get("code"), 1001, 'submit("tokens") with an empty CVC: body.error.code')
    c.expect("card_data.card_cvc" in canon(r.get("body")),
             f"the 1001 answer should name card_data.card_cvc: {short(r.get('body'))}")
    r = t.submit("co", "validate")
    c.equal(r.get("status"), 200, 'submit("validate"): status')
    vb = r.get("body") or {}
    c.equal(vb.get("isValid"), False, 'submit("validate") with an empty CVC: isValid')
    c.equal(sorted((vb.get("fields") or {})), sorted(CHECKOUT_NAMES.values()), 'submit("validate"): fields')
    # Only where the answer cannot hand a value back: no route of the test configuration uses the
    # checkout form, and a tab or newline must not walk a route out of /proxy.
    for target in [{"route": "/post"}, {"route": "/.\t./forms/checkout/send"}, {"route": "/.\n./aliases"}, "nope"]:
        r = t.submit("co", target)
        c.expect(r.get("rejected") or r.get("threw"), f"submit({target!r}) should reject, got {short(r)}")
    c.done()


def test_card_frame(t):
    c = t.checks()
    t.open_page()
    made = t.js("return [__h.form('cf', 'checkout'), __h.field('cf', 'card', '#card', arguments[0], 'card')]",
                {"number": "card_data.card_number", "exp": "card_data.exp_date", "cvc": "card_data.card_cvc",
                 "holder": "card_data.card_holder"})
    if not (made[0].get("ok") and made[1].get("ok")):
        raise AssertionError(f"form.card() failed: {made}")
    t.wait_ready("cf", ["card"])
    frames = [f for f in t.frames() if f["slot"] == "card"]
    c.equal(len(frames), 1, "iframes in #card")
    t.enter("card")
    try:
        inputs = t.d.find_elements(By.TAG_NAME, "input")
        autos = sorted(i.get_attribute("autocomplete") or "" for i in inputs)
        c.equal(autos, sorted(AUTOCOMPLETE.values()), "autocomplete of the card frame's inputs")
    finally:
        t.d.switch_to.default_content()
    since_fill = t.count()
    t.enter("card")
    try:
        t.js("""
            var values = arguments[0];
            document.querySelectorAll('input').forEach(function (i) {
              var v = values[i.getAttribute('autocomplete')];
              if (v === undefined) return;
              i.value = v;
              i.dispatchEvent(new Event('input', {bubbles: true}));
              i.dispatchEvent(new Event('change', {bubbles: true}));
            });""", {"cc-number": CARD, "cc-exp": f"08/{EXP_YY:02d}", "cc-csc": CVC, "cc-name": HOLDER})
    finally:
        t.d.switch_to.default_content()
    t.wait_event("form:cf", "change", lambda s: isinstance(s, dict) and s.get("isValid") is True, since_fill,
                 what="a form change with isValid true after filling the card frame's four inputs at once")
    changes = t.events("card", "change", since_fill)
    for name in CHECKOUT_NAMES.values():
        c.expect(any(f'"{name}"' in canon([e["data"], e["more"]]) for e in changes),
                 f"no change event of the card frame carries the name {name!r}")
    r = t.submit("cf", "tokens")
    c.equal(r.get("status"), 200, f'submit("tokens") from the card frame ({short(r)})')
    alias = (r.get("body") or {}).get("card_data.card_number")
    c.expect(isinstance(alias, str) and digits(alias) != CARD, f"card alias from the card frame: {alias!r}")
    events, messages = t.seen_text()
    c.expect(CARD not in events and CARD not in messages, "an event or message of the card frame carries the number")
    c.done()


def test_parity(t):
    with open(FIXTURE, encoding="utf-8") as f:
        cases = json.load(f)
    t.open_page()
    made = t.js("""
        var out = [__h.form('par', 'parity')];
        arguments[0].forEach(function (k) { out.push(__h.field('par', 'p_' + k, '#p_' + k, {name: k})); });
        return out;""", PARITY_KINDS + ["identity_name"])
    bad = [m for m in made if not m.get("ok")]
    if bad:
        raise AssertionError(f"mounting the parity form failed: {bad}")
    t.wait_ready("par", [f"p_{k}" for k in PARITY_KINDS + ["identity_name"]])

    plan = [(kind, [v for v in cases[kind] if v] + [v for v in cases[kind] if not v]) for kind in PARITY_KINDS]
    plan.append(("identity_name", ["José Ñúñez", "x1"]))
    expected = {}
    for kind, values in plan:
        expected[kind] = [t.validate("parity", {kind: v})["fields"][kind] for v in values]
    problems = []
    server_ok = [s["isValid"] for s in expected["identity_name"]]
    if server_ok != [True, False]:
        problems.append(f"the server's identity_name states are isValid {server_ok}, expected [True, False] "
                        f"for ['José Ñúñez', 'x1']")

    mismatches = []
    skipped = {}
    total = 0
    quiet_default = 0.6
    for kind, values in plan:
        src = f"p_{kind}"
        frame = t.frame_in(src)
        t.d.switch_to.frame(frame)
        inputs = t.d.find_elements(By.TAG_NAME, "input")
        if len(inputs) != 1:
            t.d.switch_to.default_content()
            problems.append(f"{kind}: expected one <input> in its frame, found {len(inputs)}")
            continue
        field = inputs[0]
        t.d.switch_to.default_content()
        since = t.count()
        fallback = kind == "identity_name"
        differ = 0
        for n, (value, want_state) in enumerate(zip(values, expected[kind])):
            if differ >= 40:
                skipped[kind] = len(values) - n
                break
            total += 1
            want = canon(without_focus(want_state))
            t_case = time.monotonic()
            t.d.switch_to.frame(frame)
            t_in = time.monotonic()
            keys = [Keys.CONTROL, "a", Keys.NULL, Keys.DELETE] if n else []
            field.send_keys(*keys, value)
            # The state is compared once the field is left: a card number's last four wait for that.
            t.d.execute_script("if (document.activeElement) document.activeElement.blur();")
            t_typed = time.monotonic()
            t.d.switch_to.default_content()
            t_out = time.monotonic()
            quiet = 3.0 if fallback else (quiet_default if len(mismatches) < 20 else 0.25)
            typed_at = since
            ok, got, since = settle(t, src, typed_at, want, quiet, hard=8.0 if fallback else 5.0)
            if not ok and len(mismatches) < 20:  # a second, longer look before calling it a difference (a slow CI)
                ok, got, since = settle(t, src, typed_at, want, 1.5, hard=4.0)
            if DEBUG:
                print(f"      {kind} {value!r}: {'equal' if ok else 'DIFFERENT'}; switch in {t_in - t_case:.3f}s, "
                      f"type {t_typed - t_in:.3f}s, switch out {t_out - t_typed:.3f}s, "
                      f"settle {time.monotonic() - t_out:.3f}s")
            if not ok:
                differ += 1
                mismatches.append((kind, value, want_state, got))
    by_kind = {}
    for kind, *_ in mismatches:
        by_kind[kind] = by_kind.get(kind, 0) + 1
    print(f"    parity: {total} inputs typed, {total - len(mismatches)} states equal to the server's"
          + (f", {len(mismatches)} differ ({', '.join(f'{k} {n}' for k, n in by_kind.items())})" if mismatches else ""))
    for kind, value, want_state, got in mismatches:
        if isinstance(got, dict) and len(got) == 1 and next(iter(got)).startswith("(no change"):
            problems.append(f"{kind} {value!r}: no change event after typing; server state {canon(without_focus(want_state))}; "
                            f"last state before {short(next(iter(got.values())), 300)}")
        else:
            problems.append(f"{kind} {value!r}: {state_diff(without_focus(want_state), got)}")
    for kind, n in skipped.items():
        problems.append(f"{kind}: 40 states differed, so its last {n} inputs were not typed")
    if problems:
        raise AssertionError("\n".join(problems))


def settle(t, src, since, want, quiet, hard):
    """Polls the last change state of `src` after typing. Returns (equal, state, next since).
    Equal: the last change state (minus isFocused) is `want`, and no later one arrived on a second look.
    Not equal: no new change event for `quiet` seconds (or `hard` in all)."""
    start = time.monotonic()
    last_i = None
    last_new = start
    got = None
    while True:
        r = t.js("return __h.lastChange(arguments[0])", src)
        now = time.monotonic()
        if r["i"] != last_i:
            last_i = r["i"]
            if r["i"] >= since:
                last_new = now
        got = without_focus(r["data"])
        if r["data"] is not None and canon(got) == want:
            if r["i"] >= since or now - start >= 0.3:
                again = t.js("return __h.lastChange(arguments[0])", src)
                if again["i"] == r["i"]:
                    return True, got, again["n"]
                continue
        if now - last_new >= quiet or now - start >= hard:
            if r["i"] < since:  # nothing after typing: say so, with the state before
                return False, {"(no change event after typing; last state before)": r["data"]}, r["n"]
            return False, got, r["n"]
        time.sleep(0.02)


# One edit in the frame: a single key typed at the caret and a one-character backspace are real
# keystrokes; a longer insertion is a paste (execCommand insertText: one beforeinput and one input
# event, as a paste makes) and a longer deletion a selection deleted.
EDIT_IN_FRAME = """
var i = document.querySelector('input'), lo = arguments[0], hi = arguments[1], text = arguments[2];
var keys = arguments[3];
i.focus();
if (keys) { i.setSelectionRange(hi, hi); return; }
i.setSelectionRange(lo, hi);
if (text) document.execCommand('insertText', false, text);
else if (lo < hi) document.execCommand('delete');
"""


def test_masks(t):
    """Issue 44: a masked field is laid out in its mask as the user types, over the case table the
    Swift clients run (`maskEdits`), and after every edit its state is /validate's for the text shown."""
    table = mask_table()
    name = table["field"]
    t.open_page()
    made = t.js("return [__h.form('mk', 'masked'), __h.field('mk', 'mask', '#mask', {name: arguments[0]})]", name)
    if not all(m.get("ok") for m in made):
        raise AssertionError(f"mounting the masked form failed: {made}")
    t.wait_ready("mk", ["mask"])
    problems = []
    steps = 0
    for case in table["cases"]:
        since = t.count()
        r = t.js("return __h.call('mask', 'clear')")
        if not r.get("ok"):
            raise AssertionError(f"field.clear() threw: {r}")
        t.wait_event("mask", "change", lambda s: isinstance(s, dict) and s.get("isEmpty") is True, since,
                     what="a change event with isEmpty true after field.clear()")
        t.enter("mask")
        try:
            t.d.find_element(By.TAG_NAME, "input").click()
        finally:
            t.d.switch_to.default_content()
        for step, e in enumerate(case["edits"]):
            lo, hi = e["range"]
            text = e["text"]
            typed = len(text) == 1 and lo == hi
            backspace = text == "" and hi - lo == 1
            at = f"{case['what']}, step {step} (replace {lo}..<{hi} with {text!r})"
            since = t.count()
            t.enter("mask")
            try:
                t.js(EDIT_IN_FRAME, lo, hi, text, typed or backspace)
                if typed:
                    ActionChains(t.d).send_keys(text).perform()
                elif backspace:
                    ActionChains(t.d).send_keys(Keys.BACK_SPACE).perform()
                want = [e["shown"], e["caret"], e["caret"]]
                deadline = time.monotonic() + 1.0
                while True:
                    got = t.js("var i = document.querySelector('input');"
                               "return [i.value, i.selectionStart, i.selectionEnd];")
                    if got == want or time.monotonic() > deadline:
                        break
                    time.sleep(0.02)
            finally:
                t.d.switch_to.default_content()
            steps += 1
            if got != want:
                problems.append(f"{at}: shows {got[0]!r} with the selection {got[1]}..{got[2]}, "
                                f"expected {e['shown']!r} with the caret at {e['caret']}")
            server = t.validate("masked", {name: got[0]})["fields"][name]
            ok, state, _ = settle(t, "mask", since, canon(without_focus(server)), 0.6, hard=4.0)
            if not ok:
                problems.append(f"{at}: the state of {got[0]!r}: {state_diff(without_focus(server), state)}")
    print(f"    masks: {steps} edits in {len(table['cases'])} cases")
    if problems:
        raise AssertionError("\n".join(problems))


def test_styling(t):
    c = t.checks()
    t.open_page()
    css = {"base": {"color": "red", "background-image": "url(x)"}, "invalid": {"color": "rgb(1,2,3)"},
           "placeholder": {"color": "blue"}}
    made = t.js("return [__h.form('st', 'checkout'), __h.field('st', 'number', '#number', arguments[0])]",
                {"name": "card_data.card_number", "placeholder": "Card number", "css": css})
    if not (made[0].get("ok") and made[1].get("ok")):
        raise AssertionError(f"mounting a styled field failed: {made}")
    t.wait_ready("st", ["number"])

    def warned():
        lines = t.browser.console_lines() + [x["text"] for x in t.js("return window.__console")]
        return [l for l in lines if "background-image" in l]
    try:
        wait_until(warned, 5, "a console warning naming background-image (dropped from css.base)",
                   lambda: f"BiDi (frame consoles) {'on' if t.browser.bidi else 'OFF: only the page console is heard'}; "
                           f"console lines: {short(t.browser.console_lines()[-10:], 800)}")
    except AssertionError as e:
        c.expect(False, str(e))
    since = t.count()
    t.type_in("number", CARD)
    t.blur("number")  # a number's validity reaches the page once the field is left
    t.wait_event("number", "change", lambda s: isinstance(s, dict) and s.get("isValid") is True, since,
                 what="a valid state of the styled number")
    t.enter("number")
    try:
        style = t.js("var s = getComputedStyle(document.querySelector('input'));"
                     "return {color: s.color, backgroundImage: s.backgroundImage};")
    finally:
        t.d.switch_to.default_content()
    c.equal(style["color"], "rgb(255, 0, 0)", "computed color of the styled input (css.base.color red)")
    c.equal(style["backgroundImage"], "none", "computed background-image of the styled input (must be dropped)")
    c.done()


def test_events(t):
    c = t.checks()
    t.open_page()
    t.checkout("co")
    since = t.count()
    t.enter("number")
    try:
        field = t.d.find_element(By.TAG_NAME, "input")
        field.click()
        field.send_keys(Keys.ENTER)
    finally:
        t.d.switch_to.default_content()
    for event in ["focus", "enter"]:
        try:
            t.wait_event("number", event, since=since, timeout=5,
                         what=f"a {event!r} event of the number after clicking its input and pressing Enter")
        except AssertionError as e:
            c.expect(False, str(e))
    t.d.find_element(By.ID, "outside").click()
    try:
        t.wait_event("number", "blur", since=since, timeout=5, what="a 'blur' event after clicking the page")
    except AssertionError as e:
        c.expect(False, str(e))
    since = t.count()
    r = t.js("return __h.call('exp', 'focus')")
    c.expect(r.get("ok"), f"exp.focus() threw: {r}")

    def focused():
        for e in t.events("exp", None, since):
            if e["event"] == "focus" or (e["event"] == "change" and isinstance(e["data"], dict)
                                         and e["data"].get("isFocused") is True):
                return e
    try:
        wait_until(focused, 5, "a focus event, or a change with isFocused true, of exp after exp.focus()",
                   lambda: t.describe("exp"))
    except AssertionError as e:
        c.expect(False, str(e))
    c.done()


def test_strict_mode(t):
    c = t.checks()
    t.open_page()
    spec = {"name": "card_data.card_number"}
    made = t.js("""return [__h.form('sm', 'checkout'),
                           __h.field('sm', 'n1', '#number', arguments[0]),
                           __h.field('sm', 'n2', '#number', arguments[0]),
                           __h.form('ctl', 'checkout'),
                           __h.field('ctl', 'ctl', '#card', arguments[0])];""", spec)
    if not all(m.get("ok") for m in made):
        raise AssertionError(f"mounting failed: {made}")
    t.wait_event("n2", "ready", what="the 'ready' of the second field() into #number")
    t.wait_event("ctl", "ready", what="the 'ready' of the control field in #card")

    def typed_state_count(src, length, since):
        return len([e for e in t.events(src, "change", since) if isinstance(e["data"], dict)
                    and e["data"].get("inputLength") == length and e["data"].get("isFocused") is True])

    def one_key(src, slot, key, length, control_length, since):
        t.type_in(slot, key)
        t.wait_event(src, "change", lambda s: isinstance(s, dict) and s.get("inputLength") == length, since,
                     what=f"a change of {src} with inputLength {length}")
        t.type_in("card", key)
        t.wait_event("ctl", "change", lambda s: isinstance(s, dict) and s.get("inputLength") == control_length,
                     since, what=f"a change of the control field with inputLength {control_length}")
        stays(lambda: typed_state_count(src, length, since) <= typed_state_count("ctl", control_length, since),
              0.4, f"{src} got more change events for one key than a field mounted once (doubled listeners)",
              lambda: t.describe(src))
        c.equal(typed_state_count(src, length, since), typed_state_count("ctl", control_length, since),
                f"change events for one key: {src} vs a field mounted once")

    c.equal(len([f for f in t.frames() if f["slot"] == "number"]), 1, "iframes in #number after field() twice")
    since = t.count()
    one_key("n2", "number", "4", 1, 1, since)
    c.expect(not t.events("n1", None, since), f"the replaced field still gets events: {short(t.events('n1', None, since))}")

    # a second field() after the first is ready (a remount)
    made = t.js("return __h.field('sm', 'n3', '#number', arguments[0])", spec)
    c.expect(made.get("ok"), f"the third field() into #number failed: {made}")
    t.wait_event("n3", "ready", what="the 'ready' of field() into #number after the first was ready")
    c.equal(len([f for f in t.frames() if f["slot"] == "number"]), 1, "iframes in #number after a remount")
    since = t.count()
    one_key("n3", "number", "5", 1, 2, since)
    for old in ["n1", "n2"]:
        c.expect(not t.events(old, None, since), f"the replaced field {old} still gets events: "
                                                 f"{short(t.events(old, None, since))}")
    c.equal(len(t.frames()), 4, f"iframes in the page (two controllers, #number, #card): {short(t.frames())}")
    c.done()


def error_code(e):
    d = e.get("data")
    return d.get("code") if isinstance(d, dict) else None


def test_bad_input(t):
    c = t.checks()
    t.open_page()
    made = t.js("""
        var out = {};
        out.form = __h.form('bad', 'checkout');
        out.unknown = __h.field('bad', 'u', '#number', {name: 'card_data.nope'});
        out.missing = __h.field('bad', 'm', '#missing', {name: 'card_data.card_number'});
        out.noname = __h.field('bad', 'nn', '#cvc', {});
        out.good = __h.field('bad', 'g', '#exp', {name: 'card_data.exp_date'});
        out.nf = __h.form('nf', 'nope');
        out.nff = __h.field('nf', 'nff', '#card', {name: 'card_data.card_number'});
        return out;""")
    c.expect(made["unknown"].get("ok"), f"field() with an unknown name before the schema should not throw: {made['unknown']}")
    c.expect(not made["missing"].get("ok"), "field('#missing', …) should throw at once")
    c.expect(not made["noname"].get("ok"), "field() without a name should throw at once")
    c.expect(made["good"].get("ok"), f"field('#exp', card_data.exp_date) failed: {made['good']}")
    c.expect(made["nf"].get("ok"), f"Cloak.form('nope') should not throw (the error is an event): {made['nf']}")
    try:
        e = t.wait_event("u", "error", lambda d: isinstance(d, dict) and d.get("code") == "unknown_field",
                         what="error {code: unknown_field} on the field with an unknown name")
        c.expect(isinstance(e["data"].get("message"), str), f"the unknown_field error has no message: {e['data']}")
        t.wait_event("form:bad", "error", lambda d: isinstance(d, dict) and d.get("code") == "unknown_field",
                     what="error {code: unknown_field} on the form")
    except AssertionError as e:
        c.expect(False, str(e))
    t.wait_event("g", "ready", what="the 'ready' of the valid field next to the unknown one")
    slots = [f["slot"] for f in t.frames()]
    c.expect("number" not in slots, "a frame was mounted for a field name the form does not have")
    c.expect("cvc" not in slots, "a frame was mounted for a field without a name")
    late = t.js("return __h.field('bad', 'late', '#holder', {name: 'card_data.nope2'})")
    c.expect(not late.get("ok"), "field() with an unknown name after the schema arrived should throw at once")
    c.expect("holder" not in [f["slot"] for f in t.frames()], "a frame was mounted for an unknown name after the schema")
    try:
        t.wait_event("form:nf", "error", lambda d: isinstance(d, dict) and d.get("code") == "unknown_form",
                     what="error {code: unknown_form} on Cloak.form('nope')")
        t.wait_event("nff", "error", lambda d: isinstance(d, dict) and d.get("code") == "unknown_form",
                     what="error {code: unknown_form} on a field of Cloak.form('nope')")
    except AssertionError as e:
        c.expect(False, str(e))
    c.expect("card" not in [f["slot"] for f in t.frames()], "a field frame was mounted for an unknown form")

    # destroy() removes every frame of the form
    t.open_page()
    t.checkout("co")
    r = t.js("return __h.call('co', 'destroy')")
    c.expect(r.get("ok"), f"form.destroy() threw: {r}")
    try:
        wait_until(lambda: not t.frames(), 3, "no iframe left after form.destroy()", lambda: short(t.frames()))
    except AssertionError as e:
        c.expect(False, str(e))
    c.done()


def test_unlisted_origin(t):
    c = t.checks()
    t.open_page(origin=t.other.origin)
    made = t.js("return __h.checkout(arguments[0])", "co")
    c.expect(all(v.get("ok") for v in made.values()), f"mounting on an unlisted origin threw: {made}")
    start = time.monotonic()
    t.wait_event("form:co", "error", lambda d: isinstance(d, dict) and d.get("code") == "frame_blocked", timeout=20,
                 what=f"error {{code: frame_blocked}} on a page of {t.other.origin}, which is not in allowed_origins")
    print(f"    frame_blocked after {time.monotonic() - start:.1f}s")
    try:
        wait_until(lambda: not t.frames(), 3, "the blocked form's frames to be removed", lambda: short(t.frames()))
    except AssertionError as e:
        c.expect(False, str(e))
    ready = t.events(None, "ready")
    c.expect(not ready, f"a page of an unlisted origin got 'ready' events: {short(ready)}")
    c.done()


def test_postmessage_hostility(t):
    c = t.checks()
    t.open_page()
    t.checkout("co")
    t.fill_checkout()
    since = t.count()
    before = t.js("return window.__messages.length")
    t.js("""
        var f = document.querySelector('#number iframe');
        f.contentWindow.postMessage({cloak: 1, type: 'collect', req: 'x'}, '*');
        document.querySelectorAll('iframe').forEach(function (g) {
          g.contentWindow.postMessage({cloak: 1, type: 'collect', req: 'y'}, '*');
        });""")

    def quiet():
        msgs = t.js("return window.__messages.slice(arguments[0])", before)
        text = canon(msgs) + canon(t.events(None, None, since))
        return CARD not in text and "411111111111" not in text and not any(
            isinstance(m.get("data"), dict) and m["data"].get("type") == "values" for m in msgs)
    try:
        stays(quiet, 0.8, "a forged 'collect' from the page was answered with values",
              lambda: short(t.js("return window.__messages.slice(arguments[0])", before), 1000))
    except AssertionError as e:
        c.expect(False, str(e))
    r = t.submit("co", "tokens")
    c.equal(r.get("status"), 200, "a normal submit still works after forged messages")
    c.done()


def test_headers(t):
    c = t.checks()
    base = f"{t.url}/elements/v1"
    r = t.http.get(f"{base}/cloak.js", timeout=10)
    c.equal(r.status_code, 200, "GET /elements/v1/cloak.js status")
    c.equal(r.headers.get("Access-Control-Allow-Origin"), "*", "cloak.js Access-Control-Allow-Origin")
    etag = r.headers.get("ETag")
    c.expect(etag, "cloak.js has no ETag")
    c.expect(r.headers.get("Cache-Control"), "cloak.js has no Cache-Control")
    c.expect("javascript" in (r.headers.get("Content-Type") or ""),
             f"cloak.js Content-Type: {r.headers.get('Content-Type')!r}")
    script = r.content
    if etag:
        r2 = t.http.get(f"{base}/cloak.js", headers={"If-None-Match": etag}, timeout=10)
        c.equal(r2.status_code, 304, "cloak.js with If-None-Match: its ETag")
    for page in ["field.html", "file.html", "controller.html", "reveal.html"]:
        r = t.http.get(f"{base}/{page}", timeout=10)
        if not c.equal(r.status_code, 200, f"GET /elements/v1/{page} status"):
            continue
        csp = r.headers.get("Content-Security-Policy") or ""
        for part in ["default-src 'none'", "script-src 'self'", f"frame-ancestors {t.pages.origin}"]:
            c.expect(part in csp, f"{page}: Content-Security-Policy lacks {part!r}: {csp!r}")
        c.expect(t.other.origin not in csp, f"{page}: the CSP names an unlisted origin: {csp!r}")
        c.expect("unsafe-inline" not in csp and "unsafe-eval" not in csp, f"{page}: unsafe CSP: {csp!r}")
    for asset in ["rules.js", "field.js", "file.js", "controller.js", "reveal.js", "frame.css"]:
        r = t.http.get(f"{base}/{asset}", timeout=10)
        c.equal(r.status_code, 200, f"GET /elements/v1/{asset} status")
        c.expect(r.headers.get("ETag"), f"{asset} has no ETag")
        c.equal(r.headers.get("Access-Control-Allow-Origin"), "*", f"{asset} Access-Control-Allow-Origin")
    r = t.http.get(f"{base}/forms/checkout", timeout=10)
    c.equal(r.status_code, 200, "GET /elements/v1/forms/checkout status")
    c.expect("no-cache" in (r.headers.get("Cache-Control") or ""),
             f"forms/checkout Cache-Control: {r.headers.get('Cache-Control')!r}")
    c.expect(r.headers.get("ETag"), "forms/checkout has no ETag")
    c.expect(r.status_code != 200 or CARD not in r.text, "the schema carries a card number?")
    c.equal(t.http.get(f"{base}/forms/nope", timeout=10).status_code, 404, "GET /elements/v1/forms/nope")

    # cloak elements integrity: the SRI value of the served cloak.js, and a page that uses it
    want = "sha384-" + base64.b64encode(hashlib.sha384(script).digest()).decode()
    p = subprocess.run([t.binary, "elements", "integrity"], capture_output=True, text=True, timeout=30, cwd=t.tmp,
                       env=hermetic_env())
    c.expect(p.returncode == 0 and want in p.stdout,
             f"`cloak elements integrity` should print {want} (exit {p.returncode}): {short(p.stdout + p.stderr, 400)}")
    with open(os.path.join(t.pagedir, "sri.html"), "w", encoding="utf-8") as f:
        f.write(page_html(t.url, integrity=want))
    try:
        t.open_page(name="sri.html")
    except AssertionError as e:
        c.expect(False, f"cloak.js with integrity= and crossorigin=anonymous did not load: {e}")

    # no allowed origin: every /elements/* path is 404
    directory = os.path.join(t.tmp, "closed")
    os.makedirs(directory)
    port = free_port()
    closed = CloakServer(t.binary, directory, port, server_config(port, directory, t.token, None))
    try:
        closed.wait_healthy()
        for path in ["cloak.js", "field.html", "forms/checkout", "bins/411111"]:
            c.equal(requests.get(f"{closed.url}/elements/v1/{path}", timeout=10).status_code, 404,
                    f"GET /elements/v1/{path} with no elements.allowed_origins")
    finally:
        closed.stop()
    c.done()


def test_reveal(t):
    c = t.checks()
    alias = t.card_alias or t.create_alias(CARD, "FPE_SIX_T_FOUR")
    other = t.create_alias("5555555555554444", "FPE_SIX_T_FOUR")
    session = t.new_session([alias])
    c.expect(isinstance(session.get("session"), str) and session["session"], f"no session in {session}")
    c.expect(isinstance(session.get("expires_at"), str), f"no expires_at in {session}")
    t.open_page()
    r = t.js("return __h.reveal('shown', '#shown', arguments[0])",
             {"alias": alias, "session": session.get("session"), "mask": "•••• •••• •••• ####", "copy": True})
    if not r.get("ok"):
        raise AssertionError(f"Cloak.reveal threw: {r}")
    t.wait_event("shown", "revealed", what="the 'revealed' event of Cloak.reveal")
    t.enter("shown")
    try:
        def shown_text():
            return t.js("var s = document.body ? document.body.innerText : '';"
                        "document.querySelectorAll('input, textarea').forEach(function (i) { s += ' ' + i.value; });"
                        "return s;")
        text = wait_until(lambda: (lambda s: s if "1111" in s else None)(shown_text()), 5,
                          "the masked value in the reveal frame", lambda: repr(shown_text()))
        norm = text.replace("\u00a0", " ")
        c.expect("•••• •••• •••• 1111" in norm, f"the reveal frame shows {text!r}, expected '•••• •••• •••• 1111'")
        c.expect("4111" not in norm, f"the mask shows more than the last four: {text!r}")
        c.expect(t.d.find_elements(By.TAG_NAME, "button"), "copy: true should add a button to the reveal frame")
    finally:
        t.d.switch_to.default_content()
    events, messages = t.seen_text()
    for secret in [CARD, "4111 1111 1111 1111"]:
        c.expect(secret not in events and secret not in messages, f"an event or message carries {secret!r}")

    # a session for another alias reveals nothing
    wrong = t.new_session([other])
    t.js("return __h.reveal('shown2', '#shown2', arguments[0])",
         {"alias": alias, "session": wrong.get("session")})
    try:
        t.wait_event("shown2", "error", what="an 'error' event for a session that does not name the alias")
    except AssertionError as e:
        c.expect(False, str(e))
    c.expect(not t.events("shown2", "revealed"), "a session for another alias revealed the value")
    if t.d.find_elements(By.CSS_SELECTOR, "#shown2 iframe"):
        t.enter("shown2")
        try:
            text = t.js("return document.body ? document.body.innerText : ''")
            c.expect("1111" not in text and "4111" not in text, f"the refused reveal frame shows {text!r}")
        finally:
            t.d.switch_to.default_content()

    # an expired session: the frame says "expired" (polled on the server until it is, no sleep)
    brief = t.new_session([alias], ttl=1)
    wait_until(lambda: "expired" in t.http.get(
        f"{t.url}/elements/v1/reveal", timeout=10,
        headers={"Cloak-Session": brief.get("session", ""), "Cloak-Alias": alias, "Sec-Fetch-Site": "same-origin"}).text,
        5, "the one-second session to expire")
    t.js("return __h.reveal('shown3', '#shown3', arguments[0])", {"alias": alias, "session": brief.get("session")})
    err = t.wait_event("shown3", "error", what="an 'error' event for an expired session")
    c.equal((err.get("data") or {}).get("code"), "expired", "the error code of an expired session")
    c.expect(not t.events("shown3", "revealed"), "an expired session revealed the value")

    # a session bound to the browser's address reveals; bound to another address it does not
    for client, reveals in [("127.0.0.1", True), ("203.0.113.7", False)]:
        bound = t.http.post(f"{t.url}/elements/sessions", headers=t.auth(), timeout=10,
                            json={"aliases": [alias], "ttl_s": 60, "client": client}).json()
        slot = "bound_ok" if reveals else "bound_other"
        t.js("return __h.reveal(arguments[1], '#' + arguments[1], arguments[0])",
             {"alias": alias, "session": bound.get("session")}, slot)
        t.wait_event(slot, "revealed" if reveals else "error", what=f"the reveal of a session bound to {client}")

    # the endpoint itself: only frames (Sec-Fetch-Site: same-origin) get a value
    fresh = t.new_session([alias])
    r = t.http.get(f"{t.url}/elements/v1/reveal", timeout=10,
                   headers={"Cloak-Session": fresh.get("session", ""), "Cloak-Alias": alias})
    c.equal(r.status_code, 403, "GET /elements/v1/reveal without Sec-Fetch-Site")
    c.expect(CARD not in r.text, "the refused reveal answer carries the number")
    sessions = f"{t.url}/elements/sessions"
    c.equal(t.http.post(sessions, json={"aliases": [alias], "ttl_s": 60}, timeout=10).status_code, 401,
            "POST /elements/sessions without a token")
    c.equal(t.http.post(sessions, headers=t.auth(), json={"aliases": [alias], "ttl_s": 601}, timeout=10).status_code,
            400, "POST /elements/sessions with ttl_s 601")
    c.equal(t.http.post(sessions, headers=t.auth(), json={"aliases": [alias], "ttl_s": 600}, timeout=10).status_code,
            201, "POST /elements/sessions with ttl_s 600")
    r = t.http.post(f"{t.url}/aliases", headers=t.auth(), timeout=10,
                    json={"data": [{"value": f"browser-reveal-{i}", "format": "UUID"} for i in range(21)]})
    if r.status_code != 201:
        raise AssertionError(f"POST /aliases (21 values) answered {r.status_code}: {short(r.text)}")
    many = [d["aliases"][0]["alias"] for d in r.json()["data"]]
    c.equal(t.http.post(sessions, headers=t.auth(), json={"aliases": many, "ttl_s": 60}, timeout=10).status_code,
            400, "POST /elements/sessions with 21 aliases")
    c.equal(t.http.post(sessions, headers=t.auth(), json={"aliases": many[:20], "ttl_s": 60}, timeout=10).status_code,
            201, "POST /elements/sessions with 20 aliases")
    c.done()


def test_timing(t):
    c = t.checks()
    t.open_page()
    t.checkout("co")
    times = t.js("return window.__times.co")
    warm = times["ready"] - times["start"] if times.get("ready") is not None else None
    cold = t.timing.get("cold")
    print("    Cloak.form() to four fields ready: "
          + (f"{cold:.0f} ms on the first load" if cold is not None else "first load not measured")
          + (f", {warm:.0f} ms on a later load (HTTP cache warm)" if warm is not None else ""))
    base = f"{t.url}/elements/v1"
    names = ["cloak.js", "field.html", "file.html", "controller.html", "reveal.html"]
    for page in ["field.html", "file.html", "controller.html", "reveal.html"]:
        r = t.http.get(f"{base}/{page}", timeout=10)
        for ref in re.findall(r'(?:src|href)="([^"#?]+)', r.text if r.status_code == 200 else ""):
            ref = ref.rsplit("/", 1)[-1]
            if ref and ref not in names:
                names.append(ref)
    for extra in ["rules.js", "field.js", "file.js", "controller.js", "reveal.js", "frame.css"]:
        if extra not in names:
            names.append(extra)
    print("    bytes served (raw / gzip -9):")
    total_raw = total_gz = 0
    for name in names:
        r = t.http.get(f"{base}/{name}", timeout=10)
        if not c.equal(r.status_code, 200, f"GET /elements/v1/{name}"):
            continue
        raw, gz = len(r.content), len(gzip.compress(r.content, compresslevel=9))
        total_raw += raw
        total_gz += gz
        print(f"      {name:<16} {raw:>7,} / {gz:>6,}")
    print(f"      {'total':<16} {total_raw:>7,} / {total_gz:>6,}")
    c.done()

# ---- file fields (issue 47)


def file_state(t, src, since, pred, what):
    return t.wait_event(src, "change", lambda s: isinstance(s, dict) and pred(s), since, timeout=10, what=what)["data"]


def find_key(node, key):
    """The first value of `key` anywhere in a JSON answer (the 1001 body nests it in error.extraInfo)."""
    if isinstance(node, dict):
        if key in node:
            return node[key]
        node = list(node.values())
    if isinstance(node, list):
        for v in node:
            got = find_key(v, key)
            if got is not None:
                return got
    return None


def test_file_state(t):
    """form.file(): one <input type=file> in a frame of Cloak's origin, whose `change` state is the server's
    FileFieldState of the chosen files (FileSniffer's magic bytes, sizes, polyglots, counts)."""
    c = t.checks()
    t.open_page()
    t.mount_kyc("kf", slots=("doc", "pages"))
    ready = t.events("doc", "ready")[0]["data"]
    c.equal(ready, {"states": {"kyc.document": {
        "isValid": False, "isEmpty": True, "validationErrors": ["FILE_REQUIRED_VALIDATION_ERROR"], "fileCount": 0,
        "bytes": 0, "mediaType": None}}}, "the ready event of the empty, required kyc.document")
    frame = [f for f in t.frames() if f["slot"] == "doc"]
    c.expect(frame and "/elements/v1/file.html#" in frame[0]["src"] and frame[0]["title"] == "Document",
             f"the file field's frame: {short(frame)}")
    t.enter("doc")
    try:
        inputs = t.d.find_elements(By.TAG_NAME, "input")
        c.equal([(i.get_attribute("type"), i.get_attribute("accept"), i.get_property("multiple")) for i in inputs],
                [("file", ",".join(FILE_TYPES), False)], "kyc.document's inputs (type, accept, multiple)")
    finally:
        t.d.switch_to.default_content()
    t.enter("pages")
    try:
        c.equal(t.d.find_element(By.TAG_NAME, "input").get_property("multiple"), True,
                "kyc.pages (max_files 2) takes several files")
    finally:
        t.d.switch_to.default_content()

    # field() on a file field, file() on a text field: refused once the schema is known
    wrong = t.js("return [__h.field('kf', 'w1', '#kholder', {name: 'kyc.document'}),"
                 "        __h.field('kf', 'w2', '#kholder', {name: 'kyc.holder'}, 'file')]")
    c.expect(not wrong[0].get("ok") and not wrong[1].get("ok"),
             f"field() of a file field and file() of a text field should throw: {wrong}")

    order = ["id.png", "archive.zip", "scan.pdf", "program.elf", "note.txt", "anim.gif", "empty.png", "large.png",
             "polyglot.png", "elf-inside.png", "magic-only.png"]
    for name in order:
        content, errors, media = FILE_CASES[name]
        since = t.count()
        t.choose_files("doc", [name])
        try:
            got = file_state(t, "doc", since, lambda s: s.get("fileCount") == 1 and s.get("bytes") == len(content),
                             f"kyc.document's change state after choosing {name} ({len(content)} bytes)")
        except AssertionError as e:
            c.expect(False, str(e))
            continue
        t.file_states[name] = got
        want = {"isValid": not errors, "isEmpty": False, "validationErrors": errors, "fileCount": 1,
                "bytes": len(content), "mediaType": media}
        c.equal(got, want, f"kyc.document's state holding {name}")
        c.equal(sorted(got), sorted(FILE_STATE_KEYS), f"the keys of kyc.document's state ({name})")
        form = t.events("form:kf", "change", since)
        if errors and form:  # (kyc.holder is not mounted here: the form is never valid)
            c.equal(form[-1]["data"].get("isValid"), False, f"the form's isValid with {name} in kyc.document")

    # several files: kyc.pages takes two, not three (the count), each judged
    since = t.count()
    t.choose_files("pages", ["id.png", "scan.pdf"])
    two = FILE_CASES["id.png"][0], FILE_CASES["scan.pdf"][0]
    got = file_state(t, "pages", since, lambda s: s.get("fileCount") == 2, "kyc.pages's state with two files")
    c.equal(got, {"isValid": True, "isEmpty": False, "validationErrors": [], "fileCount": 2,
                  "bytes": sum(len(x) for x in two), "mediaType": "image/png"}, "kyc.pages holding id.png and scan.pdf")
    since = t.count()
    t.js("return __h.call('pages', 'clear')")  # ChromeDriver adds files to a `multiple` input's
    file_state(t, "pages", since, lambda s: s.get("isEmpty") is True, "kyc.pages's state after clear()")
    since = t.count()
    t.choose_files("pages", ["note.txt", "id.png", "archive.zip"])
    got = file_state(t, "pages", since, lambda s: s.get("fileCount") == 3, "kyc.pages's state with three files")
    c.equal(got.get("validationErrors"), ["FILE_TYPE_VALIDATION_ERROR", "FILE_EXECUTABLE_VALIDATION_ERROR",
                                          "FILE_COUNT_VALIDATION_ERROR"],
            "kyc.pages's errors holding note.txt, id.png, archive.zip (per file in order, then the count)")

    # clear(): no file again
    since = t.count()
    r = t.js("return __h.call('doc', 'clear')")
    c.expect(r.get("ok"), f"doc.clear() threw: {r}")
    got = file_state(t, "doc", since, lambda s: s.get("isEmpty") is True, "kyc.document's state after clear()")
    c.equal(got.get("validationErrors"), ["FILE_REQUIRED_VALIDATION_ERROR"], "kyc.document's errors after clear()")
    c.done()


def check_file_secrets(t, c, when):
    events, messages = t.seen_text()
    for secret, what in [(FILE_MARKER, "the PNG's content"), ("id.png", "the file's name"),
                         (base64.b64encode(FILE_CASES["id.png"][0][:48]).decode()[:40], "the PNG as base64")]:
        c.expect(secret not in events, f"{when}: an event carries {what} ({secret!r})")
        c.expect(secret not in messages, f"{when}: a postMessage to the page carries {what} ({secret!r})")
    lines = t.browser.console_lines() + [x["text"] for x in t.js("return window.__console")]
    c.expect(not [l for l in lines if FILE_MARKER in l], f"{when}: a console line carries the PNG's content")


def test_file_submit(t):
    """form.submit() of a form with file fields: multipart/form-data from the controller frame, with upload
    progress; the answer holds the file fields' aliases; the page never holds a file or its bytes."""
    c = t.checks()
    t.open_page()
    t.mount_kyc("kf")
    since = t.count()
    t.type_in("kholder", HOLDER)
    t.choose_files("doc", ["id.png"])
    t.choose_files("pages", ["scan.pdf", "id.png"])
    t.wait_event("form:kf", "change", lambda s: isinstance(s, dict) and s.get("isValid") is True
                 and (s.get("fields") or {}).get("kyc.pages", {}).get("fileCount") == 2, since, timeout=10,
                 what="a form change with isValid true once kyc.holder, kyc.document and kyc.pages are filled")

    # The page cannot read the frame, nor make Cloak's frames hand it (or take from it) a file.
    got = t.js("""
        var out = [];
        ['doc', 'pages'].forEach(function (slot) {
          var f = document.querySelector('#' + slot + ' iframe'), o = {slot: slot};
          try { o.doc = f.contentDocument === null ? 'null' : 'readable'; } catch (e) { o.doc = 'threw ' + e.name; }
          try { o.files = String(f.contentWindow.document.querySelector('input').files.length); }
          catch (e) { o.files = 'threw ' + e.name; }
          out.push(o);
        });
        var forged = new File(['forged by the page'], 'forged.png', {type: 'image/png'});
        document.querySelectorAll('iframe').forEach(function (g) {
          g.contentWindow.postMessage({cloak: 1, type: 'collect', req: 1}, '*');
          g.contentWindow.postMessage({cloak: 1, type: 'values', req: 1, values: {},
                                       files: {'kyc.document': [forged]}, states: {}}, '*');
          g.contentWindow.postMessage({cloak: 1, type: 'state', name: 'kyc.document',
                                       state: {isValid: false, isEmpty: true}}, '*');
        });
        return out;""")
    for f in got:
        c.equal(f["doc"], "null", f"#{f['slot']} iframe.contentDocument from the page")
        c.expect(f["files"].startswith("threw"), f"#{f['slot']}: the page read the file input: {f['files']!r}")
    before = t.js("return window.__messages.length")
    try:
        stays(lambda: not any(isinstance(m.get("data"), dict) and m["data"].get("type") == "values"
                              for m in t.js("return window.__messages.slice(arguments[0])", before)),
              0.8, "a forged 'collect' from the page was answered with values")
    except AssertionError as e:
        c.expect(False, str(e))

    since = t.count()
    r = t.submit("kf", "tokens")
    if not r.get("resolved"):
        raise AssertionError(f'form.submit("tokens") of the kyc form did not resolve: {r}\n{t.describe()}')
    body = r.get("body") or {}
    if r.get("status") != 200:
        raise AssertionError(f'submit("tokens") of the kyc form: expected 200, got {r.get("status")}: {short(body)}')
    doc = body.get("kyc.document")
    c.expect(isinstance(doc, str) and doc.startswith("tok_"), f"kyc.document should be a UUID alias (tok_…): {short(body)}")
    pages = [body.get("kyc.pages[0]"), body.get("kyc.pages[1]")]
    c.expect(all(isinstance(a, str) and a.startswith("tok_") for a in pages),
             f"kyc.pages[0] and kyc.pages[1] should be UUID aliases: {short(body)}")
    c.expect(pages[1] != doc, f"id.png twice: an anonymous caller's aliases are random, never one per content "
                              f"(that would confirm a guessed document): {short(body)}")
    c.equal(body.get("kyc.holder"), HOLDER, "the text field kyc.holder, sent as a multipart part")
    c.equal(sorted(body), sorted(["kyc.holder", "kyc.document", "kyc.pages[0]", "kyc.pages[1]"]), "the answer's keys")
    c.expect(FILE_MARKER not in canon(body), "the answer carries the file's content")

    progress = [e["data"] for e in t.events("form:kf", "progress", since)]
    sizes = sum(len(FILE_CASES[n][0]) for n in ["id.png", "scan.pdf", "id.png"])
    if c.expect(progress, "no 'progress' event during the upload"):
        c.expect(all(set(p) == {"loaded", "total"} for p in progress), f"progress events' keys: {short(progress)}")
        last = progress[-1]
        c.expect(last.get("loaded") == last.get("total") and last.get("total", 0) > sizes,
                 f"the last progress event should be the whole body (more than the files' {sizes} bytes): {last}")
        loaded = [p.get("loaded") for p in progress]
        c.equal(loaded, sorted(loaded), "progress.loaded never goes back")
    check_file_secrets(t, c, "after the upload")

    # a refused file is never sent: submit rejects, as for a card number that changed after its release
    since = t.count()
    t.choose_files("doc", ["program.elf"])
    file_state(t, "doc", since, lambda s: s.get("validationErrors") == ["FILE_EXECUTABLE_VALIDATION_ERROR"],
               "kyc.document refusing program.elf")
    form = t.events("form:kf", "change", since)
    c.expect(form and form[-1]["data"].get("isValid") is False, "the form's isValid with an ELF in kyc.document")
    since = t.count()
    r = t.submit("kf", "tokens")
    c.expect(r.get("rejected") and "FILE_EXECUTABLE_VALIDATION_ERROR" in (r.get("error") or ""),
             f'submit("tokens") with a refused file should reject naming its error, got {short(r)}')
    c.expect(not t.events("form:kf", "progress", since), "a refused file was uploaded (progress events)")
    # an empty required file field is the server's answer, as for text fields: 422, 1001
    t.js("return __h.call('doc', 'clear')")
    t.wait_event("doc", "change", lambda s: isinstance(s, dict) and s.get("isEmpty") is True, since,
                 what="kyc.document empty after clear()")
    r = t.submit("kf", "tokens")
    c.equal((r.get("status"), ((r.get("body") or {}).get("error") or {}).get("code")), (422, 1001),
            'submit("tokens") without the required kyc.document: (status, error.code)')
    c.expect("kyc.document" in canon(r.get("body")), f"the 1001 answer should name kyc.document: {short(r.get('body'))}")
    # options cannot travel in multipart
    r = t.submit("kf", "tokens", {"options": {"fieldNameMappingPolicy": "flatJSON"}})
    c.expect(r.get("rejected"), f"submit with options on a form with file fields should reject, got {short(r)}")
    check_file_secrets(t, c, "at the end")
    c.done()


def test_file_server(t):
    """The server judges what the frame judges (the same FileFieldState), on the contract's multipart upload
    (Cloak-Upload: 1) and base64 JSON."""
    c = t.checks()
    url = f"{t.url}/forms/kyc/tokens"
    upload = {"Cloak-Upload": "1"}
    for name, (content, errors, _) in FILE_CASES.items():
        declared = "image/png" if name.endswith(".png") else "application/octet-stream"
        try:
            r = t.http.post(url, headers=upload, data={"kyc.holder": HOLDER},
                            files={"kyc.document": (name, content, declared)}, timeout=20)
        except requests.RequestException as e:
            c.expect(False, f"multipart POST /forms/kyc/tokens with {name}: {e}")
            continue
        frame = t.file_states.get(name)
        if frame is not None:
            c.equal(frame.get("validationErrors"), errors, f"the frame's errors for {name} (test_file_state)")
        if not errors:
            c.expect(r.status_code == 200 and str(r.json().get("kyc.document", "")).startswith("tok_"),
                     f"multipart POST with {name}: expected 200 with a kyc.document alias, got {r.status_code}: "
                     f"{short(r.text, 300)}")
            continue
        body = r.json() if r.headers.get("Content-Type", "").startswith("application/json") else r.text
        if name == "large.png" and r.status_code == 413:  # over the body's limit: refused before any part is read
            print(f"    {name} ({len(content)} bytes): 413 {short(body, 200)}")
            continue
        server = find_key(body, "validationErrors")
        server = server.get("kyc.document") if isinstance(server, dict) else server
        c.expect(r.status_code == 422 and server == errors,
                 f"multipart POST with {name}: expected 422 with validationErrors {{kyc.document: {errors}}}, "
                 f"got {r.status_code}: {short(body, 400)}")
    r = t.http.post(url, data={"kyc.holder": HOLDER}, files={"kyc.document": ("id.png", FILE_CASES["id.png"][0])},
                    timeout=20)
    c.expect(r.status_code == 400 and find_key(r.json(), "code") == 1002,
             f"multipart without Cloak-Upload from a caller without a token: expected 400 (1002), got "
             f"{r.status_code}: {short(r.text, 300)}")
    r = t.http.post(url, json={"fields": {"kyc.holder": HOLDER, "kyc.document": {
        "data": base64.b64encode(FILE_CASES["id.png"][0]).decode(), "fileName": "id.png", "mediaType": "image/png"}}},
        timeout=20)
    c.expect(r.status_code == 200 and str(r.json().get("kyc.document", "")).startswith("tok_"),
             f"JSON with base64 kyc.document: expected 200 with an alias, got {r.status_code}: {short(r.text, 300)}")
    c.done()


# --- card attributes (issue 48) ----------------------------------------------------------------

# In a field frame: the lookups it made, from its own resource timing (what it fetched, by URL).
FRAME_BIN_REQUESTS = """
var path = arguments[0];
return performance.getEntriesByType('resource').map(function (e) { return e.name; })
  .filter(function (n) { return n.indexOf(path) >= 0; })
  .map(function (n) { return n.slice(n.indexOf(path) + path.length); });
"""

# In a field frame: its lookups go through a wrapper that records the bin asked, then answers
# `delay` ms late, or fails (`fail`), as a slow or broken network would. Called again, it changes the mode.
SLOW_BINS = """
var path = arguments[0];
window.__binsMode = {delay: arguments[1], fail: arguments[2]};
window.__binsAsked = window.__binsAsked || [];
if (!window.__binsWrapped) {
  window.__binsWrapped = true;
  var original = window.fetch;
  window.fetch = function (url) {
    var text = String(url), at = text.indexOf(path);
    if (at < 0) return original.apply(this, arguments);
    window.__binsAsked.push(text.slice(at + path.length));
    var mode = window.__binsMode;
    if (mode.fail) return Promise.reject(new TypeError('Failed to fetch'));
    return original.apply(this, arguments).then(function (r) {
      return new Promise(function (resolve) { setTimeout(function () { resolve(r); }, mode.delay); });
    });
  };
}
return window.__binsAsked.slice();
"""


def mount_attributes(t, key, slots=("a_card", "a_picky")):
    """The attributes form: #a_card holds its field `card`, #a_picky its field `picky`."""
    made = t.js("""
        var key = arguments[0], out = [__h.form(key, 'attributes')];
        arguments[1].forEach(function (s) { out.push(__h.field(key, s, '#' + s, {name: s.slice(2)})); });
        return out;""", key, list(slots))
    bad = [m for m in made if not m.get("ok")]
    if bad:
        raise AssertionError(f"mounting the attributes form failed: {bad}")
    t.wait_ready(key, list(slots))


def in_frame(t, slot, script, *args):
    t.enter(slot)
    try:
        return t.js(script, *args)
    finally:
        t.d.switch_to.default_content()


def frame_bins(t, slot):
    return in_frame(t, slot, FRAME_BIN_REQUESTS, BINS_PATH)


def expect_state(t, c, src, since, want, what):
    """The frame's last change state (minus isFocused) settles on `want` (the server's state), whole."""
    ok, got, _ = settle(t, src, since, canon(without_focus(want)), 1.0, hard=8.0)
    c.expect(ok, f"{what}: the frame's state is not /validate's: {state_diff(without_focus(want), got)}")
    return got


def without_attributes(t, src):
    s = t.js("return __h.lastChange(arguments[0])", src)["data"]
    return isinstance(s, dict) and "cardAttributes" not in s


def test_card_attributes(t):
    """Issue 48: with a BIN table imported, a card number's state carries `cardAttributes` for the `bin` it
    shows, exactly as POST /forms/{form}/validate gives it (whole states compared); a field's `accept`
    rule refuses by them and its state still shows bin, last4 and the attributes; a number no range holds
    has no `cardAttributes`. The frame asks GET /elements/v1/bins/<bin> for the bin its state shows (6 or 8
    digits), once per bin, and nothing while the state shows none."""
    if t.bins_error:
        raise AssertionError(f"the BIN table could not be imported: {t.bins_error}")
    c = t.checks()
    want = {
        "card": t.validate("attributes", {"card": CARD})["fields"]["card"],
        "picky": t.validate("attributes", {"picky": CARD})["fields"]["picky"],
        "debit": t.validate("attributes", {"picky": DEBIT_CARD})["fields"]["picky"],
        "none": t.validate("attributes", {"card": NO_RANGE_CARD})["fields"]["card"],
    }
    c.equal(want["card"].get("cardAttributes"), CARD_ATTRIBUTES, f"/validate {CARD}: cardAttributes")
    p = want["picky"]
    c.equal((p.get("isValid"), p.get("validationErrors"), p.get("bin"), p.get("last4"), p.get("cardAttributes")),
            (False, ["CARD_NOT_ACCEPTED"], "41111111", "1111", CARD_ATTRIBUTES),
            f"/validate {CARD} where only debit cards are accepted: (isValid, validationErrors, bin, last4, "
            "cardAttributes)")
    c.equal((want["debit"].get("isValid"), (want["debit"].get("cardAttributes") or {}).get("funding")),
            (True, "debit"), f"/validate {DEBIT_CARD} (debit) where only debit cards are accepted: (isValid, funding)")
    c.expect("cardAttributes" not in want["none"], f"/validate {NO_RANGE_CARD} (no range): has cardAttributes "
                                                    f"{want['none'].get('cardAttributes')!r}")
    # The frames' endpoint: the bin a state shows (6 or 8 digits), and nothing else.
    for bin_, status, body in [("41111111", 200, {"cardAttributes": CARD_ATTRIBUTES}),
                               ("555555", 200, {"cardAttributes": None}),
                               ("4111111", 400, None), ("411111111", 400, None), (CARD, 400, None)]:
        r = t.http.get(f"{t.url}{BINS_PATH}{bin_}", timeout=10)
        c.equal(r.status_code, status, f"GET {BINS_PATH}{bin_} status")
        if status == 200:
            c.equal(r.json(), body, f"GET {BINS_PATH}{bin_} body")
            c.expect("max-age=300" in (r.headers.get("Cache-Control") or ""),
                     f"GET {BINS_PATH}{bin_} Cache-Control: {r.headers.get('Cache-Control')!r}")

    t.open_page()
    mount_attributes(t, "at")
    # Typed with focus, a Visa of 16 digits shows no bin yet (it can grow to 19): nothing is asked.
    since = t.count()
    t.type_in("a_card", CARD)
    t.wait_event("a_card", "change", lambda s: isinstance(s, dict) and s.get("inputLength") == 16, since,
                 what=f"the change event of the 16th digit of {CARD}")
    time.sleep(0.5)
    c.equal(frame_bins(t, "a_card"), [], "bins the frame asked about while the state showed none")
    early = [e["data"] for e in t.events("a_card", "change", since) if "cardAttributes" in (e["data"] or {})]
    c.equal(early, [], "change states with cardAttributes while typing (no bin shown)")

    # Left, it shows its bin: the state, then the state with the attributes (whole: /validate's).
    since = t.count()
    t.blur("a_card")
    expect_state(t, c, "a_card", since, want["card"], f"{CARD}, left")
    told = [e["data"].get("cardAttributes") for e in t.events("a_card", "change", since)
            if isinstance(e["data"], dict) and "cardAttributes" in e["data"]]
    c.expect(told and told[-1] == CARD_ATTRIBUTES, f"a change event with cardAttributes {CARD_ATTRIBUTES}, got {told}")
    c.equal(frame_bins(t, "a_card"), ["41111111"], "bins the frame asked about after the blur")
    # Focused and left again: the frame knows the bin's attributes, the state comes with them, unasked.
    since = t.count()
    in_frame(t, "a_card", "document.querySelector('input').focus();")
    t.blur("a_card")
    again = t.wait_event("a_card", "change", lambda s: isinstance(s, dict) and s.get("isFocused") is False, since,
                         what="the state after focusing and leaving the field again")["data"]
    c.equal(canon(without_focus(again)), canon(without_focus(want["card"])),
            "the first state after leaving the field again (its bin's attributes are known in the frame)")
    c.equal(frame_bins(t, "a_card"), ["41111111"], "bins asked after leaving the same number twice (once per bin)")

    # A number no range holds: no cardAttributes member, then or later.
    since = t.count()
    t.type_in("a_card", NO_RANGE_CARD, clear=True)
    t.blur("a_card")
    expect_state(t, c, "a_card", since, want["none"], f"{NO_RANGE_CARD} (no range), left")
    try:
        stays(lambda: without_attributes(t, "a_card"), 0.8, f"{NO_RANGE_CARD}: a later state has cardAttributes",
              lambda: short(t.js("return __h.lastChange('a_card')")["data"]))
    except AssertionError as e:
        c.expect(False, str(e))

    # accept: {funding: [debit]}: a credit card is refused (bin, last4 and attributes still shown).
    since = t.count()
    t.type_in("a_picky", CARD)
    t.blur("a_picky")
    got = expect_state(t, c, "a_picky", since, want["picky"], f"{CARD} in the debit-only field, left")
    c.equal((got or {}).get("validationErrors"), ["CARD_NOT_ACCEPTED"], "validationErrors of the refused card")
    t.wait_event("form:at", "change", lambda s: isinstance(s, dict) and isinstance(s.get("fields"), dict)
                 and (s["fields"].get("picky") or {}).get("validationErrors") == ["CARD_NOT_ACCEPTED"], since,
                 what="a form change event whose picky state is refused (the controller has the verdict)")
    since = t.count()
    t.type_in("a_picky", DEBIT_CARD, clear=True)
    t.blur("a_picky")
    expect_state(t, c, "a_picky", since, want["debit"], f"{DEBIT_CARD} (debit) in the debit-only field, left")
    c.equal(frame_bins(t, "a_picky"), ["41111111", "51051051"], "bins the debit-only field's frame asked about")

    asked = frame_bins(t, "a_card") + frame_bins(t, "a_picky")
    c.expect(all(re.fullmatch(r"[0-9]{6}([0-9]{2})?", b) for b in asked),
             f"every lookup names 6 or 8 digits, never more: {asked}")
    check_no_leak(t, c, "after the lookups")
    events, messages = t.seen_text()
    for number in [NO_RANGE_CARD, DEBIT_CARD]:
        c.expect(number[:9] not in events and number[:9] not in messages,
                 f"an event or message carries more of {number} than its bin")
    c.done()


def test_card_attributes_late(t):
    """Issue 48: the attributes come after the state, in a second change; an answer for a number the user
    has since replaced is never applied (but kept: the bin asked again is answered at once), and a lookup
    that fails leaves the state without attributes, with no error."""
    if t.bins_error:
        raise AssertionError(f"the BIN table could not be imported: {t.bins_error}")
    c = t.checks()
    t.open_page()
    mount_attributes(t, "late", ("a_card",))
    in_frame(t, "a_card", SLOW_BINS, BINS_PATH, 3000, False)
    since = t.count()
    t.type_in("a_card", CARD)
    t.blur("a_card")
    first = t.wait_event("a_card", "change", lambda s: isinstance(s, dict) and s.get("isFocused") is False
                         and s.get("isValid") is True, since, what=f"the valid state of {CARD} after the blur")["data"]
    c.expect("cardAttributes" not in first, f"the state computed at the blur has cardAttributes before the answer: "
                                            f"{short(first)}")
    c.equal((first.get("bin"), first.get("last4")), ("41111111", "1111"), "(bin, last4) before the answer")
    # Replaced before the answer (3 s late) arrives.
    replaced = t.count()
    t.type_in("a_card", NO_RANGE_CARD, clear=True)
    t.blur("a_card")
    t.wait_event("a_card", "change", lambda s: isinstance(s, dict) and s.get("isFocused") is False
                 and s.get("bin") == "55555555", replaced, what=f"the valid state of {NO_RANGE_CARD}")
    time.sleep(4.0)  # both answers came
    stale = [e["data"] for e in t.events("a_card", "change", replaced)
             if isinstance(e["data"], dict) and "cardAttributes" in e["data"]]
    c.equal(stale, [], f"states with cardAttributes after {CARD} was replaced (a stale answer applied)")
    c.equal(in_frame(t, "a_card", SLOW_BINS, BINS_PATH, 0, False), ["41111111", "55555555"], "bins asked")
    # The stale answer was kept: the same bin again has its attributes in the first state, unasked.
    since = t.count()
    t.type_in("a_card", CARD, clear=True)
    t.blur("a_card")
    back = t.wait_event("a_card", "change", lambda s: isinstance(s, dict) and s.get("isFocused") is False
                        and s.get("isValid") is True, since, what=f"the valid state of {CARD} typed again")["data"]
    c.equal(back.get("cardAttributes"), CARD_ATTRIBUTES, f"cardAttributes of the first state of {CARD} typed again")
    # A lookup that fails: the state stays without attributes, and the page hears no error.
    in_frame(t, "a_card", SLOW_BINS, BINS_PATH, 0, True)
    since = t.count()
    t.type_in("a_card", DEBIT_CARD, clear=True)
    t.blur("a_card")
    t.wait_event("a_card", "change", lambda s: isinstance(s, dict) and s.get("isFocused") is False
                 and s.get("bin") == "51051051", since, what=f"the valid state of {DEBIT_CARD}")
    try:
        stays(lambda: without_attributes(t, "a_card"), 1.5, "a state has cardAttributes after a failed lookup",
              lambda: short(t.js("return __h.lastChange('a_card')")["data"]))
    except AssertionError as e:
        c.expect(False, str(e))
    c.equal(t.events("a_card", "error", since), [], "error events after a failed lookup")
    c.equal(in_frame(t, "a_card", SLOW_BINS, BINS_PATH, 0, True), ["41111111", "55555555", "51051051"],
            "bins asked, the failed one included")
    c.done()


def doc_snippets(languages):
    """Every fenced block of README.md and docs/*.md in one of `languages`: (file:line, text)."""
    out = []
    paths = [os.path.join(REPO, "README.md")] + sorted(
        os.path.join(REPO, "docs", n) for n in os.listdir(os.path.join(REPO, "docs")) if n.endswith(".md"))
    for path in paths:
        lines = open(path, encoding="utf-8").read().split("\n")
        i = 0
        while i < len(lines):
            m = re.match(r"^(\s*)```(\w+)\s*$", lines[i])
            if m and m.group(2) in languages:
                indent, start, body = len(m.group(1)), i + 1, []
                i += 1
                while i < len(lines) and lines[i].strip() != "```":
                    body.append(lines[i][indent:])
                    i += 1
                out.append((f"{os.path.relpath(path, REPO)}:{start}", m.group(2), "\n".join(body)))
            i += 1
    return out


def test_doc_snippets(t):
    """Issue 57: every HTML snippet of the docs runs in Chromium as written (its Cloak origin and the
    integrity placeholder made this server's; a fragment gets the cloak.js tag its page has), mounts
    its frames and throws nothing; every JS snippet at least parses."""
    c = t.checks()
    script = t.http.get(f"{t.url}/elements/v1/cloak.js", timeout=10).content
    integrity = "sha384-" + base64.b64encode(hashlib.sha384(script).digest()).decode()
    snippets = doc_snippets({"html", "js"})
    c.expect(len([s for s in snippets if s[1] == "html"]) >= 3, f"expected the docs' HTML snippets, found {snippets}")
    for n, (where, language, text) in enumerate(snippets):
        if language == "js":
            t.d.switch_to.default_content()
            t.d.get(f"{t.pages.origin}/index.html")
            problem = t.js("""try { new (Object.getPrototypeOf(async function () {}).constructor)(arguments[0]); return null; }
                              catch (e) { return String(e); }""", text)
            c.expect(problem is None, f"{where}: the JS snippet does not parse: {problem}")
            continue
        page = text.replace("https://cloak.example", t.url).replace("http://127.0.0.1:8080", t.url)
        page = page.replace('integrity="sha384-…"', f'integrity="{integrity}"')
        if "/elements/v1/cloak.js" not in page:
            page = f'<script src="{t.url}/elements/v1/cloak.js" crossorigin="anonymous"></script>\n' + page
        page = ("<!doctype html><meta charset=utf-8><script>window.__errors = [];"
                "addEventListener('error', function (e) { __errors.push(String(e.message)); });</script>\n" + page)
        name = f"snippet-{n}.html"
        with open(os.path.join(t.pagedir, name), "w", encoding="utf-8") as f:
            f.write(page)
        t.d.switch_to.default_content()
        t.d.get(f"{t.pages.origin}/{name}")
        try:
            wait_until(lambda: t.js("return document.querySelectorAll('iframe').length") >= 2, 10,
                       f"{where}: the snippet's frames to mount", lambda: t.js("return window.__errors"))
        except AssertionError as e:
            c.expect(False, str(e))
        errors = t.js("return window.__errors")
        c.expect(not errors, f"{where}: the snippet threw: {short(errors, 400)}")
    c.done()


TESTS = [test_mount, test_typing, test_one_release_per_number, test_one_validity_per_number, test_isolation, test_submit_tokens, test_card_frame, test_parity, test_masks, test_styling,
         test_events, test_strict_mode, test_bad_input, test_unlisted_origin, test_postmessage_hostility,
         test_headers, test_reveal, test_tab_order, test_file_state, test_file_submit, test_file_server,
         test_card_attributes, test_card_attributes_late, test_doc_snippets, test_timing]


def main(argv):
    return run_suite(
        "elements_test", TESTS, Run, argv,
        banner=lambda run: (f"cloak {run.url}; pages {run.pages.origin} (allowed) and {run.other.origin} "
                            f"(not allowed); BiDi console {'on' if run.browser.bidi else 'off'}"),
        before_each=lambda run: setattr(run, "current_checks", None),
        earlier_failures=lambda run: run.current_checks.failures if run.current_checks else [],
        describe=lambda run: run.describe(),
        after_each=lambda run, name, failed: run.d.switch_to.default_content())


if __name__ == "__main__":
    sys.exit(main(sys.argv))
