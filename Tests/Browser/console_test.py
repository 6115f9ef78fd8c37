"""The operator console in headless Chromium, as an operator uses it (docs/console.md).

Starts the built binary on free loopback ports with a temporary SQLite vault, three tokens in
its YAML, two BIN tables imported, a route with a mistyped selector and a stored card; then
signs in, walks every page (a screenshot of each under .build/console-shots/), creates and
revokes a token, runs the inspector, rolls the BIN table back, searches the audit for what it
did, and checks refusals (scopes, CSRF, cross-site posts), session ends (sign-out, idle),
keyboard use and labels (Chromium's accessibility tree), sizes, and that no stored value,
secret or key ever reaches the page, the network answers or the console.

Run through scripts/browser-tests (which pins selenium); prints one ok/FAIL line per test.
"""
import json
import os
import subprocess
import sys
import time

import requests

from browser_support import (REPO, Browser, Checks, CloakServer, PageServer, SetupError, free_port,
                             hermetic_env, make_temp_dir, random_token, remove_dir, resolve_binary,
                             run_suite, short, token_sha256, wait_until, write_config)

SHOTS = os.path.join(REPO, ".build", "console-shots")
STORED_CARD = "5555555555554444"   # stored through the API: never on a console page
SAMPLE_CARD = "4111111111111111"   # the inspector's test card, typed by the operator
CONSOLE_SCOPES = ["tokens:admin", "audit:read", "routes:test", "bins:admin", "keys:read", "jobs:read"]
PAGES = ["overview", "tokens", "routes", "forms", "files", "bins", "keys", "audit", "jobs"]
# An import's rows: two the form refuses (a number that fails Luhn, one too short).
IMPORT_CSV = ("id,card_number\nrow-1,6011111111111117\nrow-2,card\nrow-3,1234\n"
              f"row-4,{STORED_CARD}\n")


