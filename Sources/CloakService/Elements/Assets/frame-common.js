/*
 * Cloak Elements: what every frame (field, file, controller, reveal) does first: read whom it
 * serves from its URL's fragment (never sent to the server) and check that it really is embedded
 * by that page. Then what the field frames (field.js, file.js) share: messages to the page, the
 * page's styles, the link to the form's controller frame, and their start. Loaded before the
 * frame's own script; defines window.CloakFrame.
 */
(function () {
  "use strict";

  const REGISTER_EVERY_MS = 100;
  const REGISTER_FOR_MS = 10000;
  const CSS_PROPERTY = new RegExp("^(color|background-color|font-(family|size|weight|style)|letter-spacing|" +
    "line-height|padding|text-(align|transform)|caret-color|border(-(top|right|bottom|left))?(-(color|style|width))?|" +
    "border-radius|border-(top|bottom)-(left|right)-radius)$");
  const CSS_FORBIDDEN = /url\(|expression\(|[;{}\\]/i;

  // --- who this frame serves --------------------------------------------------------------------

  /** The fragment's `key=value` pairs; null when a key repeats (a tampered URL). */
  function fragmentParams() {
    const params = new Map();
    for (const part of location.hash.replace(/^#/, "").split("&")) {
      const i = part.indexOf("=");
      if (i <= 0) continue;
      const key = part.slice(0, i);
      if (params.has(key)) return null;
      params.set(key, part.slice(i + 1));
    }
    return params;
  }

  function decode(text) {
    try { return typeof text === "string" ? decodeURIComponent(text) : null; } catch (e) { return null; }
  }

  /** An origin exactly as a browser serializes it (`https://shop.example`). */
  function isOrigin(text) {
    try { return typeof text === "string" && text !== "null" && new URL(text).origin === text; } catch (e) { return false; }
  }

  /**
   * Whether this frame is in a frame of a page of `pageOrigin` (an origin): not a top window, and,
   * where the browser tells a frame its ancestors' origins, its parent's is `pageOrigin`.
   */
  function embeddedBy(pageOrigin) {
    const ancestors = location.ancestorOrigins;
    return isOrigin(pageOrigin) && window.parent !== window && !(ancestors && ancestors[0] !== pageOrigin);
  }

  /**
   * A field frame's fragment (field.html, file.html), `#form=…&id=…&origin=…&fields=…&key=…`, as
   * {formName, instance, key, pageOrigin, names}; null when it is not as Cloak's loader writes it
   * (a form name, a 16-hex-digit instance, a key, distinct field names) or the frame is not
   * embedded by that page.
   */
  function fieldFragment() {
    const params = fragmentParams();
    if (!params) return null;
    const formName = decode(params.get("form"));
    const instance = params.get("id");
    const key = params.get("key");
    const pageOrigin = decode(params.get("origin"));
    const names = (params.get("fields") || "").split(",").map(decode);
    if (!formName || formName === "." || formName === ".." || !/^[0-9a-f]{16}$/.test(instance || "") ||
        !/^[A-Za-z0-9_-]{1,32}$/.test(key || "") || names.some(function (n) { return !n; }) ||
        new Set(names).size !== names.length || !embeddedBy(pageOrigin)) {
      return null;
    }
    return { formName: formName, instance: instance, key: key, pageOrigin: pageOrigin, names: names };
  }

  // --- messages ---------------------------------------------------------------------------------

  /** Posts `{cloak: 1, type, …body}` to `win`, for `origin` only. */
  function post(win, origin, type, body) {
    win.postMessage(Object.assign({ cloak: 1, type: type }, body), origin);
  }

  /** A frame's `toPage(type, body)`: posts to the page that embeds it, for its origin only. */
  function pageSender(pageOrigin) {
    return function toPage(type, body) { post(window.parent, pageOrigin, type, body); };
  }

  // --- the page's styles (CSSOM only: the frames' CSP has no 'unsafe-inline') ---------------------

  /**
   * The page's `css` option kept to the frame's style `states` and the allowed properties (named
   * in camelCase or kebab-case; kept in kebab-case), whatever else it has dropped with a console
   * warning; a key that is not one of `states` (or not an object) goes to `unknown(state)`, which
   * warns as the frame words it.
   */
  function cleanCss(given, states, unknown) {
    const out = {};
    if (!given || typeof given !== "object") return out;
    Object.keys(given).forEach(function (state) {
      const map = given[state];
      if (states.indexOf(state) < 0 || !map || typeof map !== "object") {
        unknown(state);
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

  /** No styles: what a frame paints with before the page's `init`. */
  const NO_STYLES = Object.freeze({ css: Object.freeze({}), properties: Object.freeze([]) });

  /**
   * The page's styles: {css: the cleaned `css` option (cleanCss), properties: the properties its
   * states set, which `paintInput` manages (not `placeholder`'s: it styles a pseudo-element)}.
   */
  function pageStyles(given, states, unknown) {
    const css = cleanCss(given, states, unknown);
    const seen = {};
    Object.keys(css).forEach(function (state) {
      if (state !== "placeholder") Object.keys(css[state]).forEach(function (p) { seen[p] = true; });
    });
    return { css: css, properties: Object.keys(seen) };
  }

  /**
   * Shows a field's `state` on its input: aria-invalid, the classes cloak-invalid / -complete /
   * -empty, and the page's `styles` (pageStyles) layered base, then empty / invalid / complete,
   * then focus: later layers win.
   */
  function paintInput(input, styles, state, invalid, focused) {
    const css = styles.css;
    const complete = !!state && state.isValid && !state.isEmpty;
    const empty = !state || state.isEmpty;
    input.setAttribute("aria-invalid", invalid ? "true" : "false");
    input.classList.toggle("cloak-invalid", invalid);
    input.classList.toggle("cloak-complete", complete);
    input.classList.toggle("cloak-empty", empty);
    const layers = [css.base, empty && css.empty, invalid && css.invalid, complete && css.complete, focused && css.focus];
    const final = {};
    layers.forEach(function (layer) { if (layer) Object.assign(final, layer); });
    styles.properties.forEach(function (p) {
      if (final[p] !== undefined) input.style.setProperty(p, final[p]);
      else input.style.removeProperty(p);
    });
  }

  // --- the controller (same origin, found by name among the page's frames) ----------------------

  /**
   * A field frame's link to its form's controller frame. `register()` names the frame's fields
   * (with its key and form: `fragment`, fieldFragment's) to the controller every
   * REGISTER_EVERY_MS, looking for it again each time, until it answers `registered` for this key
   * and form, then runs `onRegistered()` (once); after REGISTER_FOR_MS without an answer the page
   * hears `controller_unreachable`. `receive(source, origin, data)` takes a message: the
   * controller's but its answer go to `onMessage(data)`, anything else is ignored. `post(type,
   * body)` posts to the controller once it was looked for and found; `registered()` tells.
   */
  function controllerLink(fragment, toPage, onRegistered, onMessage) {
    let controller = null;
    let registered = false;

    function findController() {
      try { return window.parent.frames["cloak-controller-" + fragment.instance] || null; } catch (e) { return null; }
    }

    function toController(type, body) {
      if (controller) post(controller, location.origin, type, body);
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
        toController("register", { key: fragment.key, form: fragment.formName, names: fragment.names });
        setTimeout(attempt, REGISTER_EVERY_MS);
      })();
    }

    function receive(source, origin, data) {
      if (!controller || source !== controller || origin !== location.origin) return;
      if (data.type === "registered" && data.key === fragment.key && data.form === fragment.formName && !registered) {
        registered = true;
        onRegistered();
      } else {
        onMessage(data);
      }
    }

    return Object.freeze({
      register: register,
      receive: receive,
      post: toController,
      registered: function () { return registered; },
    });
  }

  /**
   * Routes the messages a field frame takes, each `{cloak: 1, type: "<string>", …}`: its page's
   * (its parent's, from `pageOrigin`) to `onPage(data)`, the others to `controller.receive`
   * (controllerLink's), which keeps the controller's.
   */
  function listen(pageOrigin, onPage, controller) {
    window.addEventListener("message", function (event) {
      const data = event.data;
      if (!data || typeof data !== "object" || data.cloak !== 1 || typeof data.type !== "string") return;
      if (event.source === window.parent && event.origin === pageOrigin) onPage(data);
      else controller.receive(event.source, event.origin, data);
    });
  }

  // --- start ------------------------------------------------------------------------------------

  /**
   * Fetches the form's schema for `then(schema)`; the page hears `unknown_form` when there is no
   * such form, else `schema_unavailable` when it fails (`then` throwing too).
   */
  function fetchSchema(formName, toPage, then) {
    fetch("/elements/v1/forms/" + encodeURIComponent(formName), { credentials: "omit" }).then(function (res) {
      if (!res.ok) throw res.status;
      return res.json();
    }).then(function (schema) {
      then(schema);
    }).catch(function (status) {
      toPage("error", status === 404
        ? { code: "unknown_form", message: "Cloak has no form \"" + formName + "\"" }
        : { code: "schema_unavailable", message: "Cloak's form schema could not be loaded" });
    });
  }

  /** Whether the form (its schema) may be used by a page of `pageOrigin`. */
  function allowsPage(schema, pageOrigin) {
    return Array.isArray(schema.allowedOrigins) && schema.allowedOrigins.indexOf(pageOrigin) >= 0;
  }

  /**
   * A field frame's start, once it shows its inputs: says `hello` to the page, tells it the
   * frame's height (`resize`) whenever that changes, and registers with the controller
   * (controllerLink's `register`).
   */
  function announce(toPage, controller) {
    toPage("hello");
    let height = -1;
    new ResizeObserver(function () {
      const h = Math.ceil(document.documentElement.getBoundingClientRect().height);
      if (h !== height) { height = h; toPage("resize", { height: h }); }
    }).observe(document.documentElement);
    controller.register();
  }

  window.CloakFrame = Object.freeze({
    fragmentParams: fragmentParams, decode: decode, isOrigin: isOrigin, embeddedBy: embeddedBy,
    fieldFragment: fieldFragment, pageSender: pageSender, NO_STYLES: NO_STYLES, pageStyles: pageStyles,
    paintInput: paintInput, controllerLink: controllerLink, listen: listen, fetchSchema: fetchSchema,
    allowsPage: allowsPage, announce: announce,
  });
})();
