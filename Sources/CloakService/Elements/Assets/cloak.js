/*
 * Cloak Elements v1: the page's loader (docs/elements.md).
 *
 * Mounts Cloak's frames and relays their state, events and submit answers. It never sees a value
 * (the inputs live in frames of Cloak's origin; no message to the page carries one), and it never
 * connects to Cloak itself (no fetch): the page's CSP needs Cloak in script-src and frame-src only.
 */
(() => {
  "use strict";
  if (window.Cloak) return; // loaded twice: the first copy stays in charge

  const script = document.currentScript;
  const DEFAULT_ORIGIN = script && script.src ? new URL(script.src, location.href).origin : null;
  const PAGE = location.origin;
  const KINDS = ["tokens", "send", "validate"];
  const TITLES = {
    cardNumber: "Card number", expDate: "Expiration date", cvc: "Security code",
    cardHolderName: "Cardholder name", ssn: "Social Security number", date: "Date", file: "Document",
  };
  const ACCEPT = /^\s*[A-Za-z0-9.+/*_-]+(\s*,\s*[A-Za-z0-9.+/*_-]+)*\s*$/;
  const CSS_STATES = ["base", "focus", "invalid", "complete", "empty", "placeholder"];
  const CSS_PROPERTY = new RegExp("^(color|background-color|font-(family|size|weight|style)|letter-spacing|" +
    "line-height|padding|text-(align|transform)|caret-color|border(-(top|right|bottom|left))?(-(color|style|width))?|" +
    "border-radius|border-(top|bottom)-(left|right)-radius)$");
  const CSS_FORBIDDEN = /url\(|expression\(|[;{}\\]/i;
  const BLOCKED = "Cloak's frames did not load: is this page's origin in elements.allowed_origins?";
  const mounted = new WeakMap(); // target element → the handle of the Cloak frame in it

  // --- helpers ---------------------------------------------------------------------------------

  const randomId = () => Array.from(crypto.getRandomValues(new Uint8Array(8)),
    (b) => (b + 256).toString(16).slice(1)).join("");
  const copy = (v) => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));
  const enc = encodeURIComponent;
  const fragment = (params) => Object.keys(params).map((k) => `${k}=${params[k]}`).join("&");
  const post = (win, origin, type, body) => win && win.postMessage({ cloak: 1, type, ...body }, origin);
  const validRoute = (r) => typeof r === "string" && r[0] === "/" && !/\.\.|\/\/|[?#\\]|%2e|%2f/i.test(r);

  function cloakOrigin(given) {
    let origin = "null";
    try { origin = new URL(given).origin; } catch (e) { /* below */ }
    if (origin === "null") throw new Error("Cloak: no Cloak origin (pass {origin: \"https://…\"})");
    if (PAGE === "null") throw new Error("Cloak: this page has no origin; serve it over http(s)");
    return origin;
  }

  function resolveTarget(target) {
    const el = typeof target === "string" ? document.querySelector(target) : target;
    if (typeof target === "string" && !el) throw new Error(`Cloak: no element matches "${target}"`);
    if (!el || el.nodeType !== 1) throw new TypeError("Cloak: a target element or CSS selector is required");
    return el;
  }

  /** Callbacks per event: each gets its own copy of the payload; one that throws cannot stop the others. */
  function emitter(names) {
    let lists;
    const clear = () => { lists = {}; names.forEach((n) => { lists[n] = []; }); };
    clear();
    return {
      clear,
      on(name, cb) {
        if (!lists[name]) throw new Error(`Cloak: unknown event "${name}"`);
        if (typeof cb !== "function") throw new TypeError(`Cloak: on("${name}") needs a function`);
        lists[name].push(cb);
      },
      emit(name, payload, extra) {
        (lists[name] || []).slice().forEach((cb) => {
          try { cb(copy(payload), extra); } catch (e) { setTimeout(() => { throw e; }); }
        });
      },
    };
  }

  /** The page's css option, checked here (the frames check it again); each drop is named. */
  function cleanCss(css, where) {
    const out = {};
    if (css == null) return out;
    if (typeof css !== "object") { console.warn(`Cloak: ${where}.css must be an object; ignored`); return out; }
    Object.keys(css).forEach((state) => {
      const map = css[state];
      if (!CSS_STATES.includes(state) || !map || typeof map !== "object") {
        return console.warn(`Cloak: ${where}.css.${state} is not a style state; dropped`);
      }
      out[state] = {};
      Object.keys(map).forEach((prop) => {
        const name = prop.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase());
        const value = map[prop];
        if (!CSS_PROPERTY.test(name)) {
          console.warn(`Cloak: ${where}.css.${state}: property "${prop}" is not allowed; dropped`);
        } else if (typeof value !== "string" || CSS_FORBIDDEN.test(value)) {
          console.warn(`Cloak: ${where}.css.${state}.${prop}: value ${JSON.stringify(value)} is not allowed; dropped`);
        } else {
          out[state][name] = value;
        }
      });
    });
    return out;
  }

  function makeFrame(src, name, title) {
    const frame = document.createElement("iframe");
    Object.assign(frame, { src, name, title });
    // CSSOM, which a page CSP without 'unsafe-inline' allows; 40px until the frame reports its size.
    Object.assign(frame.style, { border: "0", width: "100%", display: "block", height: "40px" });
    return frame;
  }

  function resize(frame, height) {
    if (frame && typeof height === "number" && height >= 0 && height < 10000) frame.style.height = `${Math.ceil(height)}px`;
  }

  /**
   * Calls blocked() when a frame never speaks: its load fired and no message came within 2 s, or
   * nothing came within 15 s (CSP frame-ancestors refused the page). Returns heard(), which stops it.
   */
  function watch(frame, blocked) {
    let done = false;
    let short = 0;
    const heard = () => { done = true; clearTimeout(short); clearTimeout(long); };
    const fire = () => { if (!done) { heard(); blocked(); } };
    const long = setTimeout(fire, 15000);
    frame.addEventListener("load", () => {
      try { if (frame.contentWindow.location.href === "about:blank") return; } catch (e) { /* another origin */ }
      if (!done) { clearTimeout(short); short = setTimeout(fire, 2000); }
    });
    return heard;
  }

  // --- forms ---------------------------------------------------------------------------------

  function form(formName, options) {
    if (typeof formName !== "string" || !formName) throw new TypeError("Cloak.form: a form name is required");
    const origin = cloakOrigin((options && options.origin) || DEFAULT_ORIGIN);
    const id = randomId();
    const base = `${origin}/elements/v1/`;
    const events = emitter(["change", "ready", "error", "progress"]);
    const handlers = new Map(); // frame window → its message handler
    const fields = []; // field records, waiting for the schema or mounted
    const submits = new Map(); // req → {resolve, reject}
    const queue = []; // submit messages waiting for the controller and the fields
    let schema = null; // Map name → type, once the controller sent it
    let status = "loading"; // loading | live | failed | destroyed
    let readyEmitted = false;
    let nextReq = 1;
    let nextKey = 1;
    let controller = null;

    const onMessage = (event) => {
      const data = event.data;
      const handler = event.origin === origin && handlers.get(event.source);
      if (handler && data && typeof data === "object" && data.cloak === 1 && typeof data.type === "string") handler(data);
    };
    window.addEventListener("message", onMessage);
    const toController = (type, body) => post(controller && controller.contentWindow, origin, type, body);

    // The controller: hidden at the end of <body>, out of the tab order and of the accessibility tree.
    function mountController() {
      const frag = fragment({ form: enc(formName), id, origin: enc(PAGE) });
      controller = makeFrame(`${base}controller.html#${frag}`, `cloak-controller-${id}`, "Cloak form controller");
      Object.assign(controller.style, { position: "absolute", width: "0", height: "0", visibility: "hidden" });
      controller.tabIndex = -1;
      controller.setAttribute("aria-hidden", "true");
      const heard = watch(controller, () => fail("frame_blocked", BLOCKED));
      document.body.appendChild(controller);
      handlers.set(controller.contentWindow, (data) => { heard(); onController(data); });
    }
    if (document.body) mountController();
    else document.addEventListener("DOMContentLoaded", () => status === "loading" && mountController());

    function onController(data) {
      if (data.type === "schema" && !schema && Array.isArray(data.fields)) {
        schema = new Map(data.fields.map((f) => [f.name, f.type]));
        status = "live";
        fields.slice().forEach((rec) => {
          const unknown = rec.names.find((n) => !schema.has(n));
          const wrong = unknown === undefined ? wrongType(rec.names, rec.kind) : undefined;
          if (unknown === undefined && wrong === undefined) return mountFrame(rec);
          const error = unknown !== undefined
            ? { code: "unknown_field", message: `form "${formName}" has no field "${unknown}"` }
            : { code: "wrong_field_type", message: wrongMessage(wrong, rec.kind) };
          console.error(`Cloak: ${error.message}`);
          removeField(rec);
          rec.events.emit("error", error);
          events.emit("error", error);
        });
        checkReady();
      } else if (data.type === "error") {
        if (data.code === "unknown_form") fail("unknown_form", String(data.message || `Cloak has no form "${formName}"`));
        else events.emit("error", { code: String(data.code), message: String(data.message || "") });
      } else if (data.type === "change") {
        events.emit("change", { isValid: data.isValid === true, fields: data.fields });
      } else if (data.type === "progress" && submits.has(data.req)) {
        const n = (v) => (typeof v === "number" && v >= 0 ? v : 0);
        events.emit("progress", { loaded: n(data.loaded), total: n(data.total) });
      } else if ((data.type === "result" || data.type === "failed") && submits.has(data.req)) {
        const { resolve, reject } = submits.get(data.req);
        submits.delete(data.req);
        if (data.type === "result") resolve({ status: data.status, body: copy(data.body) });
        else reject(new Error(`Cloak: ${data.message || "the submission failed"}`));
      }
    }

    /** The form cannot work: every frame goes, every listener hears why. */
    function fail(code, message) {
      if (status === "failed" || status === "destroyed") return;
      status = "failed";
      console.error(`Cloak: ${message}`);
      const recs = fields.slice();
      teardown(new Error(`Cloak: ${message}`));
      events.emit("error", { code, message });
      recs.forEach((rec) => rec.events.emit("error", { code, message }));
    }

    function teardown(reason) {
      fields.slice().forEach(removeField);
      if (controller) controller.remove();
      handlers.clear();
      window.removeEventListener("message", onMessage);
      queue.length = 0;
      submits.forEach((p) => p.reject(reason));
      submits.clear();
    }

    /** Once every mounted field is ready: sends the submits that waited, and emits `ready`. */
    function checkReady() {
      if (status !== "live") return;
      if (!fields.every((r) => r.ready || r.failed)) { readyEmitted = false; return; }
      while (queue.length) toController("submit", queue.shift());
      if (!readyEmitted) { readyEmitted = true; events.emit("ready", {}); }
    }

    // --- fields ---

    /** A name of `names` whose type does not fit `kind` (file() takes file fields, field() and card() the others). */
    const wrongType = (names, kind) => names.find((n) => (schema.get(n) === "file") !== (kind === "file"));
    const wrongMessage = (n, kind) => (kind === "file" ? `field "${n}" is not a file field`
      : `field "${n}" is a file field (mount it with file())`);

    function mountField(target, names, kind, options) {
      if (status === "destroyed") throw new Error("Cloak: this form was destroyed");
      const unknown = schema ? names.find((n) => !schema.has(n)) : undefined;
      if (unknown !== undefined) throw new Error(`Cloak: form "${formName}" has no field "${unknown}"`);
      const wrong = schema ? wrongType(names, kind) : undefined;
      if (wrong !== undefined) throw new Error(`Cloak: ${wrongMessage(wrong, kind)}`);
      const previous = mounted.get(target);
      if (previous) previous.destroy(); // a second mount into one target replaces the first (React StrictMode)
      fields.slice().forEach((other) => {
        const shared = other.names.find((n) => names.includes(n));
        if (shared === undefined) return;
        console.warn(`Cloak: field "${shared}" was mounted again elsewhere; the earlier frame is removed`);
        other.handle.destroy();
      });
      const rec = {
        key: `k${nextKey++}`, names, kind, options, target, frame: null, ready: false, failed: false, timer: 0,
        events: emitter(["change", "focus", "blur", "enter", "ready", "error"]),
        css: cleanCss(options.css, kind === "card" ? "card()" : `${kind}("${names[0]}")`),
      };
      const toFrame = (type) => rec.frame && post(rec.frame.contentWindow, origin, type);
      rec.handle = {
        on: (name, cb) => { rec.events.on(name, cb); return rec.handle; },
        clear: () => toFrame("clear"),
        focus: () => { if (rec.frame) { rec.frame.focus(); toFrame("focus"); } },
        destroy: () => { removeField(rec); rec.events.clear(); checkReady(); },
      };
      fields.push(rec);
      mounted.set(target, rec.handle);
      if (status === "failed") {
        Promise.resolve().then(() => rec.events.emit("error", { code: "form_unavailable", message: "the form failed to load" }));
      } else if (schema) {
        mountFrame(rec);
        checkReady();
      }
      return rec.handle;
    }

    function mountFrame(rec) {
      const o = rec.options;
      const title = o.ariaLabel || (rec.kind === "card" ? "Card details" : TITLES[schema.get(rec.names[0])] || o.placeholder || rec.names[0]);
      const frag = fragment({ form: enc(formName), id, origin: enc(PAGE), fields: rec.names.map(enc).join(","), key: rec.key });
      const doc = rec.kind === "file" ? "file.html" : "field.html";
      rec.frame = makeFrame(`${base}${doc}#${frag}`, `cloak-field-${id}-${rec.key}`, String(title));
      rec.target.appendChild(rec.frame);
      handlers.set(rec.frame.contentWindow, (data) => onField(rec, data));
      rec.timer = setTimeout(() => {
        if (rec.ready || rec.failed) return;
        rec.failed = true;
        rec.events.emit("error", { code: "frame_timeout", message: "Cloak's field frame did not answer" });
        checkReady();
      }, 15000);
    }

    function initFor(rec) {
      const o = rec.options;
      const init = { css: rec.css, fonts: Array.isArray(o.fonts) ? o.fonts : [] };
      if (rec.kind === "card") {
        // placeholders by role (number, exp, cvc, holder) or by field name
        const roles = { number: o.number, exp: o.exp, cvc: o.cvc, holder: o.holder };
        const given = Object(o.placeholders);
        init.placeholders = {};
        Object.keys(given).forEach((k) => { if (typeof given[k] === "string") init.placeholders[roles[k] || k] = given[k]; });
      } else if (rec.kind === "file") {
        init.ariaLabel = typeof o.ariaLabel === "string" ? o.ariaLabel : "";
        init.autoFocus = o.autoFocus === true;
        if (typeof o.accept === "string" && ACCEPT.test(o.accept) && o.accept.length <= 512) init.accept = o.accept;
        else if (o.accept !== undefined) console.warn("Cloak: file(): accept must list media types or extensions; ignored");
        if (typeof o.multiple === "boolean") init.multiple = o.multiple;
      } else {
        init.placeholder = typeof o.placeholder === "string" ? o.placeholder : "";
        init.ariaLabel = typeof o.ariaLabel === "string" ? o.ariaLabel : "";
        init.autoFocus = o.autoFocus === true;
      }
      return init;
    }

    function onField(rec, data) {
      const name = typeof data.name === "string" ? data.name : undefined;
      switch (data.type) {
        case "hello": {
          const init = initFor(rec);
          if (init.autoFocus) rec.frame.focus();
          post(rec.frame.contentWindow, origin, "init", init);
          break;
        }
        case "ready":
          rec.ready = true;
          clearTimeout(rec.timer);
          rec.events.emit("ready", { states: data.states });
          checkReady();
          break;
        case "change":
          rec.events.emit("change", data.state, name);
          break;
        case "focus": case "blur": case "enter":
          rec.events.emit(data.type, { name }, name);
          break;
        case "resize":
          resize(rec.frame, data.height);
          break;
        case "error":
          if (!rec.ready) rec.failed = true;
          rec.events.emit("error", { code: String(data.code), message: String(data.message || "") }, name);
          checkReady();
          break;
      }
    }

    function removeField(rec) {
      clearTimeout(rec.timer);
      if (fields.includes(rec)) fields.splice(fields.indexOf(rec), 1);
      if (mounted.get(rec.target) === rec.handle) mounted.delete(rec.target);
      if (rec.frame) {
        handlers.delete(rec.frame.contentWindow);
        rec.frame.remove();
        rec.frame = null;
      }
    }

    const nameOf = (value, what) => {
      if (typeof value !== "string" || !value) throw new TypeError(`Cloak: ${what} needs a field name`);
      return value;
    };

    const api = {
      field(target, options) {
        const el = resolveTarget(target);
        options = Object(options);
        return mountField(el, [nameOf(options.name, "field()")], "field", options);
      },
      file(target, options) {
        const el = resolveTarget(target);
        options = Object(options);
        return mountField(el, [nameOf(options.name, "file()")], "file", options);
      },
      card(target, options) {
        const el = resolveTarget(target);
        options = Object(options);
        const names = ["number", "exp", "cvc"].map((role) => nameOf(options[role], `card() ${role}`));
        if (options.holder !== undefined) names.push(nameOf(options.holder, "card() holder"));
        return mountField(el, names, "card", options);
      },
      on(name, cb) { events.on(name, cb); return api; },
      submit(kind, options) {
        options = Object(options);
        return new Promise((resolve, reject) => {
          if (status === "failed" || status === "destroyed") throw new Error("Cloak: the form is not available");
          const msg = { req: nextReq++ };
          if (KINDS.includes(kind)) msg.kind = kind;
          else if (kind && validRoute(kind.route)) msg.route = kind.route;
          else throw new TypeError('Cloak: submit("tokens" | "send" | "validate" | {route: "/…"})');
          if (options.extraData !== undefined) msg.extraData = copy(options.extraData);
          if (options.options !== undefined) msg.options = copy(options.options);
          submits.set(msg.req, { resolve, reject });
          queue.push(msg);
          checkReady();
        });
      },
      destroy() {
        if (status === "destroyed") return;
        toController("destroy");
        status = "destroyed";
        teardown(new Error("Cloak: the form was destroyed"));
        events.clear();
      },
    };
    return api;
  }

  // --- reveal --------------------------------------------------------------------------------

  function reveal(target, options) {
    const el = resolveTarget(target);
    options = Object(options);
    const { alias, session, mask } = options;
    if (typeof alias !== "string" || !alias || typeof session !== "string" || !session) {
      throw new TypeError("Cloak.reveal: alias and session are required");
    }
    if (mask !== undefined && typeof mask !== "string") throw new TypeError("Cloak.reveal: mask must be a string");
    const origin = cloakOrigin(options.origin || DEFAULT_ORIGIN);
    const id = randomId();
    const events = emitter(["ready", "revealed", "copied", "error"]);
    if (mounted.has(el)) mounted.get(el).destroy();
    const frame = makeFrame(`${origin}/elements/v1/reveal.html#${fragment({ origin: enc(PAGE), id })}`,
      `cloak-reveal-${id}`, options.ariaLabel || "Stored value");
    frame.setAttribute("allow", "clipboard-write");
    let initSent = false;

    const onMessage = (event) => {
      const data = event.data;
      if (event.origin !== origin || event.source !== frame.contentWindow || !data || data.cloak !== 1) return;
      heard();
      if (data.type === "hello" && !initSent) {
        initSent = true;
        post(frame.contentWindow, origin, "init", { alias, session, mask: mask === undefined ? null : mask, copy: options.copy === true });
      } else if (data.type === "ready" || data.type === "revealed" || data.type === "copied") {
        events.emit(data.type, {});
      } else if (data.type === "error") {
        events.emit("error", {
          code: String(data.code), status: typeof data.status === "number" ? data.status : null, message: String(data.message || ""),
        });
      } else if (data.type === "resize") {
        resize(frame, data.height);
      }
    };
    const handle = {
      on: (name, cb) => { events.on(name, cb); return handle; },
      destroy() {
        heard();
        window.removeEventListener("message", onMessage);
        frame.remove();
        if (mounted.get(el) === handle) mounted.delete(el);
        events.clear();
      },
    };
    const heard = watch(frame, () => {
      console.error(`Cloak: ${BLOCKED}`);
      events.emit("error", { code: "frame_blocked", status: null, message: BLOCKED });
      handle.destroy();
    });
    window.addEventListener("message", onMessage);
    el.appendChild(frame);
    mounted.set(el, handle);
    return handle;
  }

  window.Cloak = Object.freeze({ version: "1", form: (name, options) => form(name, options), reveal });
})();
