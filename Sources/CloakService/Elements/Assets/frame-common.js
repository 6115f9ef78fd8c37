/*
 * Cloak Elements: what every frame (field, controller, reveal) does first: read whom it serves
 * from its URL's fragment (never sent to the server) and check that it really is embedded by that
 * page. Loaded before the frame's own script; defines window.CloakFrame.
 */
(function () {
  "use strict";

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

  window.CloakFrame = Object.freeze({ fragmentParams: fragmentParams, decode: decode, isOrigin: isOrigin });
})();
