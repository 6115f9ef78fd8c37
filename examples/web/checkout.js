// The example checkout page's script: Cloak Elements only, no framework, no build step.
// It mounts Cloak's four card fields, shows their state (brand, errors), enables Pay when the form
// is valid, and submits through Cloak's frames: the page gets aliases back, never a card number.
(function () {
  "use strict";

  // Where Cloak is: http://127.0.0.1:8080, or ?cloak=http://127.0.0.1:PORT (http or https origin only).
  var DEFAULT_CLOAK = "http://127.0.0.1:8080";
  var cloak = DEFAULT_CLOAK;
  var asked = new URLSearchParams(location.search).get("cloak");
  if (asked) {
    try {
      var url = new URL(asked);
      if (url.protocol === "http:" || url.protocol === "https:") cloak = url.origin;
    } catch (e) { /* keep the default */ }
  }

  var FIELDS = {
    number: {name: "card_data.card_number", placeholder: "1234 1234 1234 1234", label: "Card number",
             empty: "Enter your card number.", invalid: "This card number is incomplete or not valid."},
    exp: {name: "card_data.exp_date", placeholder: "MM / YY", label: "Expiry date",
          empty: "Enter the expiry date.", invalid: "Enter a month and year that have not passed, as MM/YY."},
    cvc: {name: "card_data.card_cvc", placeholder: "CVC", label: "Security code",
          empty: "Enter the security code.", invalid: "The security code is incomplete."},
    holder: {name: "card_data.card_holder", placeholder: "Full name", label: "Name on card",
             empty: "Enter the name on the card.", invalid: "Use letters, spaces and . , ' - only."},
  };
  var BY_NAME = {};
  Object.keys(FIELDS).forEach(function (key) { BY_NAME[FIELDS[key].name] = key; });

  // The frames' inputs are styled through Cloak (CSS properties it allows; see docs/elements.md).
  var CSS = {
    base: {
      color: "#1a1f36", "background-color": "#ffffff", "font-size": "16px", "line-height": "22px",
      "font-family": "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif",
      padding: "11px 12px", border: "1px solid #d5dae1", "border-radius": "8px",
    },
    focus: {"border-color": "#5b5bd6"},
    invalid: {color: "#c4213e", "border-color": "#e5484d"},
    placeholder: {color: "#8a94a3"},
  };

  var root = document.documentElement;
  var payButton = document.getElementById("pay");
  var banner = document.getElementById("banner");
  var result = document.getElementById("result");
  var states = {};     // key → latest state
  var touched = {};    // key → the user left the field after typing
  var attempted = false;
  var form = null;

  root.dataset.cloak = "loading";
  root.dataset.valid = "false";

  function $(id) { return document.getElementById(id); }

  function showBanner(text) {
    banner.textContent = text;
    banner.hidden = !text;
  }

  function errorFor(key) {
    var s = states[key];
    if (!s || !(touched[key] || attempted)) return "";
    if (s.isEmpty) return s.isRequired || s.isRequiredValidOnly ? FIELDS[key].empty : "";
    return s.isValid ? "" : FIELDS[key].invalid;
  }

  function render(key) {
    var message = errorFor(key);
    $(key + "-error").textContent = message;
    document.querySelector('[data-field="' + key + '"]').classList.toggle("has-error", !!message);
    if (key === "number") {
      var s = states.number;
      var brand = s && !s.isEmpty && s.cardBrand && s.cardBrand !== "unknown" ? s.cardBrandName : "";
      $("brand").textContent = brand;
      $("brand").hidden = !brand;
    }
  }

  function mount() {
    try {
      form = Cloak.form("checkout", {origin: cloak});
    } catch (e) {
      root.dataset.cloak = "error";
      showBanner(String(e.message || e));
      return;
    }
    Object.keys(FIELDS).forEach(function (key) {
      var f = FIELDS[key];
      var field = form.field("#" + key, {name: f.name, placeholder: f.placeholder, ariaLabel: f.label, css: CSS});
      var wrap = document.querySelector('[data-field="' + key + '"]');
      field.on("change", function (state) { states[key] = state; render(key); updatePay(); });
      field.on("focus", function () { wrap.classList.add("focused"); });
      field.on("blur", function () {
        wrap.classList.remove("focused");
        if (states[key] && !states[key].isEmpty) touched[key] = true;
        render(key);
      });
      field.on("enter", function () { if (!payButton.disabled) pay(); });
      field.on("error", function (e) { showBanner(f.label + ": " + e.message); });
    });
    form.on("ready", function () { root.dataset.cloak = "ready"; });
    form.on("error", function (e) {
      root.dataset.cloak = "error";
      showBanner(e.code === "frame_blocked"
        ? "Cloak refused to show its fields on this page: add " + location.origin + " to elements.allowed_origins."
        : e.code === "unknown_form" ? "Cloak has no form \"checkout\"." : e.message);
    });
  }

  /**
   * Pay is enabled when the four fields on this page are valid. (form.on("change") says whether the
   * whole form "checkout" would pass, fields this page does not show included: if Cloak's form asks
   * for more, the answer to Pay names it.)
   */
  function updatePay() {
    var valid = Object.keys(FIELDS).every(function (key) { return states[key] && states[key].isValid; });
    root.dataset.valid = valid ? "true" : "false";
    if (!payButton.classList.contains("busy")) payButton.disabled = !valid;
  }

  function showAliases(body) {
    var list = $("aliases");
    list.textContent = "";
    Object.keys(body || {}).forEach(function (name) {
      var dt = document.createElement("dt");
      dt.textContent = name;
      var dd = document.createElement("dd");
      dd.textContent = typeof body[name] === "string" ? body[name] : JSON.stringify(body[name]);
      list.appendChild(dt);
      list.appendChild(dd);
    });
    result.hidden = false;
  }

  /** A 1001 answer names the fields that are missing or invalid; show each where it is. */
  function showInputErrors(info) {
    var elsewhere = [];
    ["VGSSDKErrorInputDataRequired", "VGSSDKErrorInputDataRequiredValid"].forEach(function (kind) {
      (info && info[kind] || []).forEach(function (name) {
        var key = BY_NAME[name];
        if (key) touched[key] = true;
        else if (elsewhere.indexOf(name) < 0) elsewhere.push(name);
      });
    });
    Object.keys(FIELDS).forEach(render);
    if (elsewhere.length) {
      showBanner("The form \"checkout\" also requires " + elsewhere.join(", ") +
                 ", which this page does not collect (see forms.checkout in Cloak's configuration).");
    }
  }

  /** What the shopper is told when Cloak refuses a submission: never the server's text. */
  function shopperMessage(status) {
    if (status === 429) return "Too many attempts. Please wait a minute and try again.";
    if (status >= 500) return "Payments are unavailable right now. Please try again shortly.";
    return "This card could not be accepted. Please check it or use another card.";
  }

  function pay() {
    attempted = true;
    Object.keys(FIELDS).forEach(render);
    showBanner("");
    result.hidden = true;
    payButton.disabled = true;
    payButton.classList.add("busy");
    form.submit("tokens").then(function (answer) {
      var body = answer.body || {};
      if (answer.status === 200) {
        showAliases(body);
      } else if (body.error && body.error.code === 1001) {
        showInputErrors(body.error.extraInfo);
      } else {
        // The shopper reads the shop's words; the server's sentence is for the shop's developers
        // (it names configuration), so it goes to the console with its code.
        if (window.console) console.warn("Cloak answered", answer.status, body.error ? body.error.code : "");
        showBanner(shopperMessage(answer.status));
      }
    }, function (e) {
      showBanner("The payment could not be sent: " + (e && e.message ? e.message : e));
    }).then(function () {
      payButton.classList.remove("busy");
      payButton.disabled = root.dataset.valid !== "true";
    });
  }

  document.getElementById("payment").addEventListener("submit", function (event) {
    event.preventDefault();
    if (!payButton.disabled) pay();
  });

  // cloak.js from Cloak itself (a shop would pin it with integrity="sha384-…": cloak elements integrity).
  var script = document.createElement("script");
  script.src = cloak + "/elements/v1/cloak.js";
  script.crossOrigin = "anonymous";
  script.onload = mount;
  script.onerror = function () {
    root.dataset.cloak = "error";
    showBanner("Cloak is not reachable at " + cloak + " (or its elements.allowed_origins does not name " +
               location.origin + "). Start it with scripts/serve.");
  };
  document.head.appendChild(script);
})();
