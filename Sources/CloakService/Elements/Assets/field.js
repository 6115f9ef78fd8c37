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
  const Frame = window.CloakFrame;

  const CSS_STATES = ["base", "focus", "invalid", "complete", "empty", "placeholder"];
  const SERVER_DEBOUNCE_MS = 250;

  // --- who this frame serves (frame-common.js) ---------------------------------------------------

  const fragment = Frame.fieldFragment();
  if (!fragment) return; // not embedded as Cloak's loader embeds it: show nothing, say nothing
  const formName = fragment.formName;
  const names = fragment.names;
  const toPage = Frame.pageSender(fragment.pageOrigin);

  // --- state ------------------------------------------------------------------------------------

  let schema = null;
  let ctx = null;
  let styles = Frame.NO_STYLES;
  let initialized = false;
  let readySent = false;
  const controller = Frame.controllerLink(fragment, toPage, onRegistered, onController);
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
    if (withholds(f, state)) {
      // One state for valid and invalid alike while withheld: any difference (another error, or
      // none, or the BIN's attributes) would tell whether the prefix passes its rules.
      const withheld = Object.assign({}, state, { isValid: false, bin: "", last4: "", validationErrors: [cardError(f)] });
      delete withheld.cardAttributes;
      return withheld;
    }
    // A last four shows a number that passes its rules (its `accept` rule may still refuse it).
    if (state.last4) release(f);
    return state;
  }

  /** Whether a card number's state is withheld (exposed): changed after a release, or still growing. */
  function withholds(f, state) {
    if (changedAfterRelease(f)) return true; // also forgets the release once the field is emptied
    if (f.focused && state.inputLength > 0) {
      const brand = schema.brands.filter(function (b) { return b.id === state.cardBrand; })[0] || schema.unknownBrand;
      return state.inputLength < Math.max.apply(null, brand.lengths);
    }
    return false;
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
    if (controller.registered()) controller.post("state", { name: f.name, state: exposed(f, state) });
    maybeReady();
  }

  /** Recomputes an input's state: here when the engine can, else from the server (debounced). */
  function recompute(f) {
    const value = f.input.value;
    const seq = ++f.seq;
    clearTimeout(f.timer);
    const state = R.fieldState(f.entry, ctx, value, { dirty: f.dirty, cardBrand: f.brand });
    if (state !== R.SERVER) {
      setState(f, withKnownAttributes(f, state));
      return lookUpAttributes(f);
    }
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

  // --- card attributes (issue 48) ---------------------------------------------------------------

  /**
   * What the server's BIN table says of each bin this frame asked about (GET
   * /elements/v1/bins/<bin>): bin → {attributes: the object, or null, once answered; answer: a
   * promise of them}. One request per bin, shared while in flight; a failed one is forgotten after
   * RETRY_BIN_MS (a later state with that bin asks again).
   */
  const bins = new Map();
  const RETRY_BIN_MS = 5000;

  /** The bin a card number's state shows (6 or 8 digits; the server answers no other), else null. */
  function binOf(f, state) {
    return f.entry.type === "cardNumber" && state && typeof state.bin === "string" &&
      /^[0-9]{6}([0-9]{2})?$/.test(state.bin) ? state.bin : null;
  }

  function askBin(bin) {
    const known = { attributes: undefined, answer: null };
    known.answer = fetch("/elements/v1/bins/" + bin, { credentials: "omit" }).then(function (res) {
      if (!res.ok) throw new Error("status " + res.status);
      return res.json();
    }).then(function (body) {
      const attributes = body ? body.cardAttributes : undefined;
      if (attributes !== null && (!attributes || typeof attributes !== "object" || Array.isArray(attributes))) {
        throw new Error("no cardAttributes");
      }
      known.attributes = attributes;
      return attributes;
    });
    known.answer.catch(function () {
      setTimeout(function () { if (bins.get(bin) === known) bins.delete(bin); }, RETRY_BIN_MS);
    });
    bins.set(bin, known);
    return known;
  }

  /** A state computed here, with its bin's attributes (and its accept verdict) when already known. */
  function withKnownAttributes(f, state) {
    const bin = binOf(f, state);
    const known = bin ? bins.get(bin) : null;
    return known && known.attributes ? R.withCardAttributes(f.entry, state, known.attributes) : state;
  }

  /**
   * The state computed here shows a bin (to the page and the controller: not while withheld) whose
   * attributes are not known yet: they are asked, and when they come while the input still has
   * that state, it is set again with them (a second change). An answer for a state the user has
   * typed past is dropped; a failure leaves the state without attributes. Only the bin the state
   * shows is sent, never more digits, and nothing when it shows none.
   */
  function lookUpAttributes(f) {
    const state = f.state;
    const bin = binOf(f, state);
    if (!bin || state.cardAttributes !== undefined || withholds(f, state)) return;
    const known = bins.get(bin) || askBin(bin);
    if (known.attributes !== undefined) return; // answered: nothing known of this bin
    known.answer.then(function (attributes) {
      if (f.state === state && attributes) setState(f, R.withCardAttributes(f.entry, state, attributes));
    }, function () { /* the state stays without attributes */ });
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

  /** The input's state and the page's styles on it (frame-common.js). */
  function paint(f) {
    Frame.paintInput(f.input, styles, f.state, showsInvalid(f), f.focused);
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
    if (readySent || !initialized || !controller.registered() || inputs.some(function (f) { return !f.state; })) return;
    readySent = true;
    const states = {};
    inputs.forEach(function (f) { states[f.name] = pageState(f); });
    toPage("ready", { states: states });
  }

  // --- the page ---------------------------------------------------------------------------------

  function onInit(data) {
    if (initialized) return;
    styles = Frame.pageStyles(data.css, CSS_STATES, function (state) {
      console.warn("Cloak: css." + state + " is not a style state; dropped");
    });
    const placeholders = data.placeholders && typeof data.placeholders === "object" ? data.placeholders : {};
    inputs.forEach(function (f, i) {
      const text = inputs.length === 1 ? data.placeholder : placeholders[f.name];
      if (typeof text === "string" && text) f.input.placeholder = text;
      if (inputs.length === 1 && typeof data.ariaLabel === "string" && data.ariaLabel) f.label.textContent = data.ariaLabel;
      paint(f);
      if (i === 0 && data.autoFocus === true) f.input.focus();
    });
    stylePlaceholders(styles.css.placeholder);
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

  // --- the controller (frame-common.js: controllerLink) ------------------------------------------

  /** The controller took this frame: it gets the states computed so far. */
  function onRegistered() {
    inputs.forEach(function (f) { if (f.state) controller.post("state", { name: f.name, state: exposed(f, f.state) }); });
    maybeReady();
  }

  function onController(data) {
    if (data.type === "collect" && controller.registered()) {
      const values = {};
      const refused = inputs.filter(changedAfterRelease).map(function (f) { return f.name; });
      if (refused.length) return controller.post("values", { req: data.req, refused: refused });
      inputs.forEach(function (f) { values[f.name] = f.input.value; release(f); });
      controller.post("values", { req: data.req, values: values });
    } else if (data.type === "linked") {
      const f = byName(data.name);
      if (!f || f.entry.type !== "cvc" || typeof f.entry.cardField !== "string") return;
      f.brand = typeof data.cardBrand === "string" ? data.cardBrand : undefined;
      if (!f.focused) reformat(f);
      recompute(f);
    }
  }

  Frame.listen(fragment.pageOrigin, onPage, controller);

  // --- start ------------------------------------------------------------------------------------

  Frame.fetchSchema(formName, toPage, function (body) {
    schema = body;
    if (!Frame.allowsPage(schema, fragment.pageOrigin)) return;
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
    Frame.announce(toPage, controller);
  });
})();
