// The merchant side of the browser tests: loaded by the test pages (from another origin than
// Cloak) before cloak.js. It records everything the page can see of Cloak Elements, so the tests
// can read it with `driver.execute_script`:
//   window.__events    every event of every form, field and reveal: {src, event, data, more, t}
//                      (`data` is the callback's first argument, `more` the others, all as JSON)
//   window.__messages  every `message` event that reached the page: {origin, data}
//   window.__console   every console line of the page: {level, text}
//   window.__errors    uncaught errors and unhandled rejections of the page
//   window.__times     per form: performance.now() before Cloak.form() and at its `ready`
// and drives Cloak through `window.__h` (every call returns plain JSON, never throws).
(function () {
  "use strict";

  window.__events = [];
  window.__messages = [];
  window.__console = [];
  window.__errors = [];
  window.__times = {};
  window.__forms = {};
  window.__fields = {};

  function text(x) {
    if (typeof x === "string") return x;
    if (x instanceof Error) return x.name + ": " + x.message;
    try { return JSON.stringify(x); } catch (e) { return String(x); }
  }

  // A JSON copy taken now: a state object reused or changed later must not change what was seen.
  function snap(x) {
    if (x === undefined) return null;
    if (x instanceof Error) {
      return {__error: String(x.name), message: String(x.message), code: x.code === undefined ? null : x.code};
    }
    try { return JSON.parse(JSON.stringify(x)); } catch (e) { return "[not JSON: " + typeof x + "]"; }
  }

  function message(e) { return String((e && e.message) || e); }

  window.addEventListener("error", function (e) { window.__errors.push(String(e.message)); });
  window.addEventListener("unhandledrejection", function (e) {
    window.__errors.push("unhandled rejection: " + message(e.reason));
  });
  window.addEventListener("message", function (e) {
    window.__messages.push({origin: e.origin, data: snap(e.data)});
  });
  ["log", "info", "warn", "error", "debug"].forEach(function (level) {
    var original = console[level];
    console[level] = function () {
      var parts = [];
      for (var i = 0; i < arguments.length; i++) parts.push(text(arguments[i]));
      window.__console.push({level: level, text: parts.join(" ")});
      return original.apply(console, arguments);
    };
  });

  function watch(src, obj, names) {
    names.forEach(function (name) {
      try {
        obj.on(name, function () {
          var args = Array.prototype.slice.call(arguments);
          window.__events.push({src: src, event: name, data: snap(args[0]), more: args.slice(1).map(snap),
                                t: performance.now()});
        });
      } catch (e) {
        window.__events.push({src: src, event: "on-threw", data: {event: name, message: message(e)}, more: [],
                              t: performance.now()});
      }
    });
  }

  var FIELD_EVENTS = ["ready", "change", "focus", "blur", "enter", "error"];
  var FORM_EVENTS = ["ready", "change", "error", "progress"];
  var REVEAL_EVENTS = ["ready", "revealed", "error"];

  var h = {};

  // Cloak.form(name[, options]) as form `key`; its events are recorded with src "form:<key>".
  h.form = function (key, name, options) {
    var times = {start: performance.now()};
    window.__times[key] = times;
    try {
      var form = options ? Cloak.form(name, options) : Cloak.form(name);
      times.created = performance.now();
      window.__forms[key] = form;
      try {
        form.on("ready", function () { if (times.ready === undefined) times.ready = performance.now(); });
      } catch (e) { /* recorded by watch below */ }
      watch("form:" + key, form, FORM_EVENTS);
      return {ok: true};
    } catch (e) {
      return {ok: false, error: message(e), name: String(e && e.name)};
    }
  };

  // form.field(target, options) (or form.card / form.file with method "card" / "file"); events recorded with src `src`.
  h.field = function (key, src, target, options, method) {
    try {
      var form = window.__forms[key];
      var field = form[method || "field"](target, options);
      window.__fields[src] = field;
      if (field && typeof field.on === "function") watch(src, field, FIELD_EVENTS);
      return {ok: true, returned: typeof field};
    } catch (e) {
      return {ok: false, error: message(e), name: String(e && e.name)};
    }
  };

  // The four fields of the checkout form in #number, #exp, #cvc and #holder (src: number, exp, cvc, holder).
  h.checkout = function (key, extra) {
    var made = h.form(key, "checkout");
    if (!made.ok) return {form: made};
    var specs = [["number", "card_data.card_number"], ["exp", "card_data.exp_date"], ["cvc", "card_data.card_cvc"],
                 ["holder", "card_data.card_holder"]];
    var out = {form: made};
    specs.forEach(function (s) {
      var options = {name: s[1]};
      var more = (extra && extra[s[0]]) || {};
      for (var k in more) options[k] = more[k];
      out[s[0]] = h.field(key, s[0], "#" + s[0], options);
    });
    return out;
  };

  h.reveal = function (src, target, options) {
    try {
      var shown = Cloak.reveal(target, options);
      window.__fields[src] = shown;
      if (shown && typeof shown.on === "function") watch(src, shown, REVEAL_EVENTS);
      return {ok: true};
    } catch (e) {
      return {ok: false, error: message(e)};
    }
  };

  // Calls a method of a recorded field or form: field.clear(), field.focus(), form.destroy().
  h.call = function (src, method) {
    try {
      var obj = window.__fields[src] || window.__forms[src];
      var r = obj[method]();
      return {ok: true, returned: typeof r};
    } catch (e) {
      return {ok: false, error: message(e)};
    }
  };

  // form.submit(kind[, options]); `done` receives {resolved, status, body} or {rejected, error} or {threw}.
  h.submit = function (key, kind, options, done) {
    var p;
    try {
      p = options ? window.__forms[key].submit(kind, options) : window.__forms[key].submit(kind);
    } catch (e) {
      done({threw: message(e)});
      return;
    }
    Promise.resolve(p).then(function (r) {
      done({resolved: true, status: r && r.status, body: snap(r && r.body), keys: r ? Object.keys(r) : []});
    }, function (e) {
      done({rejected: true, error: message(e)});
    });
  };

  // Events of `src` (null: any) named `event` (null: any) from index `since` on.
  h.ev = function (src, event, since) {
    var out = [];
    for (var i = since || 0; i < window.__events.length; i++) {
      var e = window.__events[i];
      if ((src === null || e.src === src) && (event === null || e.event === event)) {
        out.push({i: i, src: e.src, event: e.event, data: e.data, more: e.more});
      }
    }
    return out;
  };

  h.count = function () { return window.__events.length; };

  // The last change event of `src` and how many events there are: what the parity test polls.
  h.lastChange = function (src) {
    for (var i = window.__events.length - 1; i >= 0; i--) {
      var e = window.__events[i];
      if (e.src === src && e.event === "change") return {i: i, n: window.__events.length, data: e.data, more: e.more};
    }
    return {i: -1, n: window.__events.length, data: null};
  };

  // Every iframe of the document: where it is and how it looks.
  h.frames = function () {
    return Array.prototype.map.call(document.querySelectorAll("iframe"), function (f) {
      var slot = f.parentElement && f.parentElement.closest("[id]");
      var box = f.getBoundingClientRect();
      return {slot: slot ? slot.id : null, name: f.name || f.getAttribute("name"), title: f.getAttribute("title"),
              height: box.height, width: box.width, src: f.src, tabIndex: f.tabIndex};
    });
  };

  window.__h = h;
})();
