/*
 * Cloak Elements: the field frame (field.html). Holds the inputs of one field (or of a card:
 * number, expiry, CVC, holder), computes their state with rules.js as the user types, tells the
 * page the state (never a value), and gives the values to the form's controller frame only,
 * Cloak's origin to Cloak's origin, when it collects them for a submission.
 *
 * Fragment: #form=<name>&id=<form instance>&origin=<page origin>&fields=<n1>,<n2>&key=<frame key>
 */
(function () {
  "use strict";
  const R = window.CloakRules;

  const CSS_STATES = ["base", "focus", "invalid", "complete", "empty", "placeholder"];
  const CSS_PROPERTY = new RegExp("^(color|background-color|font-(family|size|weight|style)|letter-spacing|" +
    "line-height|padding|text-(align|transform)|caret-color|border(-(top|right|bottom|left))?(-(color|style|width))?|" +
    "border-radius|border-(top|bottom)-(left|right)-radius)$");
  const CSS_FORBIDDEN = /url\(|expression\(|[;{}\\]/i;
  const REGISTER_EVERY_MS = 100;
  const REGISTER_FOR_MS = 10000;
  const SERVER_DEBOUNCE_MS = 250;

  // --- who this frame serves -------------------------------------------------------------------

  const { fragmentParams, decode, isOrigin } = window.CloakFrame;

  const params = fragmentParams();
  if (!params) return;
  const formName = decode(params.get("form"));
  const instance = params.get("id");
  const key = params.get("key");
  const pageOrigin = decode(params.get("origin"));
  const names = (params.get("fields") || "").split(",").map(decode);
  const ancestors = location.ancestorOrigins;
  if (!formName || formName === "." || formName === ".." || !/^[0-9a-f]{16}$/.test(instance || "") || !/^[A-Za-z0-9_-]{1,32}$/.test(key || "") ||
      !isOrigin(pageOrigin) || names.some(function (n) { return !n; }) || new Set(names).size !== names.length ||
      window.parent === window || (ancestors && ancestors[0] !== pageOrigin)) {
    return; // not embedded as Cloak's loader embeds it: show nothing, say nothing
  }

  function toPage(type, body) {
    window.parent.postMessage(Object.assign({ cloak: 1, type: type }, body), pageOrigin);
  }

  // --- state ------------------------------------------------------------------------------------

  let schema = null;
  let ctx = null;
  let css = {};
  let cssProperties = [];
  let initialized = false;
  let registered = false;
  let readySent = false;
  let controller = null;
  /**
   * One record per input: {name, entry, input, dirty, touched, focused, state, seq, timer, brand},
   * and for a masked input {shown, selection, composing}.
   */
  const inputs = [];

  function byName(name) {
    for (const f of inputs) if (f.name === name) return f;
    return null;
  }

  /**
   * The state as the page (and the form's change event) sees it. A card number's validity (with
   * its `bin` and `last4`) waits until the input loses focus, or the number reaches its brand's
   * longest length: a number passes through several valid lengths as it is typed (a Visa is
   * valid at 13 and 16 digits), and whether each prefix passes Luhn, or its last four, put
   * together with the BIN, would narrow the digits in between. The page learns one validity and
   * one last four per number.
   */
  function exposed(f, state) {
    if (!state || f.entry.type !== "cardNumber") return state;
    const related = changedAfterRelease(f); // also forgets the release once the field is emptied
    // One state for valid and invalid alike while withheld: any difference (another error, or
    // none) would tell whether the prefix passes its rules.
    const withheld = Object.assign({}, state, { isValid: false, bin: "", last4: "", validationErrors: [cardError(f)] });
    if (related) return withheld;
    if (f.focused && state.inputLength > 0) {
      const brand = schema.brands.filter(function (b) { return b.id === state.cardBrand; })[0] || schema.unknownBrand;
      if (state.inputLength < Math.max.apply(null, brand.lengths)) return withheld;
    }
    if (state.isValid && state.last4) release(f);
    return state;
  }

  /** The error a card number's withheld state names: its payment-card rule's. */
  function cardError(f) {
    const rule = (f.entry.rules || []).filter(function (r) { return r && r.kind === "paymentCard"; })[0];
    return rule && typeof rule.error === "string" ? rule.error : "CARD_NUMBER_VALIDATION_ERROR";
  }

  /**
   * One number, one release. Once a card number's last four left the frame (in a state, or its
   * value in a submission, whose answer may be a validate state or an alias keeping the last four),
   * a longer or shorter version of the same digits releases nothing more until the field is
   * emptied: else a page could blur the field, or submit, at every valid length of one typed
   * number and put its digits together. Each release is remembered as the digits released.
   */
  function digitsOf(f) { return f.input.value.replace(/[^0-9]/g, ""); }

  function release(f) { if (f.entry.type === "cardNumber") f.released = digitsOf(f); }

  function changedAfterRelease(f) {
    const now = digitsOf(f);
    if (!now) f.released = null;
    const before = f.released;
    return !!before && !!now && now !== before && (now.indexOf(before) === 0 || before.indexOf(now) === 0);
  }

  function pageState(f) { return Object.assign({}, exposed(f, f.state), { isFocused: f.focused }); }

  /** Shown as invalid once the user typed and then left the input (or it was filled without focus). */
  function showsInvalid(f) {
    return !!f.state && !f.state.isValid && f.dirty && (f.touched || !f.focused);
  }

  function setState(f, state) {
    f.state = state;
    paint(f);
    if (readySent) toPage("change", { name: f.name, state: pageState(f) });
    if (registered) toController("state", { name: f.name, state: exposed(f, state) });
    maybeReady();
  }

  /** Recomputes an input's state: here when the engine can, else from the server (debounced). */
  function recompute(f) {
    const value = f.input.value;
    const seq = ++f.seq;
    clearTimeout(f.timer);
    const state = R.fieldState(f.entry, ctx, value, { dirty: f.dirty, cardBrand: f.brand });
    if (state !== R.SERVER) return setState(f, state);
    f.timer = setTimeout(function () { askServer(f, seq, value, 0); }, SERVER_DEBOUNCE_MS);
  }

  /** POST /forms/<form>/validate for this one input; a stale answer is dropped, a failure retried twice. */
  function askServer(f, seq, value, attempt) {
    const fields = {};
    if (f.dirty) fields[f.name] = value; // an untouched field is asked as absent
    fetch("/forms/" + encodeURIComponent(formName) + "/validate", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ fields: fields }),
      credentials: "omit", cache: "no-store",
    }).then(function (res) {
      return res.json().then(function (body) {
        const state = res.ok && body && body.fields && body.fields[f.name];
        if (!state || typeof state !== "object") throw new Error("no state");
        return state;
      });
    }).then(function (state) {
      if (seq === f.seq) setState(f, state); // a later input already asked again
    }).catch(function () {
      if (seq !== f.seq) return;
      if (attempt < 2) {
        f.timer = setTimeout(function () { askServer(f, seq, value, attempt + 1); }, 1000 * (attempt + 1));
      } else {
        toPage("error", { name: f.name, code: "validation_unavailable", message: "Cloak could not check this field" });
      }
    });
  }

  /** Lays the input out in its pattern ("4111 1111 …", "12/30") when that keeps its raw text. */
  function reformat(f) {
    const text = R.format(f.entry, ctx, f.input.value, f.brand);
    if (text !== null && text !== f.input.value) f.input.value = text;
  }

  /**
   * A masked input, after the browser made an edit: the edit is worked out from the text the
   * frame showed (`shown`), the selection before it and the caret after it, and made again in
   * the mask (InputMask.edit's steps): refused characters dropped, literals filled in, nothing
   * past the end, the caret right after what the edit inserted. A mask the browser cannot read as
   * the server does leaves the text as typed (the server masks it when it is sent).
   */
  function remask(f) {
    const input = f.input;
    const selection = f.selection;
    f.selection = null;
    if (!f.entry.mask || input.value === f.shown) return;
    const change = R.changeOf(f.shown, input.value, selection, input.selectionStart);
    const edited = R.editMask(f.entry, f.shown, change.start, change.end, change.inserted);
    if (edited === null) {
      f.shown = input.value;
      return;
    }
    f.shown = edited.text;
    if (input.value !== edited.text) input.value = edited.text;
    input.setSelectionRange(edited.caret, edited.caret);
  }

  // --- styling (CSSOM only: the frame's CSP has no 'unsafe-inline') -----------------------------

  function cleanCss(given) {
    const out = {};
    if (!given || typeof given !== "object") return out;
    Object.keys(given).forEach(function (state) {
      const map = given[state];
      if (CSS_STATES.indexOf(state) < 0 || !map || typeof map !== "object") {
        console.warn("Cloak: css." + state + " is not a style state; dropped");
        return;
      }
      out[state] = {};
      Object.keys(map).forEach(function (prop) {
        const name = prop.replace(/[A-Z]/g, function (c) { return "-" + c.toLowerCase(); });
        const value = map[prop];
        if (!CSS_PROPERTY.test(name)) console.warn("Cloak: css." + state + ": property \"" + prop + "\" is not allowed; dropped");
        else if (typeof value !== "string" || CSS_FORBIDDEN.test(value)) console.warn("Cloak: css." + state + "." + prop + ": value not allowed; dropped");
        else out[state][name] = value;
      });
    });
    return out;
  }

  /** Base, then empty / invalid / complete, then focus: later layers win. */
  function paint(f) {
    const s = f.state;
    const invalid = showsInvalid(f);
    const complete = !!s && s.isValid && !s.isEmpty;
    const empty = !s || s.isEmpty;
    f.input.setAttribute("aria-invalid", invalid ? "true" : "false");
    f.input.classList.toggle("cloak-invalid", invalid);
    f.input.classList.toggle("cloak-complete", complete);
    f.input.classList.toggle("cloak-empty", empty);
    const layers = [css.base, empty && css.empty, invalid && css.invalid, complete && css.complete, f.focused && css.focus];
    const final = {};
    layers.forEach(function (layer) { if (layer) Object.assign(final, layer); });
    cssProperties.forEach(function (p) {
      if (final[p] !== undefined) f.input.style.setProperty(p, final[p]);
      else f.input.style.removeProperty(p);
    });
  }

  function stylePlaceholders(map) {
    if (!map || Object.keys(map).length === 0) return;
    let sheet = null;
    try {
      sheet = new CSSStyleSheet();
      document.adoptedStyleSheets = document.adoptedStyleSheets.concat([sheet]);
    } catch (e) {
      sheet = null;
      for (const s of document.styleSheets) if (s.href && /\/frame\.css$/.test(s.href)) sheet = s;
    }
    if (!sheet) return;
    const style = sheet.cssRules[sheet.insertRule("input::placeholder {}", sheet.cssRules.length)].style;
    Object.keys(map).forEach(function (p) { style.setProperty(p, map[p]); });
  }

  function loadFonts(list) {
    if (!Array.isArray(list)) return;
    const loopback = location.protocol === "http:" && /^(localhost|127\.0\.0\.1|\[::1\])$/.test(location.hostname);
    list.slice(0, 8).forEach(function (text) {
      let url = null;
      try { url = new URL(String(text)); } catch (e) { url = null; }
      const scheme = url && (url.protocol === "https:" || (loopback && url.protocol === location.protocol));
      if (!scheme || schema.fontOrigins.indexOf(url.origin) < 0) {
        console.warn("Cloak: fonts: " + (url ? url.origin : "an invalid URL") + " is not in elements.font_origins; ignored");
        return;
      }
      const link = document.createElement("link");
      link.rel = "stylesheet";
      link.href = url.href;
      document.head.appendChild(link);
    });
  }

  // --- the inputs -------------------------------------------------------------------------------

  function build() {
    const root = document.createElement("div");
    root.className = names.length > 1 ? "cloak-fields cloak-card" : "cloak-fields";
    names.forEach(function (name, i) {
      const entry = schema.fields.filter(function (e) { return e.name === name; })[0];
      const row = document.createElement("div");
      row.className = "cloak-row cloak-type-" + entry.type;
      const label = document.createElement("label");
      label.className = "cloak-visually-hidden";
      label.htmlFor = "cloak-input-" + i;
      label.textContent = entry.title || name;
      const input = document.createElement("input");
      input.id = "cloak-input-" + i;
      input.type = "text";
      input.autocomplete = entry.autocomplete || "off";
      if (entry.inputmode) input.inputMode = entry.inputmode;
      input.spellcheck = false;
      input.setAttribute("autocorrect", "off");
      input.setAttribute("autocapitalize", entry.type === "cardHolderName" ? "words" : "off");
      input.setAttribute("aria-invalid", "false");
      if (entry.required) input.setAttribute("aria-required", "true");
      row.appendChild(label);
      row.appendChild(input);
      root.appendChild(row);
      const f = {
        name: name, entry: entry, input: input, label: label, dirty: false, touched: false, focused: false,
        state: null, seq: 0, timer: 0, brand: undefined, shown: "", selection: null, composing: false,
      };
      inputs.push(f);
      // A masked input remembers the selection an edit replaces (an IME's, from its start).
      input.addEventListener("beforeinput", function () {
        if (!f.composing) f.selection = { start: input.selectionStart, end: input.selectionEnd };
      });
      input.addEventListener("compositionstart", function () {
        f.composing = true;
        f.selection = { start: input.selectionStart, end: input.selectionEnd };
      });
      input.addEventListener("compositionend", function () {
        f.composing = false;
        if (!f.entry.mask || input.value === f.shown) return;
        remask(f);
        recompute(f);
      });
      input.addEventListener("input", function (event) {
        f.dirty = true;
        if (!event.isComposing && !f.composing) remask(f);
        const end = input.value.length;
        // Never under the caret, never inside an IME composition.
        if (!event.isComposing && input.selectionStart === end && input.selectionEnd === end) reformat(f);
        recompute(f);
      });
      input.addEventListener("focus", function () {
        f.focused = true;
        paint(f);
        if (readySent) toPage("focus", { name: name });
        if (readySent && f.state) toPage("change", { name: name, state: pageState(f) });
      });
      input.addEventListener("blur", function () {
        f.focused = false;
        if (f.dirty) f.touched = true;
        reformat(f);
        if (readySent) toPage("blur", { name: name });
        recompute(f);
      });
      input.addEventListener("keydown", function (event) {
        if (event.key === "Enter" && !event.isComposing && readySent) toPage("enter", { name: name });
      });
    });
    document.body.appendChild(root);
  }

  function maybeReady() {
    if (readySent || !initialized || !registered || inputs.some(function (f) { return !f.state; })) return;
    readySent = true;
    const states = {};
    inputs.forEach(function (f) { states[f.name] = pageState(f); });
    toPage("ready", { states: states });
  }

  // --- the page ---------------------------------------------------------------------------------

  function onInit(data) {
    if (initialized) return;
    css = cleanCss(data.css);
    const seen = {};
    Object.keys(css).forEach(function (state) {
      if (state !== "placeholder") Object.keys(css[state]).forEach(function (p) { seen[p] = true; });
    });
    cssProperties = Object.keys(seen);
    const placeholders = data.placeholders && typeof data.placeholders === "object" ? data.placeholders : {};
    inputs.forEach(function (f, i) {
      const text = inputs.length === 1 ? data.placeholder : placeholders[f.name];
      if (typeof text === "string" && text) f.input.placeholder = text;
      if (inputs.length === 1 && typeof data.ariaLabel === "string" && data.ariaLabel) f.label.textContent = data.ariaLabel;
      paint(f);
      if (i === 0 && data.autoFocus === true) f.input.focus();
    });
    stylePlaceholders(css.placeholder);
    loadFonts(data.fonts);
    initialized = true;
    maybeReady();
  }

  function onPage(data) {
    if (data.type === "init") onInit(data);
    else if (data.type === "clear") {
      inputs.forEach(function (f) { f.input.value = ""; f.shown = ""; recompute(f); });
    } else if (data.type === "focus" && inputs.length) inputs[0].input.focus();
  }

  // --- the controller (same origin, found by name among the page's frames) ----------------------

  function findController() {
    try { return window.parent.frames["cloak-controller-" + instance] || null; } catch (e) { return null; }
  }

  function toController(type, body) {
    if (controller) controller.postMessage(Object.assign({ cloak: 1, type: type }, body), location.origin);
  }

  function register() {
    const started = Date.now();
    (function attempt() {
      if (registered) return;
      if (Date.now() - started > REGISTER_FOR_MS) {
        toPage("error", { code: "controller_unreachable", message: "Cloak's form controller did not answer" });
        return;
      }
      controller = findController();
      toController("register", { key: key, form: formName, names: names });
      setTimeout(attempt, REGISTER_EVERY_MS);
    })();
  }

  function onController(data) {
    if (data.type === "registered" && data.key === key && data.form === formName && !registered) {
      registered = true;
      inputs.forEach(function (f) { if (f.state) toController("state", { name: f.name, state: exposed(f, f.state) }); });
      maybeReady();
    } else if (data.type === "collect" && registered) {
      const values = {};
      const refused = inputs.filter(changedAfterRelease).map(function (f) { return f.name; });
      if (refused.length) return toController("values", { req: data.req, refused: refused });
      inputs.forEach(function (f) { values[f.name] = f.input.value; release(f); });
      toController("values", { req: data.req, values: values });
    } else if (data.type === "linked") {
      const f = byName(data.name);
      if (!f || f.entry.type !== "cvc" || typeof f.entry.cardField !== "string") return;
      f.brand = typeof data.cardBrand === "string" ? data.cardBrand : undefined;
      if (!f.focused) reformat(f);
      recompute(f);
    }
  }

  window.addEventListener("message", function (event) {
    const data = event.data;
    if (!data || typeof data !== "object" || data.cloak !== 1 || typeof data.type !== "string") return;
    if (event.source === window.parent && event.origin === pageOrigin) onPage(data);
    else if (controller && event.source === controller && event.origin === location.origin) onController(data);
  });

  // --- start ------------------------------------------------------------------------------------

  fetch("/elements/v1/forms/" + encodeURIComponent(formName), { credentials: "omit" }).then(function (res) {
    if (!res.ok) throw res.status;
    return res.json();
  }).then(function (body) {
    schema = body;
    if (!Array.isArray(schema.allowedOrigins) || schema.allowedOrigins.indexOf(pageOrigin) < 0) return;
    const known = schema.fields.map(function (e) { return e.name; });
    const unknown = names.filter(function (n) { return known.indexOf(n) < 0; });
    if (unknown.length) {
      toPage("error", { code: "unknown_field", message: "form \"" + formName + "\" has no field \"" + unknown[0] + "\"" });
      return;
    }
    const files = schema.fields.filter(function (e) { return e.type === "file" && names.indexOf(e.name) >= 0; });
    if (files.length) {
      toPage("error", { code: "wrong_field_type", message: "field \"" + files[0].name + "\" is a file field (file.html)" });
      return;
    }
    if (!Array.isArray(schema.fontOrigins)) schema.fontOrigins = [];
    ctx = R.context(schema);
    build();
    inputs.forEach(recompute);
    toPage("hello");
    let height = -1;
    new ResizeObserver(function () {
      const h = Math.ceil(document.documentElement.getBoundingClientRect().height);
      if (h !== height) { height = h; toPage("resize", { height: h }); }
    }).observe(document.documentElement);
    register();
  }).catch(function (status) {
    toPage("error", status === 404
      ? { code: "unknown_form", message: "Cloak has no form \"" + formName + "\"" }
      : { code: "schema_unavailable", message: "Cloak's form schema could not be loaded" });
  });
})();