class Run:
    def __init__(self):
        self.binary = resolve_binary()
        self.dir = make_temp_dir("cloak-console-")
        self.cloak = None
        self.idle_cloak = None
        self.browser = None
        self.pages = None
        self.tokens = {name: random_token() for name in ["ops", "auditor", "payer", "idle", "importer", "alice",
                                                          "bob"]}
        self.secrets = []

    def config(self, port, console_port, idle=900):
        t = self.tokens
        return {
            "server": {"listen": f"127.0.0.1:{port}", "threads": 1},
            "vault": {"store": "sqlite:" + os.path.join(self.dir, f"cloak-{port}.db"),
                      "keys": "file:" + os.path.join(self.dir, "keys.json")},
            "auth": {"open_tokenize": True, "refresh_s": 1, "tokens": [
                {"id": "ops", "sha256": token_sha256(t["ops"]),
                 "scopes": CONSOLE_SCOPES + ["aliases:create", "aliases:reveal"]},
                {"id": "auditor", "sha256": token_sha256(t["auditor"]), "scopes": ["audit:read"]},
                {"id": "payer", "sha256": token_sha256(t["payer"]), "scopes": ["aliases:reveal", "egress:*"]},
                {"id": "idle", "sha256": token_sha256(t["idle"]), "scopes": ["audit:read"]},
                {"id": "importer", "sha256": token_sha256(t["importer"]), "scopes": ["jobs:import", "aliases:create"]},
                # One person asks for an export, another approves it on the Jobs page.
                {"id": "alice", "sha256": token_sha256(t["alice"]), "scopes": ["jobs:export", "aliases:reveal"],
                 "person": "alice@example.com"},
                {"id": "bob", "sha256": token_sha256(t["bob"]), "scopes": ["jobs:approve", "jobs:read"],
                 "person": "bob@example.com"},
            ]},
            "bins": {"refresh_s": 1},
            "console": {"listen": f"127.0.0.1:{console_port}", "session_idle_s": idle,
                        "session_max_s": max(idle, 3600), "elements_origin": f"http://127.0.0.1:{port}"},
            "elements": {"allowed_origins": [f"http://127.0.0.1:{console_port}"]},
            "forms": {"checkout": {"fields": [
                {"name": "card_number", "type": "cardNumber", "tokenization": {"format": "FPE_T_FOUR"}},
                {"name": "card_cvc", "type": "cvc", "tokenization": {"format": "UUID", "storage": "VOLATILE"}},
            ]}},
            # A reveal on the way out: the routes page names it without a format.
            "egress": {"routes": [{"id": "psp", "upstream": "http://127.0.0.1:9", "allow_private": True,
                                   "request": [{"reveal": {"json": ["$.card"]}}]}]},
            "routes": [{
                "id": "0c4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10", "path": "/orders",
                "upstream": "http://127.0.0.1:9/orders",
                "request": [{"redact": {"json": ["$.card_numbr"], "format": "FPE_SIX_T_FOUR", "storage": "PERSISTENT"}}],
            }],
        }

    def cli(self, config_path, *args):
        done = subprocess.run([self.binary, *args, "--config", config_path], cwd=self.dir, env=hermetic_env(),
                              capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise SetupError(f"cloak {' '.join(args)} failed ({done.returncode}): {done.stderr[-800:]}")
        return done.stdout

    def start(self):
        os.makedirs(SHOTS, exist_ok=True)
        port, console_port = free_port(), free_port()
        config = self.config(port, console_port)
        config_path = os.path.join(self.dir, "setup.yaml")
        write_config(config_path, config)
        self.cli(config_path, "keys", "init")
        for i, issuer in enumerate(["First Bank", "Second Bank"]):
            table = os.path.join(self.dir, f"bins{i}.csv")
            with open(table, "w") as f:
                f.write(f"low,high,issuer,funding\n555555,555555,{issuer},credit\n")
            self.cli(config_path, "bins", "import", table)
        with open(os.path.join(self.dir, "keys.json"), encoding="utf-8") as f:
            self.secrets.append(json.load(f)["wrapping_key"])
        self.cloak = CloakServer(self.binary, self.dir, port, config)
        self.cloak.wait_healthy()
        self.console = f"http://127.0.0.1:{console_port}"
        wait_until(lambda: self._answers(self.console + "/console/"), 20, "the console listener")
        stored = requests.post(self.cloak.url + "/aliases", timeout=10,
                               headers={"Authorization": "Bearer " + self.tokens["ops"]},
                               json={"data": [{"value": STORED_CARD, "format": "FPE_SIX_T_FOUR"}]}).json()
        self.stored_alias = stored["data"][0]["aliases"][0]["alias"]
        self.secrets += [STORED_CARD, "6011111111111117", self.stored_alias]
        self.secrets += list(self.tokens.values())
        self.evil_dir = os.path.join(self.dir, "evil")
        os.makedirs(self.evil_dir, exist_ok=True)
        self.pages = PageServer(self.evil_dir)
        self.browser = Browser()
        self.d = self.browser.driver

    @staticmethod
    def _answers(url):
        try:
            return requests.get(url, timeout=2).status_code == 200
        except requests.RequestException:
            return False

    def close(self):
        if self.browser:
            self.browser.quit()
        for server in [self.cloak, self.idle_cloak]:
            if server:
                server.stop()
        if self.pages:
            self.pages.stop()
        remove_dir(self.dir)

    # --- the page -------------------------------------------------------------------------------

    def open(self, hash_=""):
        self.d.get(self.console + "/console/" + hash_)

    def find(self, css):
        from selenium.webdriver.common.by import By
        return self.d.find_element(By.CSS_SELECTOR, css)

    def finds(self, css):
        from selenium.webdriver.common.by import By
        return self.d.find_elements(By.CSS_SELECTOR, css)

    def visible(self, css):
        found = self.finds(css)
        return found[0] if found and found[0].is_displayed() else None

    def text(self):
        return self.d.execute_script("return document.body.innerText")

    def sign_in(self, name, console=None):
        self.d.get((console or self.console) + "/console/")
        wait_until(lambda: self.visible("#token") or self.visible("#sign-out"), 10, "the page")
        self.sign_out()
        field = wait_until(lambda: self.visible("#token"), 10, "the sign-in form")
        field.send_keys(self.tokens[name] if name in self.tokens else name)
        self.find("#sign-in-form button").click()

    def signed_in(self, name):
        self.sign_in(name)
        wait_until(lambda: f"Signed in as {name}" in self.find("#who").text, 10, f"{name} signed in",
                   lambda: self.find("#status").text)

    def sign_out(self):
        if self.visible("#sign-out"):
            self.find("#sign-out").click()
            wait_until(lambda: self.visible("#token"), 10, "the sign-in form after sign-out")

    def go(self, page):
        self.d.execute_script("location.hash = arguments[0]", "#/" + page)
        wait_until(lambda: not self.finds("#page .loading") and self.finds("#page h1"), 10, f"the {page} page",
                   lambda: self.text()[-600:])

    def session_cookie(self):
        return {c["name"]: c["value"] for c in self.d.get_cookies()}

    def shot(self, name):
        self.d.save_screenshot(os.path.join(SHOTS, name + ".png"))

    def leaks(self, text):
        return [s[:8] + "…" for s in self.secrets if s and s in text]


# ---- tests ----------------------------------------------------------------------------------------


def test_sign_in_refusals(run):
    run.sign_out()
    run.sign_in("not-a-token")
    wait_until(lambda: "That token is not valid." in run.find("#status").text, 10, "the refusal of a bad token")
    run.sign_in("payer")
    wait_until(lambda: "holds none of the console's scopes" in run.find("#status").text, 10,
               "the refusal of a token without a console scope", lambda: run.find("#status").text)
    assert run.visible("#token"), "still at the sign-in form"
    run.shot("sign-in")


def test_walk_every_page(run):
    run.signed_in("ops")
    checks = Checks()
    for page in PAGES:
        run.go(page)
        if page == "routes":
            wait_until(lambda: run.finds("#sample"), 10, "the inspector's editor")
        if page == "audit":
            wait_until(lambda: run.finds("#audit-results table, #audit-results .empty"), 10, "the audit results")
        if page == "jobs":
            wait_until(lambda: run.finds("#jobs-list table, #jobs-list .empty"), 10, "the jobs")
        checks.expect(not run.finds("#page .refused"), f"{page}: {short(run.text()[-300:])}")
        checks.equal(run.leaks(run.d.page_source), [], f"secrets in the {page} page")
        run.shot(page)
    checks.expect("0.1.0" in (run.go("overview") or run.text()), "the overview names the version")
    checks.expect("Second Bank" not in run.text(), "no BIN row on the overview")
    checks.expect("MiB free" in run.text(), "the overview shows the store's free disk (review V, item 4)")
    checks.done()


def test_answers_hold_no_secret(run):
    run.signed_in("ops")
    cookies = run.session_cookie()
    checks = Checks()
    for path in ["/console/", "/console/console.js", "/console/console.css", "/console/favicon.svg",
                 "/console/session", "/console/api/admin/overview", "/console/api/admin/files",
                 "/console/api/admin/forms", "/console/api/admin/routes", "/console/api/admin/bins",
                 "/console/api/admin/keys", "/console/api/admin/tokens", "/console/api/admin/audit?limit=500",
                 "/console/api/admin/jobs"]:
        answer = requests.get(run.console + path, cookies=cookies, timeout=10)
        checks.equal(answer.status_code, 200, path)
        checks.expect(len(answer.content) <= 200_000, f"{path} is {len(answer.content)} bytes (over 200 KB)")
        checks.equal(run.leaks(answer.text), [], f"secrets in {path}")
    checks.equal(run.leaks("\n".join(run.browser.console_lines())), [], "secrets in the browser console")
    checks.done()


def test_create_and_revoke_a_token(run):
    run.signed_in("ops")
    run.go("tokens")
    run.find("#new-id").send_keys("console-made")
    for box in run.finds("input[name=scope]"):
        if box.get_attribute("value") in ("audit:read", "aliases:create"):
            box.click()
    run.find("#create-token button[type=submit]").click()
    secret = wait_until(lambda: run.visible("#secret"), 10, "the new token's secret", lambda: run.find("#status").text)
    value = secret.get_attribute("value")
    assert value.startswith("ck_"), value
    run.secrets.append(value)
    run.shot("tokens-created")
    # It works as an API token, with what it was given.
    made = requests.post(run.cloak.url + "/aliases", headers={"Authorization": "Bearer " + value}, timeout=10,
                         json={"data": [{"value": "hello", "format": "UUID"}]})
    assert made.status_code == 201, (made.status_code, made.text[:300])
    row = wait_until(lambda: [r for r in run.finds("tbody tr") if "console-made" in r.text[:20]], 10, "its row")
    row[0].find_element("css selector", "button.danger").click()
    question = wait_until(lambda: run.visible("dialog.confirm"), 10, "the confirmation")
    assert "Revoke console-made?" in question.text and "every token minted under it" in question.text, question.text
    run.find("#confirm-yes").click()
    wait_until(lambda: "Revoked console-made" in run.find("#status").text, 10, "the revocation")
    wait_until(lambda: requests.post(run.cloak.url + "/aliases", headers={"Authorization": "Bearer " + value},
                                     timeout=10, json={"data": [{"value": "x", "format": "UUID"}]}).status_code == 401,
               10, "the revoked token refused")


def test_inspector_names_a_mistyped_selector(run):
    run.signed_in("ops")
    run.go("routes")
    editor = wait_until(lambda: run.visible("#sample"), 10, "the sample editor")
    editor.clear()
    editor.send_keys(json.dumps({"method": "POST", "path": "/", "headers": {"Content-Type": "application/json"},
                                 "body": {"card_number": SAMPLE_CARD, "amount": 1000}}))
    run.find("#inspect button[type=submit]").click()
    wait_until(lambda: "No value was found at $.card_numbr" in run.find("#inspection").text, 10,
               "the missed selector named", lambda: run.find("#inspection").text)
    assert "Would refuse" in run.find("#inspection").text, run.find("#inspection").text
    run.shot("routes-inspector")


def test_forms_preview_their_elements_fields(run):
    from selenium.webdriver.common.by import By
    run.signed_in("ops")
    run.go("forms")
    [b for b in run.finds("#page button") if b.text.startswith("Preview checkout")][0].click()
    frame = wait_until(lambda: run.finds("#preview-checkout .preview-frame iframe"), 15, "the preview's frames",
                       lambda: run.find("#preview-checkout").text)[0]
    run.d.switch_to.frame(frame)
    field = wait_until(lambda: run.d.find_elements(By.CSS_SELECTOR, "input"), 15, "the card number's input")[0]
    field.send_keys(SAMPLE_CARD)
    field.send_keys("\t")
    run.d.switch_to.default_content()
    wait_until(lambda: "valid, visa" in run.find("#preview-state-checkout-card_number").text, 15,
               "the number's state in the console", lambda: run.find("#preview-checkout").text)
    run.shot("forms-preview")
    top = run.d.execute_script("return document.documentElement.outerHTML")
    assert SAMPLE_CARD not in top and SAMPLE_CARD[-4:] + "<" not in top, "the typed number reached the console's DOM"


def test_bin_rollback(run):
    run.signed_in("ops")
    run.go("bins")
    wait_until(lambda: "Roll back to" in run.text(), 10, "the rollback button")
    version = requests.get(run.console + "/console/api/admin/bins", cookies=run.session_cookie(),
                           timeout=10).json()["table"]["version"]
    [b for b in run.finds("button.danger") if b.text.startswith("Roll back")][0].click()
    question = wait_until(lambda: run.visible("dialog.confirm"), 10, "the confirmation")
    assert f"replacing version {version}" in question.text, question.text
    run.find("#confirm-yes").click()
    wait_until(lambda: f"now version {version + 1}" in run.find("#status").text, 10, "the new version",
               lambda: run.find("#status").text)
    answer = requests.get(run.console + "/console/api/admin/bins", cookies=run.session_cookie(), timeout=10).json()
    assert answer["table"]["source"].startswith("rollback to"), answer["table"]


def test_audit_finds_what_was_done(run):
    run.signed_in("ops")
    run.go("audit")
    for action in ["console_sign_in", "tokens_create", "tokens_revoke", "routes_test", "bins_rollback"]:
        field = run.find("#audit-action")
        field.clear()
        field.send_keys(action)
        run.find("#audit-search button[type=submit]").click()
        results = lambda: run.d.execute_script("return document.getElementById('audit-results').innerText")
        wait_until(lambda: "Export" in results() and action in results() and "No event" not in results(), 10,
                   f"an audit event {action}", lambda: results()[:400])
    run.shot("audit-search")


def test_a_token_without_the_scope_is_refused(run):
    run.sign_out()
    run.signed_in("auditor")
    hidden = [a.get_attribute("data-page") for a in run.finds("#pages a") if not a.is_displayed()]
    assert set(hidden) == {"tokens", "routes", "bins", "keys", "jobs"}, hidden
    run.go("tokens")
    assert "does not hold tokens:admin" in run.find("#page").text, run.find("#page").text
    answer = requests.get(run.console + "/console/api/admin/tokens", cookies=run.session_cookie(), timeout=10)
    assert answer.status_code == 403, answer.status_code
    run.sign_out()


def test_changes_need_the_console_origin_and_csrf(run):
    run.signed_in("ops")
    cookies = run.session_cookie()
    csrf = requests.get(run.console + "/console/session", cookies=cookies, timeout=10).json()["csrf"]
    body = {"id": "forged", "scopes": ["audit:read"]}
    url = run.console + "/console/api/admin/tokens"
    checks = Checks()
    no_csrf = requests.post(url, json=body, cookies=cookies, headers={"Origin": run.console}, timeout=10)
    checks.equal(no_csrf.status_code, 403, "a change without the CSRF token")
    wrong = requests.post(url, json=body, cookies=cookies, headers={"Origin": run.console, "X-Cloak-CSRF": "x" * 32},
                          timeout=10)
    checks.equal(wrong.status_code, 403, "a change with a wrong CSRF token")
    cross = requests.post(url, json=body, cookies=cookies,
                          headers={"Origin": run.pages.origin, "X-Cloak-CSRF": csrf}, timeout=10)
    checks.equal(cross.status_code, 403, "a change from another origin")
    # A page of another site posts a form to the console in the signed-in browser.
    with open(os.path.join(run.evil_dir, "forge.html"), "w") as f:
        f.write(f'<!doctype html><form id="f" method="POST" action="{url}" enctype="text/plain">'
                f'<input name=\'{{"id":"forged","scopes":["audit:read"],"x":"\' value=\'"}}\'></form>'
                '<script>document.getElementById("f").submit()</script>')
    run.d.get(run.pages.origin + "/forge.html")
    wait_until(lambda: run.d.current_url.startswith(run.console), 10, "the forged post to land")
    listed = requests.get(url, cookies=cookies, timeout=10).json()["data"]
    checks.equal([t["id"] for t in listed if t["id"] == "forged"], [], "a token made by a cross-site post")
    checks.done()


def test_sign_out_ends_the_session(run):
    run.signed_in("ops")
    cookies = run.session_cookie()
    run.sign_out()
    answer = requests.get(run.console + "/console/session", cookies=cookies, timeout=10)
    assert answer.json() == {"signed_in": False}, answer.text


def test_idle_session_ends(run):
    port, console_port = free_port(), free_port()
    config = run.config(port, console_port, idle=5)
    config["vault"]["store"] = "sqlite:" + os.path.join(run.dir, "idle.db")
    run.idle_cloak = CloakServer(run.binary, run.dir, port, config)
    run.idle_cloak.wait_healthy()
    console = f"http://127.0.0.1:{console_port}"
    wait_until(lambda: run._answers(console + "/console/"), 20, "the second console")
    run.sign_in("idle", console=console)
    wait_until(lambda: "Signed in as idle" in run.find("#who").text, 10, "signed in")
    cookies = run.session_cookie()
    # Polled without the cookie (a use would keep it alive), then asked once with it.
    started = time.monotonic()
    wait_until(lambda: time.monotonic() - started > 5.5, 10, "the idle time to pass")
    answer = requests.get(console + "/console/session", cookies=cookies, timeout=10)
    assert answer.json() == {"signed_in": False}, answer.text
    run.d.refresh()
    wait_until(lambda: run.visible("#token"), 10, "the sign-in form after the idle end")
    run.idle_cloak.stop()
    run.idle_cloak = None


def test_keyboard_and_labels(run):
    from selenium.webdriver.common.keys import Keys
    run.sign_out()
    run.open()
    wait_until(lambda: run.visible("#token"), 10, "the sign-in form")
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(run.d).send_keys(Keys.TAB).perform()
    first = run.d.switch_to.active_element
    assert first.get_attribute("class") == "skip", first.get_attribute("outerHTML")[:200]
    # Sign in with the keyboard alone: the field, then Enter.
    run.find("#token").send_keys(run.tokens["ops"] + Keys.ENTER)
    wait_until(lambda: "Signed in as ops" in run.find("#who").text, 10, "a keyboard sign-in")
    run.go("tokens")
    tree = run.d.execute_cdp_cmd("Accessibility.getFullAXTree", {})["nodes"]
    unnamed = []
    roles = set()
    for node in tree:
        role = node.get("role", {}).get("value")
        roles.add(role)
        name = node.get("name", {}).get("value", "")
        if role in ("textbox", "checkbox", "button", "link", "spinbutton", "combobox") and not str(name).strip():
            unnamed.append(role)
    assert not unnamed, f"controls without an accessible name: {unnamed}"
    for landmark in ("navigation", "main", "banner"):
        assert landmark in roles, f"no {landmark} landmark: {sorted(r for r in roles if r)}"
    # Every page is reachable from the navigation by keyboard: Tab lands on its links.
    links = []
    for _ in range(40):
        ActionChains(run.d).send_keys(Keys.TAB).perform()
        active = run.d.switch_to.active_element
        if active.get_attribute("data-page"):
            links.append(active.get_attribute("data-page"))
        if PAGES[-1] in links:
            break
    assert links[:len(PAGES)] == PAGES, links


def test_docs(run):
    """docs/console.md as written: its configuration is the shipped one's, its command works, and
    every page it shows has its screenshot."""
    import re
    text = open(os.path.join(REPO, "docs", "console.md"), encoding="utf-8").read()
    yaml_block = re.search(r"```yaml\n(.*?)```", text, re.S).group(1)
    shipped = open(os.path.join(REPO, "config", "cloak.yaml"), encoding="utf-8").read()
    assert yaml_block in shipped, "docs/console.md's console section is not config/cloak.yaml's"
    commands = [c.strip() for c in re.findall(r"```sh\n(.*?)```", text, re.S)]
    made_ids = []
    for command in commands:
        assert command.startswith("cloak "), command
        made = json.loads(run.cli(os.path.join(run.dir, "setup.yaml"), *command.split()[1:]))
        assert made["expires_at"], made
        made_ids.append(made["id"])
    assert made_ids == ["ops-console", "approver-console"], made_ids
    images = re.findall(r"!\[[^\]]*\]\((console/[^)]+)\)", text)
    missing = [i for i in images if not os.path.isfile(os.path.join(REPO, "docs", i))]
    assert not missing, f"docs/console.md shows missing screenshots: {missing}"
    shown = {os.path.basename(i).split(".")[0].split("-")[0] for i in images}
    assert set(PAGES) <= shown, f"pages without a screenshot in docs/console.md: {sorted(set(PAGES) - shown)}"


def test_jobs_page_shows_progress_refusals_and_approves(run):
    """Issue 76: an import and an export on the Jobs page of a jobs:approve + jobs:read token;
    the export approved there after typing its row count, and never a value on the page."""
    checks = Checks()
    importer = {"Authorization": "Bearer " + run.tokens["importer"]}
    started = requests.post(run.cloak.url + "/admin/jobs/imports?form=checkout&file=cards.csv", headers=importer,
                            data=IMPORT_CSV.encode(), timeout=30)
    assert started.status_code == 202, (started.status_code, started.text[:300])
    job = started.json()["id"]
    done = wait_until(lambda: (lambda j: j if j["state"] == "done" else None)(
        requests.get(run.cloak.url + "/admin/jobs/" + job, headers=importer, timeout=10).json()), 30, "the import")
    checks.equal((done["imported"], done["refused"]), (2, 2), "the import's counts")
    # Alice asks for the form's cards, to a key made here.
    home = os.path.join(run.dir, "gnupg")
    os.makedirs(home, mode=0o700, exist_ok=True)
    subprocess.run(["gpg", "--homedir", home, "--batch", "--passphrase", "", "--quick-gen-key",
                    "Provider <ops@provider.example>", "future-default", "default", "never"],
                   check=True, capture_output=True, timeout=60)
    key = subprocess.run(["gpg", "--homedir", home, "--armor", "--export", "ops@provider.example"],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    alice = {"Authorization": "Bearer " + run.tokens["alice"]}
    asked = requests.post(run.cloak.url + "/admin/jobs/exports", headers=alice, timeout=30,
                          json={"selection": {"form": "checkout"}, "recipient": key})
    assert asked.status_code in (201, 202), (asked.status_code, asked.text[:300])
    export = asked.json()["id"]
    counted = wait_until(lambda: (lambda j: j if j["state"] == "awaiting_approval" else None)(
        requests.get(run.cloak.url + "/admin/jobs/" + export, headers=alice, timeout=10).json()), 30,
        "the export's count")

    run.signed_in("bob")
    run.go("jobs")
    listed = wait_until(lambda: run.finds("#jobs-list tbody tr"), 10, "the jobs' rows")
    checks.equal(len(listed), 2, "both jobs listed")
    imported_row = [r for r in listed if job in r.text][0].text
    checks.expect("4 rows read" in imported_row, f"the import's progress: {imported_row}")
    # The import: its refusals by reason (the advice, without a row id or value).
    run.d.execute_script("location.hash = arguments[0]", "#/jobs/" + job)
    refusals = wait_until(lambda: run.visible("#job-detail table"), 10, "the import's refusals",
                          lambda: run.find("#job-detail").text)
    counts = [int(row.find_elements("css selector", "td")[-1].text) for row in refusals.find_elements(
        "css selector", "tbody tr")]
    checks.equal(sum(counts), 2, "refused rows by reason")
    checks.expect("row-2" not in run.find("#job-detail").text, "no row id among the reasons")
    run.shot("jobs")
    # The export: what the approver signs, then the approval after typing the count.
    run.d.execute_script("location.hash = arguments[0]", "#/jobs/" + export)
    wait_until(lambda: run.visible("#approve-rows"), 10, "the approval form", lambda: run.find("#job-detail").text)
    shown = run.find("#job-detail").text
    for fact in [counted["recipient_fingerprint"], counted["selection_digest"], "alice@example.com"]:
        checks.expect(fact in shown, f"the approval shows {fact[:12]}")
    run.find("#approve-rows").send_keys(str(counted["rows"] + 1))
    run.find("#approve button[type=submit]").click()
    wait_until(lambda: "nothing was approved" in run.find("#status").text, 10, "a wrong count refused")
    checks.equal(requests.get(run.cloak.url + "/admin/jobs/" + export, headers=alice, timeout=10).json()["approval"],
                 None, "no approval after a wrong count")
    run.shot("jobs-approval")
    field = run.find("#approve-rows")
    field.clear()
    field.send_keys(str(counted["rows"]))
    run.find("#approve button[type=submit]").click()
    wait_until(lambda: "Approved " + export in run.find("#status").text, 10, "the approval",
               lambda: run.find("#status").text)
    approved = requests.get(run.cloak.url + "/admin/jobs/" + export, headers=alice, timeout=10).json()
    checks.equal((approved["approval"] or {}).get("person"), "bob@example.com", "approved by bob")
    checks.equal(run.leaks(run.d.page_source), [], "secrets on the Jobs page")
    # The files stay with their owners: bob's session reads no advice, mapping or export file.
    for path in [f"/admin/jobs/{job}/advice", f"/admin/jobs/{job}/mapping", f"/admin/jobs/{export}/export"]:
        answer = requests.get(run.console + "/console/api" + path, cookies=run.session_cookie(), timeout=10)
        checks.equal(answer.status_code, 404, f"{path} from the console")
    checks.done()


def test_pages_fit_at_common_widths(run):
    """Issue 76's console fixes, at 1366 and 1920 px: no page is wider than the window, opening a
    page keeps its header in view, and a message never covers what the page shows."""
    checks = Checks()
    run.signed_in("ops")
    try:
        for width in (1366, 1920):
            run.d.set_window_size(width, 900)
            for page in PAGES:
                run.go(page)
                if page == "audit":
                    wait_until(lambda: run.finds("#audit-results table, #audit-results .empty"), 10, "the audit")
                    run.shot(f"audit-{width}")
                overflow = run.d.execute_script(
                    "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
                checks.expect(overflow <= 0, f"{page} at {width} px is {overflow} px too wide")
                top = run.d.execute_script("return document.querySelector('header.bar').getBoundingClientRect().top")
                checks.expect(top >= 0, f"{page} at {width} px scrolled its header out of view ({top})")
        # A new token's secret and the message about it, side by side.
        run.go("tokens")
        run.find("#new-id").send_keys("width-check")
        [b for b in run.finds("input[name=scope]") if b.get_attribute("value") == "audit:read"][0].click()
        run.find("#create-token button[type=submit]").click()
        secret = wait_until(lambda: run.visible("#secret"), 10, "the secret", lambda: run.find("#status").text)
        run.secrets.append(secret.get_attribute("value"))
        run.d.execute_script("arguments[0].scrollIntoView({block: 'end'})", secret)
        overlap = run.d.execute_script("""
            const a = document.getElementById('status').getBoundingClientRect();
            const b = arguments[0].getBoundingClientRect();
            return a.height > 0 && a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;""",
                                       secret)
        checks.expect(not overlap, "the status message covers the new token's secret")
        checks.expect(run.d.execute_script("return document.getElementById('new-id').checkValidity()") is True
                      or run.find("#new-id").get_attribute("value") == "", "the id field's pattern compiles")
        field = run.find("#new-id")
        field.clear()
        field.send_keys("a-valid_id.1")
        checks.expect(run.d.execute_script("return document.getElementById('new-id').checkValidity()"),
                      "a valid id matches the field's pattern")
        run.go("overview")
        checks.equal(run.find("#status").text, "", "a message stays with the page it was said on")
    finally:
        run.d.set_window_size(1280, 1400)
    # Routes: a reveal names no format.
    run.go("routes")
    checks.expect("psp" in run.text() and "reveal UUID" not in run.text(), "a reveal named with a format")
    checks.done()


TESTS = [test_docs, test_sign_in_refusals, test_walk_every_page, test_answers_hold_no_secret, test_create_and_revoke_a_token,
         test_inspector_names_a_mistyped_selector, test_forms_preview_their_elements_fields, test_bin_rollback, test_audit_finds_what_was_done,
         test_a_token_without_the_scope_is_refused, test_changes_need_the_console_origin_and_csrf,
         test_sign_out_ends_the_session, test_idle_session_ends, test_keyboard_and_labels,
         test_jobs_page_shows_progress_refusals_and_approves, test_pages_fit_at_common_widths]


def main(argv):
    def shoot_failure(run, name, failed):
        if failed:
            run.shot("FAILED-" + name)

    return run_suite(
        "console_test", TESTS, Run, argv, prefix="console.",
        banner=lambda run: f"console {run.console}; cloak {run.cloak.url}; screenshots in {SHOTS}",
        after_each=shoot_failure)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
