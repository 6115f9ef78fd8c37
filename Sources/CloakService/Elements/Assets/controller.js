/*
 * Cloak Elements: the form's controller frame (controller.html, hidden). Tells the page the form's
 * schema (names and types only), keeps the latest state of every field frame and the form's
 * validity, links CVCs to their card field's brand, and submits: it collects the values (and the
 * files of file fields) from the field frames (Cloak's origin to Cloak's origin) and posts them to
 * Cloak's own API: JSON, or multipart/form-data for a form with a file field (with upload
 * progress). The page gets the HTTP status and answer, and upload progress, never a value.
 *
 * Fragment: #form=<name>&id=<form instance>&origin=<page origin>
 */
(function () {
  "use strict";
  const R = window.CloakRules;
  const KINDS = ["tokens", "send", "validate"];
  const COLLECT_TIMEOUT_MS = 5000;
  const FILE_REQUIRED = "FILE_REQUIRED_VALIDATION_ERROR";

  // --- who this frame serves (frame-common.js) ---------------------------------------------------

  const { fragmentParams, decode, embeddedBy, pageSender } = window.CloakFrame;

  const params = fragmentParams();
  if (!params) return;
  const formName = decode(params.get("form"));
  const instance = params.get("id");
  const pageOrigin = decode(params.get("origin"));
  if (!formName || formName === "." || formName === ".." || !/^[0-9a-f]{16}$/.test(instance || "") || !embeddedBy(pageOrigin)) {
    return;
  }

  const toPage = pageSender(pageOrigin);

  function toFrame(win, type, body) {
    win.postMessage(Object.assign({ cloak: 1, type: type }, body), location.origin);
  }

  // --- the form ---------------------------------------------------------------------------------

  let schema = null;
  let ctx = null;
  let entries = [];
  const entryByName = new Map();
  let destroyed = false;
  /** Field frames by key: {key, win, names, linked: {cvcName: brand sent}}. */
  const frames = new Map();
  /** Field name → the frame that holds it (the latest to register it). */
  const owner = new Map();
  /** Field name → the latest state its frame sent. */
  const states = new Map();
  /** Field name → its state when absent, from the server, for fields the engine cannot compute. */
  const serverAbsent = new Map();
  const collects = new Map();
  let nextCollect = 1;
  /** Uploads under way (XMLHttpRequest), aborted by `destroy`. */
  const uploads = new Set();

  const isFile = function (e) { return e.type === "file"; };

  /** The page's frame named for this key, or null (sibling frames are found by name). */
  function frameWindow(key) {
    try { return window.parent.frames["cloak-field-" + instance + "-" + key] || null; } catch (e) { return null; }
  }

  function frameOf(win) {
    for (const f of frames.values()) if (f.win === win) return f;
    return null;
  }

  /** Forgets frames the page removed; CVCs linked to a card field that went get the unknown brand. */
  function prune() {
    const gone = [];
    frames.forEach(function (f, key) {
      if (frameWindow(key) === f.win) return;
      frames.delete(key);
      f.names.forEach(function (n) {
        if (owner.get(n) === f) { owner.delete(n); states.delete(n); gone.push(n); }
      });
    });
    gone.forEach(relayBrand);
  }

  /** The brand id of a card field's latest state, if its frame is mounted. */
  function brandOf(cardField) {
    const s = owner.has(cardField) ? states.get(cardField) : null;
    return s && typeof s.cardBrand === "string" ? s.cardBrand : undefined;
  }

  /** A field's state when no frame holds it: the rules on "" (not dirty), as the server gives it. */
  function absentState(entry) {
    if (isFile(entry)) {
      // FileFieldState of no file (the file frame's rules, file.js).
      const required = !!entry.file && entry.file.required === true;
      return { isValid: !required, isEmpty: true, validationErrors: required ? [FILE_REQUIRED] : [], fileCount: 0,
               bytes: 0, mediaType: null };
    }
    const state = R.fieldState(entry, ctx, "", {
      dirty: false, cardBrand: entry.type === "cvc" ? brandOf(entry.cardField) : undefined,
    });
    return state === R.SERVER ? serverAbsent.get(entry.name) : state;
  }

  function publish() {
    prune();
    const fields = {};
    entries.forEach(function (e) {
      const s = owner.has(e.name) ? states.get(e.name) : absentState(e);
      if (s) fields[e.name] = s;
    });
    toPage("change", { isValid: formValid(fields), fields: fields });
  }

  /**
   * FormValidation.isValid, and no file field holding a file it refuses: such a form cannot be
   * submitted (onValues), so it is never shown valid.
   */
  function formValid(fields) {
    return R.formValidity(entries, fields).isValid && entries.every(function (e) {
      return !isFile(e) || !fields[e.name] || fields[e.name].isValid === true;
    });
  }

  /** Sends each mounted CVC linked to `cardField` its card's brand (unknown without one), when it changed. */
  function relayBrand(cardField) {
    const brand = brandOf(cardField) || "unknown";
    entries.forEach(function (e) {
      if (e.type !== "cvc" || e.cardField !== cardField) return;
      const f = owner.get(e.name);
      if (!f || f.linked[e.name] === brand) return;
      f.linked[e.name] = brand;
      toFrame(f.win, "linked", { name: e.name, cardBrand: brand });
    });
  }

  /** Absent fields the engine cannot compute: asked once, as an empty submission. */
  function askAbsentStates() {
    if (!entries.some(function (e) { return !isFile(e) && R.fieldState(e, ctx, "", {}) === R.SERVER; })) return;
    fetch("/forms/" + encodeURIComponent(formName) + "/validate", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: "{\"fields\":{}}",
      credentials: "omit", cache: "no-store",
    }).then(function (res) { return res.ok ? res.json() : null; }).then(function (body) {
      if (!body || !body.fields || destroyed) return;
      entries.forEach(function (e) { if (body.fields[e.name]) serverAbsent.set(e.name, body.fields[e.name]); });
      publish();
    }).catch(function () { /* the form stays invalid until the fields report */ });
  }

  // --- field frames -----------------------------------------------------------------------------

  function onRegister(event, data) {
    const key = data.key;
    if (typeof key !== "string" || !/^[A-Za-z0-9_-]{1,32}$/.test(key) || frameWindow(key) !== event.source) return;
    if (data.form !== formName) return; // a frame of another form's instance, mounted under this id
    const names = data.names;
    if (!Array.isArray(names) || names.length === 0 || !names.every(function (n) { return entryByName.has(n); })) return;
    let f = frames.get(key);
    if (!f || f.win !== event.source) {
      f = { key: key, win: event.source, names: names.slice(), linked: {} };
      frames.set(key, f);
      names.forEach(function (n) { owner.set(n, f); states.delete(n); });
    }
    toFrame(f.win, "registered", { key: key, form: formName });
    names.forEach(function (n) {
      const e = entryByName.get(n);
      if (e.type === "cvc" && typeof e.cardField === "string") relayBrand(e.cardField);
    });
  }

  function onState(f, data) {
    if (owner.get(data.name) !== f || !data.state || typeof data.state !== "object") return;
    states.set(data.name, data.state);
    if (entryByName.get(data.name).type === "cardNumber") relayBrand(data.name);
    publish();
  }

  function onValues(f, data) {
    const c = collects.get(data.req);
    if (!c || !c.waiting.has(f)) return;
    if (Array.isArray(data.refused)) {
      clearTimeout(c.timer);
      collects.delete(c.id);
      return toPage("failed", {
        req: c.req, message: "the card number changed after it was shown or sent (" +
          data.refused.filter(function (n) { return typeof n === "string"; }).join(", ") +
          "): clear the field and type the number again",
      });
    }
    if (!data.values || typeof data.values !== "object") return;
    const refused = [];
    f.names.forEach(function (n) {
      if (owner.get(n) !== f) return;
      if (!isFile(entryByName.get(n))) {
        if (typeof data.values[n] === "string") c.values[n] = data.values[n];
        return;
      }
      // A file field: its File objects (structured clones, from a frame of Cloak's origin) and the
      // state the frame judged them by. Files it refuses are never uploaded.
      const files = data.files && Array.isArray(data.files[n]) ? data.files[n] : [];
      const state = data.states && data.states[n];
      if (!files.every(function (x) { return x instanceof File; })) return refused.push(n + " (not files)");
      if (files.length === 0) return;
      if (!state || state.isValid !== true || state.fileCount !== files.length) {
        const errors = state && Array.isArray(state.validationErrors) ? state.validationErrors : [];
        return refused.push(n + (errors.length ? ": " + errors.filter(function (x) { return typeof x === "string"; }).join(", ") : ""));
      }
      c.files[n] = files;
    });
    if (refused.length) {
      clearTimeout(c.timer);
      collects.delete(c.id);
      return toPage("failed", { req: c.req, message: "a file field holds a file it refuses (" + refused.join("; ") + "): choose another file" });
    }
    c.waiting.delete(f);
    if (c.waiting.size === 0) send(c);
  }

  // --- submissions ------------------------------------------------------------------------------

  /**
   * Where this form may send values: the answer comes back to the page, so only where the schema
   * says it carries no raw card number, CVC or SSN (`targets`, decided by Cloak from the form's
   * configuration): `validate` always; `tokens`, `send` and the routes of this form only when
   * every such field is tokenized. Routes are compared whole, as Cloak lists them.
   */
  function pathFor(data) {
    const targets = schema.targets || {};
    if (KINDS.indexOf(data.kind) >= 0) {
      return (targets.kinds || []).indexOf(data.kind) >= 0 ? "/forms/" + encodeURIComponent(formName) + "/" + data.kind : null;
    }
    if (data.kind !== undefined || typeof data.route !== "string" || (targets.routes || []).indexOf(data.route) < 0) return null;
    const path = "/proxy" + data.route;
    // The URL parser drops tabs and newlines and resolves dot segments: the path sent must be the one checked.
    return new URL(path, location.origin).pathname === path ? path : null;
  }

  function onSubmit(data) {
    const req = data.req;
    if (!schema) return toPage("failed", { req: req, message: "the form is not loaded yet" });
    const path = pathFor(data);
    if (!path) {
      return toPage("failed", {
        req: req, message: "not a submission this form may make from Cloak Elements (its answer could carry a raw " +
          "value, or no such route of this form); allowed: " + JSON.stringify(schema.targets || {}),
      });
    }
    prune();
    if (entries.some(isFile) && data.options !== undefined) {
      return toPage("failed", { req: req, message: "options are not sent with files (multipart/form-data)" });
    }
    const c = {
      id: nextCollect++, req: req, path: path, data: data, values: {}, files: {}, waiting: new Set(frames.values()),
    };
    collects.set(c.id, c);
    c.timer = setTimeout(function () {
      collects.delete(c.id);
      toPage("failed", { req: req, message: "a field frame did not answer" });
    }, COLLECT_TIMEOUT_MS);
    c.waiting.forEach(function (f) { toFrame(f.win, "collect", { req: c.id }); });
    if (c.waiting.size === 0) send(c);
  }

  function send(c) {
    clearTimeout(c.timer);
    collects.delete(c.id);
    if (entries.some(isFile)) return upload(c);
    const fields = {};
    entries.forEach(function (e) { if (Object.prototype.hasOwnProperty.call(c.values, e.name)) fields[e.name] = c.values[e.name]; });
    const body = { fields: fields };
    if (c.data.extraData !== undefined) body.extraData = c.data.extraData;
    if (c.data.options !== undefined) body.options = c.data.options;
    fetch(c.path, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
      credentials: "omit", cache: "no-store", redirect: "manual", // never re-post the values elsewhere
    }).then(function (res) {
      if (res.type === "opaqueredirect") throw new Error("redirect");
      return res.text().then(function (text) {
        let parsed = null;
        try { parsed = JSON.parse(text); } catch (e) { parsed = null; }
        if (!destroyed) toPage("result", { req: c.req, status: res.status, body: parsed });
      });
    }).catch(function () {
      if (!destroyed) toPage("failed", { req: c.req, message: "the request to Cloak failed" });
    });
  }

  /** A quoted multipart parameter: `"`, CR, LF and other controls percent-encoded (as browsers write them). */
  function quoted(text) {
    return String(text).replace(/[\u0000-\u001f\u007f"]/g, function (c) {
      return "%" + (c.charCodeAt(0) + 256).toString(16).slice(1).toUpperCase();
    });
  }

  /** A file's name for its part: at most 200 characters, its end (the extension) kept. */
  function fileName(file) {
    const chars = Array.from(typeof file.name === "string" && file.name ? file.name : "file");
    return chars.length <= 200 ? chars.join("") : chars.slice(0, 150).concat(chars.slice(-50)).join("");
  }

  /** A file's declared media type (a hint only: Cloak decides from the content). */
  function declaredType(file) {
    return /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+$/.test(file.type || "") ? file.type : "application/octet-stream";
  }

  /**
   * The multipart/form-data body: text fields as parts, each file as a part named by its field
   * (repeated for several), extraData as JSON. A Blob of strings and the File objects: the browser
   * reads each file as it sends it, nothing here holds a file's bytes.
   */
  function multipart(c) {
    const boundary = "CloakBoundary" + Array.from(crypto.getRandomValues(new Uint8Array(16)), function (b) {
      return (b + 256).toString(16).slice(1);
    }).join("");
    const parts = [];
    const head = function (lines) {
      parts.push("--" + boundary + "\r\n" + lines.join("\r\n") + "\r\n\r\n");
    };
    entries.forEach(function (e) {
      const n = e.name;
      if (Object.prototype.hasOwnProperty.call(c.values, n)) {
        head(["Content-Disposition: form-data; name=\"" + quoted(n) + "\""]);
        parts.push(c.values[n], "\r\n");
      }
      (c.files[n] || []).forEach(function (file) {
        head(["Content-Disposition: form-data; name=\"" + quoted(n) + "\"; filename=\"" + quoted(fileName(file)) + "\"",
              "Content-Type: " + declaredType(file)]);
        parts.push(file, "\r\n");
      });
    });
    if (c.data.extraData !== undefined) {
      head(["Content-Disposition: form-data; name=\"extraData\"", "Content-Type: application/json"]);
      parts.push(JSON.stringify(c.data.extraData), "\r\n");
    }
    parts.push("--" + boundary + "--\r\n");
    return { body: new Blob(parts), contentType: "multipart/form-data; boundary=" + boundary };
  }

  /**
   * Posts a form with a file field as multipart/form-data, with XMLHttpRequest (fetch tells no
   * upload progress): `progress {req, loaded, total}` to the page as the body goes. The frame's
   * CSP (connect-src 'self') keeps the request, and any redirect of it, on Cloak's origin; an
   * answer that came from elsewhere than the path asked is a failure.
   */
  function upload(c) {
    const built = multipart(c);
    const xhr = new XMLHttpRequest();
    uploads.add(xhr);
    const url = new URL(c.path, location.origin).href;
    let lastLoaded = -1;
    const progress = function (loaded, total) {
      if (destroyed || loaded === lastLoaded) return;
      lastLoaded = loaded;
      toPage("progress", { req: c.req, loaded: loaded, total: total });
    };
    const failed = function () {
      uploads.delete(xhr);
      if (!destroyed) toPage("failed", { req: c.req, message: "the request to Cloak failed" });
    };
    xhr.open("POST", url);
    xhr.setRequestHeader("Content-Type", built.contentType);
    xhr.setRequestHeader("Cloak-Upload", "1");
    xhr.responseType = "text";
    xhr.upload.onprogress = function (event) {
      progress(event.loaded, event.lengthComputable ? event.total : built.body.size);
    };
    xhr.upload.onload = function () { progress(built.body.size, built.body.size); };
    xhr.onload = function () {
      uploads.delete(xhr);
      if (xhr.responseURL && xhr.responseURL !== url) return failed();
      let parsed = null;
      try { parsed = JSON.parse(xhr.responseText); } catch (e) { parsed = null; }
      if (!destroyed) toPage("result", { req: c.req, status: xhr.status, body: parsed });
    };
    xhr.onerror = failed;
    xhr.onabort = failed;
    xhr.ontimeout = failed;
    progress(0, built.body.size);
    xhr.send(built.body);
  }

  // --- messages ---------------------------------------------------------------------------------

  window.addEventListener("message", function (event) {
    const data = event.data;
    if (destroyed || !data || typeof data !== "object" || data.cloak !== 1 || typeof data.type !== "string") return;
    if (event.source === window.parent && event.origin === pageOrigin) {
      if (data.type === "submit") onSubmit(data);
      else if (data.type === "destroy") {
        destroyed = true;
        collects.forEach(function (c) { clearTimeout(c.timer); });
        collects.clear();
        uploads.forEach(function (xhr) { xhr.abort(); });
        uploads.clear();
      }
      return;
    }
    if (event.origin !== location.origin || !schema) return;
    if (data.type === "register") return onRegister(event, data);
    const f = frameOf(event.source);
    if (!f || frameWindow(f.key) !== f.win) return;
    if (data.type === "state" && typeof data.name === "string") onState(f, data);
    else if (data.type === "values") onValues(f, data);
  });

  // --- start ------------------------------------------------------------------------------------

  toPage("hello"); // first, so the loader can tell a working frame from a blocked one at once
  fetch("/elements/v1/forms/" + encodeURIComponent(formName), { credentials: "omit" }).then(function (res) {
    if (res.status === 404) {
      toPage("error", { code: "unknown_form", message: "Cloak has no form \"" + formName + "\"" });
      return null;
    }
    if (!res.ok) throw new Error("schema");
    return res.json();
  }).then(function (body) {
    if (!body) return;
    if (!Array.isArray(body.allowedOrigins) || body.allowedOrigins.indexOf(pageOrigin) < 0) return;
    entries = body.fields;
    entries.forEach(function (e) { entryByName.set(e.name, e); });
    ctx = R.context(body);
    schema = body;
    toPage("schema", { fields: entries.map(function (e) { return { name: e.name, type: e.type }; }) });
    askAbsentStates();
  }).catch(function () {
    toPage("error", { code: "schema_unavailable", message: "Cloak's form schema could not be loaded" });
  });
})();
