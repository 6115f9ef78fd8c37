/*
 * Cloak Elements: the reveal frame (reveal.html). Fetches one stored value with the session the
 * page's backend minted, shows it through the mask as text, and optionally copies it to the
 * clipboard from inside the frame. The page hears ready / revealed / copied / error, never the value.
 *
 * Fragment: #origin=<page origin>&id=<instance>
 */
(function () {
  "use strict";

  const { fragmentParams, decode, embeddedBy, pageSender } = window.CloakFrame;

  // Who may embed this frame is the CSP's frame-ancestors; the fragment says whom to talk to.
  const params = fragmentParams();
  if (!params) return;
  const pageOrigin = decode(params.get("origin"));
  if (!/^[0-9a-f]{16}$/.test(params.get("id") || "") || !embeddedBy(pageOrigin)) {
    return;
  }

  const toPage = pageSender(pageOrigin);

  /**
   * Each `#` shows the value's next character (the last ones when the mask has fewer `#` than
   * the value has characters); everything else is shown as written.
   */
  function masked(value, mask) {
    if (typeof mask !== "string") return value;
    const chars = Array.from(value);
    const slots = Array.from(mask);
    const holes = slots.filter(function (c) { return c === "#"; }).length;
    let next = holes < chars.length ? chars.length - holes : 0;
    return slots.map(function (c) { return c === "#" ? (chars[next++] || "") : c; }).join("");
  }

  function copyText(text) {
    function fallback() {
      const area = document.createElement("textarea");
      area.className = "cloak-offscreen";
      area.value = text;
      area.setAttribute("readonly", "");
      area.setAttribute("aria-hidden", "true");
      document.body.appendChild(area);
      area.select();
      let ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      area.remove();
      return ok ? Promise.resolve() : Promise.reject(new Error("copy"));
    }
    if (navigator.clipboard && navigator.clipboard.writeText) return navigator.clipboard.writeText(text).catch(fallback);
    return fallback();
  }

  /** The page's name for a refusal, from the answer's status and `extraInfo.reason` (never a value). */
  function refusal(status, reason) {
    if (status === 403) return reason === "expired" ? "expired" : "reveal_refused";
    if (status === 404) return "not_found";
    if (status === 429) return "rate_limited";
    if (status === 400) return "bad_request";
    return "reveal_failed";
  }

  function render(value, mask, withCopy) {
    const box = document.createElement("div");
    box.className = "cloak-reveal";
    const shown = document.createElement("span");
    shown.className = "cloak-value";
    shown.textContent = masked(value, mask);
    box.appendChild(shown);
    if (withCopy) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "cloak-copy";
      button.textContent = "Copy";
      button.setAttribute("aria-label", "Copy to the clipboard");
      button.addEventListener("click", function () {
        copyText(value).then(function () {
          button.textContent = "Copied";
          setTimeout(function () { button.textContent = "Copy"; }, 1500);
          toPage("copied");
        }, function () {
          toPage("error", { code: "copy_failed", status: null, message: "the clipboard refused the copy" });
        });
      });
      box.appendChild(button);
    }
    document.body.appendChild(box);
  }

  function reveal(init) {
    fetch("/elements/v1/reveal", {
      headers: { "Cloak-Session": init.session, "Cloak-Alias": init.alias },
      credentials: "omit", cache: "no-store", redirect: "error",
    }).then(function (res) {
      return res.json().catch(function () { return null; }).then(function (body) {
        if (res.status === 200 && body && typeof body.value === "string") {
          render(body.value, init.mask, init.copy === true);
          toPage("revealed");
          return;
        }
        const error = body && body.error ? body.error : {};
        const description = typeof error.description === "string" ? error.description : "";
        const reason = error.extraInfo && typeof error.extraInfo.reason === "string" ? error.extraInfo.reason : "";
        toPage("error", {
          code: refusal(res.status, reason), status: res.status,
          message: description || "Cloak did not reveal the value (HTTP " + res.status + ")",
        });
      });
    }).catch(function () {
      toPage("error", { code: "network_error", status: null, message: "the request to Cloak failed" });
    });
  }

  let started = false;
  window.addEventListener("message", function (event) {
    const data = event.data;
    if (event.source !== window.parent || event.origin !== pageOrigin) return;
    if (!data || typeof data !== "object" || data.cloak !== 1 || data.type !== "init" || started) return;
    const valid = typeof data.alias === "string" && data.alias !== "" && typeof data.session === "string" &&
      data.session !== "" && (data.mask === null || data.mask === undefined || typeof data.mask === "string");
    if (!valid) {
      toPage("error", { code: "bad_request", status: null, message: "alias and session are required" });
      return;
    }
    started = true;
    toPage("ready");
    reveal(data);
  });

  let height = -1;
  new ResizeObserver(function () {
    const h = Math.ceil(document.documentElement.getBoundingClientRect().height);
    if (h !== height) { height = h; toPage("resize", { height: h }); }
  }).observe(document.documentElement);
  toPage("hello");
})();
