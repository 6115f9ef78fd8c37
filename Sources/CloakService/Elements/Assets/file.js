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
  const Frame = window.CloakFrame;

  const CSS_STATES = ["base", "focus", "invalid", "complete", "empty"];
  /** An `accept` attribute: media types (`image/*` too) and extensions, comma separated. */
  const ACCEPT = /^\s*[A-Za-z0-9.+/*_-]+(\s*,\s*[A-Za-z0-9.+/*_-]+)*\s*$/;

  // --- who this frame serves (frame-common.js) ---------------------------------------------------

  const fragment = Frame.fieldFragment();
  // Not embedded as Cloak's loader embeds it (one field): show nothing, say nothing.
  if (!fragment || fragment.names.length !== 1) return;
  const formName = fragment.formName;
  const name = fragment.names[0];
  const toPage = Frame.pageSender(fragment.pageOrigin);

  // --- FileSniffer, FileInspection.verdict and FileFieldState (CloakCore/Files), mirrored ---------

  const PREFIX_LENGTH = 1024; // FileSniffer.prefixLength
  const TAIL_LENGTH = 22 + 65535; // FileSniffer.tailLength
  const LARGEST_MAX_BYTES = 64 * 1024 * 1024; // FileRules.largestMaxBytes
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

  /** FileInspection.hasExecutablePastStart: 7F 45 4C 46, class 1|2, byte order 1|2, version 1, past byte 0. */
  function hasELFIdent(b) {
    for (let s = b.indexOf(0x7F, 1); s >= 0 && s + 7 <= b.length; s = b.indexOf(0x7F, s + 1)) {
      if (startsWith(b, ELF, s) && (b[s + 4] === 1 || b[s + 4] === 2) && (b[s + 5] === 1 || b[s + 5] === 2) && b[s + 6] === 1) {
        return true;
      }
    }
    return false;
  }

  /** FileSniffer.isPolyglot. */
  function isPolyglot(prefix, tail, type, elfPastStart) {
    if (type !== "application/pdf" && contains(prefix, PDF)) return true;
    if (contains(tail, ZIP_END) || contains(tail, ZIP_LOCAL)) return true;
    return elfPastStart === true;
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
      if (isPolyglot(file.prefix, file.tail, sniffed.media, file.elfPastStart)) errors.push(ERROR.polyglot);
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

  /**
   * A file's size, first KiB, last 64 KiB + 22 bytes, and whether an ELF header sits anywhere
   * past its start (FileInspection scans the whole file as it streams; a file larger than any
   * field allows is too large whatever it holds, and is not read whole).
   */
  function inspect(file) {
    const size = file.size;
    if (size === 0) return Promise.resolve({ bytes: 0, prefix: new Uint8Array(0), tail: new Uint8Array(0) });
    const whole = size <= LARGEST_MAX_BYTES;
    return Promise.all([
      file.slice(0, whole ? size : PREFIX_LENGTH).arrayBuffer(),
      file.slice(Math.max(0, size - TAIL_LENGTH), size).arrayBuffer(),
    ]).then(function (read) {
      const head = new Uint8Array(read[0]);
      return {
        bytes: size, prefix: head.subarray(0, PREFIX_LENGTH), tail: new Uint8Array(read[1]),
        elfPastStart: whole && hasELFIdent(head),
      };
    }, function () {
      return { bytes: size, prefix: null, tail: null, unreadable: true };
    });
  }

  // --- state ------------------------------------------------------------------------------------

  let entry = null;
  let rules = null;
  let input = null;
  let label = null;
  let styles = Frame.NO_STYLES;
  let initialized = false;
  let readySent = false;
  const controller = Frame.controllerLink(fragment, toPage, onRegistered, onController);
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
    if (controller.registered()) controller.post("state", { name: name, state: state });
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

  /** A file field has no placeholder: the page's `css.placeholder` (as for any field) is dropped silently. */
  function warnStyleState(state) {
    if (state !== "placeholder") console.warn("Cloak: css." + state + " is not a style state of a file field; dropped");
  }

  /** The state and the page's styles on the input (frame-common.js); invalid once files were chosen. */
  function paint() {
    const s = chosen.state;
    Frame.paintInput(input, styles, s, !!s && !s.isValid && dirty, focused);
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
    if (readySent || !initialized || !controller.registered() || !chosen.state) return;
    readySent = true;
    const states = {};
    states[name] = chosen.state;
    toPage("ready", { states: states });
  }

  // --- the page ---------------------------------------------------------------------------------

  function onInit(data) {
    if (initialized) return;
    styles = Frame.pageStyles(data.css, CSS_STATES, warnStyleState);
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

  // --- the controller (frame-common.js: controllerLink) ------------------------------------------

  /** The controller took this frame: it gets the state, if the first judgement is done. */
  function onRegistered() {
    if (chosen.state) controller.post("state", { name: name, state: chosen.state });
    maybeReady();
  }

  function onController(data) {
    if (data.type === "collect" && controller.registered()) {
      const req = data.req;
      // The files and the state judged of them, together: the controller refuses invalid files.
      whenSettled(function () {
        const files = {};
        const states = {};
        files[name] = chosen.files.slice();
        states[name] = chosen.state;
        controller.post("values", { req: req, values: {}, files: files, states: states });
      });
    }
  }

  Frame.listen(fragment.pageOrigin, onPage, controller);

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

  Frame.fetchSchema(formName, toPage, function (schema) {
    if (!Frame.allowsPage(schema, fragment.pageOrigin)) return;
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
    Frame.announce(toPage, controller);
  });
})();
