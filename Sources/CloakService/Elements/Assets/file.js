/*
 * Cloak Elements: the file field frame (file.html). Holds the `<input type=file>` of one `file`
 * field, judges the chosen files by the server's rules (CloakCore/Files: FileSniffer,
 * FileInspection.verdict, FileFieldState, mirrored below) reading only each file's size, its
 * first KiB and its last 64 KiB + 22 bytes (Blob.slice: never the whole file), and tells the page
 * the field's state: never a byte, never a file name. The File objects go to the form's
 * controller frame only, Cloak's origin to Cloak's origin, when it collects them for a submission.
 *
 * Fragment: #form=<name>&id=<form instance>&origin=<page origin>&fields=<name>&key=<frame key>
 */
(function () {
  "use strict";

  const REGISTER_EVERY_MS = 100;
  const REGISTER_FOR_MS = 10000;
  const CSS_STATES = ["base", "focus", "invalid", "complete", "empty"];
  const CSS_PROPERTY = new RegExp("^(color|background-color|font-(family|size|weight|style)|letter-spacing|" +
    "line-height|padding|text-(align|transform)|caret-color|border(-(top|right|bottom|left))?(-(color|style|width))?|" +
    "border-radius|border-(top|bottom)-(left|right)-radius)$");
  const CSS_FORBIDDEN = /url\(|expression\(|[;{}\\]/i;
  /** An `accept` attribute: media types (`image/*` too) and extensions, comma separated. */
  const ACCEPT = /^\s*[A-Za-z0-9.+/*_-]+(\s*,\s*[A-Za-z0-9.+/*_-]+)*\s*$/;

  // --- who this frame serves (frame-common.js) ---------------------------------------------------

  const { fragmentParams, decode, isOrigin } = window.CloakFrame;

  const params = fragmentParams();
  if (!params) return;
  const formName = decode(params.get("form"));
  const instance = params.get("id");
  const key = params.get("key");
  const pageOrigin = decode(params.get("origin"));
  const names = (params.get("fields") || "").split(",").map(decode);
  const name = names[0];
  const ancestors = location.ancestorOrigins;
  if (!formName || formName === "." || formName === ".." || !/^[0-9a-f]{16}$/.test(instance || "") ||
      !/^[A-Za-z0-9_-]{1,32}$/.test(key || "") || !isOrigin(pageOrigin) || names.length !== 1 || !name ||
      window.parent === window || (ancestors && ancestors[0] !== pageOrigin)) {
    return; // not embedded as Cloak's loader embeds it: show nothing, say nothing
  }

  function toPage(type, body) {
    window.parent.postMessage(Object.assign({ cloak: 1, type: type }, body), pageOrigin);
  }

  // --- FileSniffer, FileInspection.verdict and FileFieldState (CloakCore/Files), mirrored ---------

  const PREFIX_LENGTH = 1024; // FileSniffer.prefixLength
  const TAIL_LENGTH = 22 + 65535; // FileSniffer.tailLength
  const ERROR = {
    empty: "FILE_EMPTY_VALIDATION_ERROR", tooLarge: "FILE_SIZE_VALIDATION_ERROR",
    typeNotAllowed: "FILE_TYPE_VALIDATION_ERROR", executable: "FILE_EXECUTABLE_VALIDATION_ERROR",
    polyglot: "FILE_POLYGLOT_VALIDATION_ERROR", tooManyFiles: "FILE_COUNT_VALIDATION_ERROR",
    required: "FILE_REQUIRED_VALIDATION_ERROR",
  };
  const ascii = function (text) { return Array.from(text, function (c) { return c.charCodeAt(0); }); };
  const ELF = [0x7F, 0x45, 0x4C, 0x46];
  const PDF = ascii("%PDF-");
  const ZIP_LOCAL = [0x50, 0x4B, 0x03, 0x04];
  const ZIP_END = [0x50, 0x4B, 0x05, 0x06];
  /** Executables, scripts and archives: refused whatever the field allows. */
  const EXECUTABLES = [
    ELF, [0x4D, 0x5A], [0xFE, 0xED, 0xFA, 0xCE], [0xFE, 0xED, 0xFA, 0xCF], [0xCE, 0xFA, 0xED, 0xFE],
    [0xCF, 0xFA, 0xED, 0xFE], [0xCA, 0xFE, 0xBA, 0xBE], ascii("#!"), ZIP_LOCAL, ZIP_END, [0x1F, 0x8B], ascii("Rar!"),
    [0x37, 0x7A, 0xBC, 0xAF, 0x27, 0x1C], [0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1],
  ];
  const HEIC_BRANDS = ["heic", "heix", "heim", "heis", "mif1", "msf1"].map(ascii);

  function startsWith(b, signature, at) {
    const offset = at || 0;
    if (b.length < offset + signature.length) return false;
    for (let i = 0; i < signature.length; i++) if (b[offset + i] !== signature[i]) return false;
    return true;
  }

  function contains(b, signature, from) {
    for (let s = from || 0; s + signature.length <= b.length; s++) {
      if (b[s] === signature[0] && startsWith(b, signature, s)) return true;
    }
    return false;
  }

  /** FileSniffer.verdict: {executable: true}, {media: "<type>"} or {} (unknown). */
  function sniff(b) {
    if (EXECUTABLES.some(function (sig) { return startsWith(b, sig); })) return { executable: true };
    if (startsWith(b, [0xFF, 0xD8, 0xFF])) return { media: "image/jpeg" };
    if (startsWith(b, [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])) return { media: "image/png" };
    if (startsWith(b, ascii("GIF87a")) || startsWith(b, ascii("GIF89a"))) return { media: "image/gif" };
    if (startsWith(b, ascii("RIFF")) && startsWith(b, ascii("WEBP"), 8)) return { media: "image/webp" };
    if (startsWith(b, ascii("ftyp"), 4) && HEIC_BRANDS.some(function (brand) { return startsWith(b, brand, 8); })) {
      return { media: "image/heic" };
    }
    if (startsWith(b, [0x49, 0x49, 0x2A, 0x00]) || startsWith(b, [0x4D, 0x4D, 0x00, 0x2A])) return { media: "image/tiff" };
    if (startsWith(b, PDF)) return { media: "application/pdf" };
    return {};
  }

  /** FileSniffer.isPolyglot. */
  function isPolyglot(prefix, tail, type) {
    if (type !== "application/pdf" && contains(prefix, PDF)) return true;
    if (contains(tail, ZIP_END) || contains(tail, ZIP_LOCAL)) return true;
    return contains(prefix, ELF, 1);
  }

  /** FileInspection.verdict for one inspected file {bytes, prefix, tail} (prefix null: unreadable). */
  function verdict(file, rules) {
    if (file.bytes === 0) return [ERROR.empty];
    const errors = [];
    if (file.bytes > rules.maxBytes) errors.push(ERROR.tooLarge);
    const sniffed = file.prefix ? sniff(file.prefix) : {};
    if (sniffed.executable) {
      errors.push(ERROR.executable);
    } else if (!sniffed.media) {
      errors.push(ERROR.typeNotAllowed);
    } else {
      if (rules.types.indexOf(sniffed.media) < 0) errors.push(ERROR.typeNotAllowed);
      if (isPolyglot(file.prefix, file.tail, sniffed.media)) errors.push(ERROR.polyglot);
    }
    return errors;
  }

  /** FileFieldState: each file's errors (once each, in order), then the field's own; keys in the server's order. */
  function fieldState(files, rules) {
    const errors = [];
    files.forEach(function (f) {
      verdict(f, rules).forEach(function (e) { if (errors.indexOf(e) < 0) errors.push(e); });
    });
    if (files.length > rules.maxFiles) errors.push(ERROR.tooManyFiles);
    if (files.length === 0 && rules.required) errors.push(ERROR.required);
    const first = files[0];
    const media = first && first.prefix ? sniff(first.prefix).media : undefined;
    return {
      isValid: errors.length === 0,
      isEmpty: files.length === 0,
      validationErrors: errors,
      fileCount: files.length,
      bytes: files.reduce(function (sum, f) { return sum + f.bytes; }, 0),
      mediaType: media || null,
    };
  }

  /** A file's size, first KiB and last 64 KiB + 22 bytes (FileInspection keeps nothing more). */
  function inspect(file) {
    const size = file.size;
    if (size === 0) return Promise.resolve({ bytes: 0, prefix: new Uint8Array(0), tail: new Uint8Array(0) });
    return Promise.all([
      file.slice(0, PREFIX_LENGTH).arrayBuffer(),
      file.slice(Math.max(0, size - TAIL_LENGTH), size).arrayBuffer(),
    ]).then(function (read) {
      return { bytes: size, prefix: new Uint8Array(read[0]), tail: new Uint8Array(read[1]) };
    }, function () {
      return { bytes: size, prefix: null, tail: null, unreadable: true };
    });
  }

  // --- state ------------------------------------------------------------------------------------

  let entry = null;
  let rules = null;
  let input = null;
  let label = null;
  let css = {};
  let cssProperties = [];
  let initialized = false;
  let registered = false;
  let readySent = false;
  let controller = null;
  let dirty = false;
  let focused = false;
  /** The files the latest state is of, and that state: what a submission takes together. */
  let chosen = { files: [], state: null };
  let seq = 0;
  let settled = Promise.resolve();

  function setState(state) {
    chosen.state = state;
    paint();
    if (readySent) toPage("change", { name: name, state: state });
    if (registered) toController("state", { name: name, state: state });
    maybeReady();
  }

  /** Judges the files now in the input; a later choice makes an earlier judgement stale. */
  function recompute() {
    const files = Array.prototype.slice.call(input.files || []);
    const mine = ++seq;
    settled = Promise.all(files.map(inspect)).then(function (inspected) {
      if (mine !== seq) return;
      if (inspected.some(function (f) { return f.unreadable; })) {
        toPage("error", { name: name, code: "file_unreadable", message: "a chosen file could not be read" });
      }
      chosen = { files: files, state: null };
      setState(fieldState(inspected, rules));
    });
  }

  /** Calls `then` once the state is that of the files in the input. */
  function whenSettled(then) {
    const at = seq;
    settled.then(function () { if (at === seq) then(); else whenSettled(then); });
  }

  // --- styling (CSSOM only: the frame's CSP has no 'unsafe-inline') -----------------------------

  function cleanCss(given) {
    const out = {};
    if (!given || typeof given !== "object") return out;
    Object.keys(given).forEach(function (state) {
      const map = given[state];
      if (CSS_STATES.indexOf(state) < 0 || !map || typeof map !== "object") {
        if (state !== "placeholder") console.warn("Cloak: css." + state + " is not a style state of a file field; dropped");
        return;
      }
      out[state] = {};
      Object.keys(map).forEach(function (prop) {
        const property = prop.replace(/[A-Z]/g, function (c) { return "-" + c.toLowerCase(); });
        const value = map[prop];
        if (!CSS_PROPERTY.test(property)) console.warn("Cloak: css." + state + ": property \"" + prop + "\" is not allowed; dropped");
        else if (typeof value !== "string" || CSS_FORBIDDEN.test(value)) console.warn("Cloak: css." + state + "." + prop + ": value not allowed; dropped");
        else out[state][property] = value;
      });
    });
    return out;
  }

  /** Base, then empty / invalid / complete, then focus: later layers win. */
  function paint() {
    const s = chosen.state;
    const invalid = !!s && !s.isValid && dirty;
    const complete = !!s && s.isValid && !s.isEmpty;
    const empty = !s || s.isEmpty;
    input.setAttribute("aria-invalid", invalid ? "true" : "false");
    input.classList.toggle("cloak-invalid", invalid);
    input.classList.toggle("cloak-complete", complete);
    input.classList.toggle("cloak-empty", empty);
    const final = {};
    [css.base, empty && css.empty, invalid && css.invalid, complete && css.complete, focused && css.focus]
      .forEach(function (layer) { if (layer) Object.assign(final, layer); });
    cssProperties.forEach(function (p) {
      if (final[p] !== undefined) input.style.setProperty(p, final[p]);
      else input.style.removeProperty(p);
    });
  }

  // --- the input --------------------------------------------------------------------------------

  function build() {
    const root = document.createElement("div");
    root.className = "cloak-fields cloak-file";
    const row = document.createElement("div");
    row.className = "cloak-row cloak-type-file";
    label = document.createElement("label");
    label.className = "cloak-visually-hidden";
    label.htmlFor = "cloak-input-0";
    label.textContent = entry.title || name;
    input = document.createElement("input");
    input.id = "cloak-input-0";
    input.type = "file";
    input.accept = rules.types.join(",");
    input.multiple = rules.maxFiles > 1;
    input.setAttribute("aria-invalid", "false");
    if (entry.required === true || rules.required) input.setAttribute("aria-required", "true");
    row.appendChild(label);
    row.appendChild(input);
    root.appendChild(row);
    input.addEventListener("change", function () {
      dirty = true;
      recompute();
    });
    input.addEventListener("focus", function () {
      focused = true;
      paint();
      if (readySent) toPage("focus", { name: name });
    });
    input.addEventListener("blur", function () {
      focused = false;
      paint();
      if (readySent) toPage("blur", { name: name });
    });
    document.body.appendChild(root);
  }

  function maybeReady() {
    if (readySent || !initialized || !registered || !chosen.state) return;
    readySent = true;
    const states = {};
    states[name] = chosen.state;
    toPage("ready", { states: states });
  }

  // --- the page ---------------------------------------------------------------------------------

  function onInit(data) {
    if (initialized) return;
    css = cleanCss(data.css);
    const seen = {};
    Object.keys(css).forEach(function (state) { Object.keys(css[state]).forEach(function (p) { seen[p] = true; }); });
    cssProperties = Object.keys(seen);
    if (typeof data.ariaLabel === "string" && data.ariaLabel) label.textContent = data.ariaLabel;
    if (typeof data.accept === "string" && data.accept) {
      if (data.accept.length <= 512 && ACCEPT.test(data.accept)) input.accept = data.accept;
      else console.warn("Cloak: file(): accept is not a list of media types and extensions; ignored");
    }
    // A field that takes one file never offers several (the count would refuse them).
    if (data.multiple === false || rules.maxFiles <= 1) input.multiple = false;
    else if (data.multiple === true) input.multiple = true;
    paint();
    if (data.autoFocus === true) input.focus();
    initialized = true;
    maybeReady();
  }

  function onPage(data) {
    if (!input) return;
    if (data.type === "init") onInit(data);
    else if (data.type === "clear") {
      input.value = "";
      recompute();
    } else if (data.type === "focus") input.focus();
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
      if (chosen.state) toController("state", { name: name, state: chosen.state });
      maybeReady();
    } else if (data.type === "collect" && registered) {
      const req = data.req;
      // The files and the state judged of them, together: the controller refuses invalid files.
      whenSettled(function () {
        const files = {};
        const states = {};
        files[name] = chosen.files.slice();
        states[name] = chosen.state;
        toController("values", { req: req, values: {}, files: files, states: states });
      });
    }
  }

  window.addEventListener("message", function (event) {
    const data = event.data;
    if (!data || typeof data !== "object" || data.cloak !== 1 || typeof data.type !== "string") return;
    if (event.source === window.parent && event.origin === pageOrigin) onPage(data);
    else if (controller && event.source === controller && event.origin === location.origin) onController(data);
  });

  // --- start ------------------------------------------------------------------------------------

  /** The field's rules from the schema ({maxBytes, types, maxFiles, required}), or null. */
  function rulesOf(e) {
    const f = e && e.type === "file" ? e.file : null;
    if (!f || typeof f !== "object" || typeof f.maxBytes !== "number" || typeof f.maxFiles !== "number" ||
        !Array.isArray(f.types)) {
      return null;
    }
    return { maxBytes: f.maxBytes, types: f.types.filter(function (t) { return typeof t === "string"; }),
             maxFiles: f.maxFiles, required: f.required === true };
  }

  fetch("/elements/v1/forms/" + encodeURIComponent(formName), { credentials: "omit" }).then(function (res) {
    if (!res.ok) throw res.status;
    return res.json();
  }).then(function (schema) {
    if (!Array.isArray(schema.allowedOrigins) || schema.allowedOrigins.indexOf(pageOrigin) < 0) return;
    entry = (schema.fields || []).filter(function (e) { return e && e.name === name; })[0] || null;
    if (!entry) {
      toPage("error", { code: "unknown_field", message: "form \"" + formName + "\" has no field \"" + name + "\"" });
      return;
    }
    rules = rulesOf(entry);
    if (!rules) {
      toPage("error", { code: "wrong_field_type", message: "field \"" + name + "\" is not a file field" });
      return;
    }
    build();
    recompute();
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
