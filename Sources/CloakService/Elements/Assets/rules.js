/*
 * Cloak Elements: the rule engine of Cloak's frames (field and controller).
 *
 * Pure functions over the form schema served at GET /elements/v1/forms/<form>. Given a field's
 * schema entry and what was typed, it computes the field's state exactly as the server's
 * FieldProcessor and FieldResult do (mask, transform, format pattern, rules, brand, BIN, last
 * four). It only decides what it can decide with the server's meaning: input of printable ASCII
 * (0x20-0x7E) and regular expressions the server marked `browser: true` (a subset that reads the
 * same in ICU and in JavaScript). Anything else answers CloakRules.SERVER: "ask the server".
 *
 * Nothing here reads the clock, the DOM or the network, and nothing here logs.
 */
(function (global) {
  "use strict";

  /** "This needs the server": returned instead of a state or a result. */
  const SERVER = Object.freeze({ server: true });

  const PRINTABLE_ASCII = /^[\x20-\x7E]*$/;

  // --- regular expressions: the SDK's whole-string match, compiled once -----------------------

  const wholeCache = new Map();
  const globalCache = new Map();

  /** `^(?:src)$` without flags: ICU `matches()` for the browser-safe subset. Null if it does not compile. */
  function wholeRegex(src) {
    if (!wholeCache.has(src)) {
      let re = null;
      try { re = new RegExp("^(?:" + src + ")$"); } catch (e) { re = null; }
      wholeCache.set(src, re);
    }
    return wholeCache.get(src);
  }

  function matches(src, text) {
    return wholeRegex(src).test(text); // callers checked that it compiles (usable())
  }

  function globalRegex(src) {
    if (!globalCache.has(src)) {
      let re = null;
      try { re = new RegExp(src, "g"); } catch (e) { re = null; }
      globalCache.set(src, re);
    }
    return globalCache.get(src);
  }

  /** A regex the engine may run: marked browser-safe by the server, and compiling here. */
  function usableRegex(src, browser) {
    return browser === true && typeof src === "string" && wholeRegex(src) !== null;
  }

  // --- format patterns (FormatPattern.swift) --------------------------------------------------

  // `#` digit, `@` letter, `a` lowercase, `A` uppercase, `*` letter or digit (ASCII input only).
  const PLACEHOLDER = {
    "#": /[0-9]/, "@": /[A-Za-z]/, "a": /[a-z]/, "A": /[A-Z]/, "*": /[0-9A-Za-z]/,
  };

  const patternCache = new Map();

  /** The compiled pattern, or null when it is not printable ASCII (the server then decides). */
  function compilePattern(text) {
    if (!patternCache.has(text)) {
      let compiled = null;
      if (typeof text === "string" && PRINTABLE_ASCII.test(text)) {
        const kinds = text.split("").filter(function (c) { return PLACEHOLDER[c] !== undefined; });
        compiled = {
          text: text,
          kinds: kinds,
          count: kinds.length,
          allDigits: kinds.every(function (k) { return k === "#"; }),
        };
      }
      patternCache.set(text, compiled);
    }
    return patternCache.get(text);
  }

  /** Wide enough for any brand: the digits a card brand is detected from. */
  const UNKNOWN_CARD_LAYOUT = compilePattern("#### #### #### #### ###");

  /** Each type's pattern when the schema gives none (FieldType.defaultFormatPattern). */
  const DEFAULT_PATTERN = {
    none: "", cardNumber: "#### #### #### ####", expDate: "##/##", date: "##-##-####",
    cvc: "####", cardHolderName: "", ssn: "###-##-####",
  };

  /**
   * The raw text: the input's characters that fit the placeholders in turn, at most one per
   * placeholder; characters that fit the next placeholder's class are taken, others skipped.
   * An empty pattern keeps the input as it is.
   */
  function rawText(pattern, input) {
    if (pattern.text === "") return input;
    let out = "";
    let cursor = 0;
    for (let i = 0; i < pattern.kinds.length; i++) {
      const accepts = PLACEHOLDER[pattern.kinds[i]];
      while (cursor < input.length && !accepts.test(input[cursor])) cursor++;
      if (cursor >= input.length) break;
      out += input[cursor++];
    }
    return out;
  }

  /** Whether `count` ASCII digits alone are their own raw text (FormatPattern.keepsDigits). */
  function keepsDigits(pattern, count) {
    return pattern.count >= count && pattern.allDigits;
  }

  /**
   * Lays `raw` out over the pattern with the pattern's own literals, stopping after the last
   * filled placeholder (what the field shows while typing; never sent anywhere).
   */
  function layout(pattern, raw) {
    if (pattern.text === "" || raw === "") return raw;
    let out = "";
    let pending = "";
    let taken = 0;
    for (const ch of pattern.text) {
      if (PLACEHOLDER[ch] === undefined) { pending += ch; continue; }
      out += pending + raw[taken++];
      pending = "";
      if (taken === raw.length) break;
    }
    return out;
  }

  // --- masks and transforms (InputMask.swift) --------------------------------------------------

  /**
   * Applies a Basis Theory mask to the whole input: literals are filled in (and consumed when
   * typed), characters that fit no position are dropped; complete only when every position is
   * filled, nothing is left over, and the input was not empty.
   */
  function applyMask(mask, input) {
    let out = "";
    let position = 0;
    let cursor = 0;
    while (cursor < input.length) {
      if (position >= mask.length) return { value: out, complete: false }; // longer than the mask
      const p = mask[position];
      const c = input[cursor];
      if (typeof p.literal === "string") {
        out += p.literal;
        position++;
        if (c === p.literal) cursor++;
      } else {
        if (matches(p.regex, c)) {
          out += c;
          position++;
        }
        cursor++;
      }
    }
    while (position < mask.length && typeof mask[position].literal === "string") {
      out += mask[position].literal;
      position++;
    }
    return { value: out, complete: position === mask.length && input.length > 0 };
  }

  // --- masks while typing (InputMask+Editing.swift) --------------------------------------------

  /**
   * Where character `c` lands when the mask is filled up to position `q`: {at} (a pattern that
   * takes it, or a literal it equals; the literals before are filled in), {refused} (the first
   * pattern after the literals refuses it: `q` moves past those literals), or null (the mask is full).
   */
  function maskPlace(mask, c, q) {
    for (let p = q; p < mask.length; p++) {
      const m = mask[p];
      if (typeof m.literal === "string") {
        if (c === m.literal) return { at: p };
      } else {
        return matches(m.regex, c) ? { at: p } : { refused: p };
      }
    }
    return null;
  }

  /** How many of `chars` ({c, counts}) that count are placed from position `q` on. */
  function maskRoom(mask, chars, q) {
    let placed = 0;
    for (let i = 0; i < chars.length; i++) {
      const r = maskPlace(mask, chars[i].c, q);
      if (r === null) break;
      if (r.at === undefined) { q = r.refused; continue; }
      q = r.at + 1;
      if (chars[i].counts) placed++;
    }
    return placed;
  }

  /**
   * One edit of a masked field's text: UTF-16 range [start, end) of `text` replaced by
   * `inserted`. The text before the edit and the inserted characters are placed in the mask in
   * turn: a character the position's pattern refuses is dropped, literals are filled in when a
   * character after them is placed (a typed literal takes its own position), and inserted
   * characters that would push what followed the edit past the mask's end are dropped. A
   * deletion of literals only deletes the character before them; after a deletion no literal
   * trails. The caret goes right after what the edit inserted. Returns {text, caret}.
   */
  function editMask(mask, text, start, end, inserted) {
    const cells = Array.from(text);
    const offsets = [0];
    cells.forEach(function (c, i) { offsets.push(offsets[i] + c.length); });
    const total = offsets[cells.length];
    const lo = Math.min(Math.max(start, 0), total);
    const hi = Math.min(Math.max(end, lo), total);
    const isLiteral = function (i) { return i < mask.length && typeof mask[i].literal === "string"; };
    // Whole characters: the lower end rounds down, a non-empty range's upper end rounds up.
    let a = 0;
    while (a < cells.length && offsets[a + 1] <= lo) a++;
    let b = a;
    if (hi > lo) while (b < cells.length && offsets[b] < hi) b++;
    const deletion = inserted === "" && a < b;
    // A deletion of literals only (a backspace over a literal) means the character before them.
    if (deletion) {
      let onlyLiterals = true;
      for (let i = a; i < b; i++) if (!isLiteral(i)) onlyLiterals = false;
      if (onlyLiterals) {
        let p = a - 1;
        while (p >= 0 && isLiteral(p)) p--;
        if (p >= 0) a = p;
      }
    }
    const after = [];
    for (let i = b; i < cells.length; i++) after.push({ c: cells[i], counts: !isLiteral(i) });

    const out = [];
    let q = 0;
    const put = function (c, at) {
      for (let i = out.length; i < at; i++) out.push(mask[i].literal);
      out.push(c);
      q = at + 1;
    };
    const feed = function (c) {
      const r = maskPlace(mask, c, q);
      if (r === null) return false;
      if (r.at === undefined) q = r.refused;
      else put(c, r.at);
      return true;
    };
    for (let i = 0; i < a; i++) if (!feed(cells[i])) break;
    const room = maskRoom(mask, after, q);
    const typed = Array.from(inserted);
    for (let i = 0; i < typed.length; i++) {
      const r = maskPlace(mask, typed[i], q);
      if (r === null) break;
      if (r.at === undefined) { q = r.refused; continue; }
      if (maskRoom(mask, after, r.at + 1) < room) break; // what followed the edit keeps its place
      put(typed[i], r.at);
    }
    const insertedEnd = out.join("").length;
    for (let i = 0; i < after.length; i++) if (!feed(after[i].c)) break;
    if (deletion) while (out.length && isLiteral(out.length - 1)) out.pop();
    const result = out.join("");
    return { text: result, caret: Math.min(result.length, Math.max(insertedEnd, offsets[a])) };
  }

  /** A mask every position of which the browser reads as the server does (printable ASCII input). */
  function maskUsable(mask) {
    return Array.isArray(mask) && mask.length > 0 && mask.every(function (p) {
      return !!p && (typeof p.literal === "string" ? isPrintableChar(p.literal) : usableRegex(p.regex, p.browser));
    });
  }

  /**
   * The edit that turned `before` into `after` as one UTF-16 range of `before` and the text that
   * replaced it, the shortest that fits. `selection` ({start, end}, before the edit) and
   * `caret` (after it) place it where text repeats ("55" + "5"); without a selection (a value set
   * by autofill) only the caret does.
   */
  function changeOf(before, after, selection, caret) {
    let prefix = 0;
    const shortest = Math.min(before.length, after.length);
    while (prefix < shortest && before.charCodeAt(prefix) === after.charCodeAt(prefix)) prefix++;
    if (selection) prefix = Math.min(prefix, selection.start);
    if (typeof caret === "number") prefix = Math.min(prefix, Math.max(caret, 0));
    let suffix = 0;
    let most = Math.min(before.length, after.length) - prefix;
    if (selection) most = Math.min(most, before.length - selection.end);
    while (suffix < most &&
      before.charCodeAt(before.length - 1 - suffix) === after.charCodeAt(after.length - 1 - suffix)) suffix++;
    return { start: prefix, end: before.length - suffix, inserted: after.slice(prefix, after.length - suffix) };
  }

  // --- brands (CardBrandTable, PaymentCardModel, Luhn) ----------------------------------------

  /** The first brand whose regex matches the whole number, or the unknown brand. */
  function detect(ctx, number) {
    for (let i = 0; i < ctx.brands.length; i++) {
      if (matches(ctx.brands[i].regex, number)) return ctx.brands[i];
    }
    return ctx.unknown;
  }

  function brandById(ctx, id) {
    for (let i = 0; i < ctx.brands.length; i++) {
      if (ctx.brands[i].id === id) return ctx.brands[i];
    }
    return ctx.unknown;
  }

  /** The SDK's Luhn: false under 9 characters or for any non-digit. */
  function luhn(number) {
    if (number.length < 9) return false;
    let sum = 0;
    let doubled = false;
    for (let i = number.length - 1; i >= 0; i--) {
      const d = number.charCodeAt(i) - 48;
      if (d < 0 || d > 9) return false;
      sum += doubled ? (d === 9 ? 9 : (d * 2) % 9) : d;
      doubled = !doubled;
    }
    return sum % 10 === 0;
  }

  // --- dates (ExpDateFormat.swift, DateFormat.swift, CalendarDate.swift) ----------------------

  /** Swift's `Int(String)`: an optional sign and ASCII digits, nothing else; null otherwise. */
  function swiftInt(text) {
    return /^[+-]?[0-9]+$/.test(text) ? parseInt(text, 10) : null;
  }

  function isLeap(y) { return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0; }

  function daysIn(month, year) {
    if (month === 2) return isLeap(year) ? 29 : 28;
    return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
  }

  /** A real Gregorian day as {year, month, day}, or null (CalendarDate.init?). */
  function calendarDate(year, month, day) {
    if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn(month, year)) return null;
    return { year: year, month: month, day: day };
  }

  function compareDates(a, b) {
    return (a.year - b.year) || (a.month - b.month) || (a.day - b.day);
  }

  const EXP_FORMATS = {
    shortYear: { year: 2, yearFirst: false },
    longYear: { year: 4, yearFirst: false },
    shortYearThenMonth: { year: 2, yearFirst: true },
    longYearThenMonth: { year: 4, yearFirst: true },
  };

  /**
   * CardExpirationDateRule: a real month, not before today's month, at most 20 years ahead.
   * The input splits by position into month and year, each read as Swift's Int reads it (so a
   * sign is accepted); two-digit years are 20yy.
   */
  function expiryValid(input, formatName, today) {
    const format = EXP_FORMATS[formatName] || EXP_FORMATS.shortYear;
    if (input.length !== 2 + format.year) return false;
    const monthText = format.yearFirst ? input.slice(format.year) : input.slice(0, 2);
    const yearText = format.yearFirst ? input.slice(0, format.year) : input.slice(2);
    const month = swiftInt(monthText);
    const yy = swiftInt(yearText);
    if (month === null || yy === null || month < 1 || month > 12) return false;
    const year = format.year === 2 ? yy + 2000 : yy;
    if (year < today.year || year > today.year + 20) return false;
    if (year === today.year && month < today.month) return false;
    return true;
  }

  /** DateFormat.date(fromInput:): exactly 8 characters split by position, a real day. */
  function dateFromInput(input, format) {
    if (input.length !== 8) return null;
    const part = function (from, to) { return swiftInt(input.slice(from, to)); };
    let month, day, year;
    if (format === "ddmmyyyy") { month = part(2, 4); day = part(0, 2); year = part(4, 8); }
    else if (format === "yyyymmdd") { month = part(4, 6); day = part(6, 8); year = part(0, 4); }
    else { month = part(0, 2); day = part(2, 4); year = part(4, 8); }
    if (month === null || day === null || year === null) return null;
    return calendarDate(year, month, day);
  }

  function dateRangeValid(rule, input) {
    const d = dateFromInput(input, rule.format);
    if (d === null) return false;
    if (rule.start && compareDates(d, rule.start) < 0) return false;
    if (rule.end && compareDates(d, rule.end) > 0) return false;
    return true;
  }

  // --- rules (BasicRules.swift and the date rules) --------------------------------------------

  const ERROR = {
    pattern: "PATTERN_VALIDATION_ERROR",
    lengthMatch: "LENGTH_RANGE_MATCH_VALIDATION_ERROR",
    cardNumber: "CARD_NUMBER_VALIDATION_ERROR",
    maskIncomplete: "MASK_INCOMPLETE_VALIDATION_ERROR",
  };

  /** FieldType.cvc.defaultRegex: the pattern rule a linked CVC gets. */
  const CVC_REGEX = "\\d*$";

  /** The card field's detected brand is reused for the number it was detected from. */
  function cardModelFor(ctx, input, detected) {
    return detected && detected.raw === input ? detected.model : detect(ctx, input);
  }

  /** Whether `input` (printable ASCII: its length is its character count) passes `rule`. */
  function passes(rule, input, ctx, detected) {
    const n = input.length;
    switch (rule.kind) {
      case "pattern":
        return matches(rule.regex, input);
      case "length": {
        const min = typeof rule.min === "number" ? rule.min : 0;
        const max = typeof rule.max === "number" ? rule.max : Infinity;
        return min <= n && n <= max;
      }
      case "lengthMatch":
        return rule.lengths.indexOf(n) >= 0;
      case "luhn":
        return luhn(input);
      case "aba": {
        if (!/^[0-9]{9}$/.test(input)) return false;
        const d = input.split("").map(Number);
        return (3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + (d[2] + d[5] + d[8])) % 10 === 0;
      }
      case "paymentCard": {
        const model = cardModelFor(ctx, input, detected);
        if (model !== ctx.unknown) {
          if (model.lengths.indexOf(n) < 0) return false;
          return model.luhn ? luhn(input) : true;
        }
        if (!rule.validateUnknownBrand) return false;
        const u = ctx.unknown;
        return matches(u.regex, input) && u.lengths.indexOf(n) >= 0 && luhn(input);
      }
      case "expDate":
        return expiryValid(input, rule.format, ctx.today);
      case "dateRange":
        return dateRangeValid(rule, input);
      default:
        return false; // not reached: usable() sends unknown kinds to the server
    }
  }

  // --- what the browser may decide ------------------------------------------------------------

  /**
   * A CVC with a card field: the schema gives no pattern and no rules, the card's brand decides
   * them. (Swift links every CVC with a `card_field`, the unknown brand when it names no card
   * field; the schema then has `cardField: null`, and rules null as well.)
   */
  function isLinkedCvc(entry) {
    return entry.type === "cvc" && !Array.isArray(entry.rules);
  }

  const KNOWN_KINDS = {
    pattern: 1, length: 1, lengthMatch: 1, luhn: 1, aba: 1, paymentCard: 1, expDate: 1, dateRange: 1,
  };

  function isPrintableChar(c) {
    return typeof c === "string" && c.length === 1 && PRINTABLE_ASCII.test(c);
  }

  function brandUsable(b) {
    return !!b && usableRegex(b.regex, b.browser) && compilePattern(b.pattern) !== null &&
      Array.isArray(b.lengths) && Array.isArray(b.cvcLengths);
  }

  /**
   * Whether the engine can compute this field with the server's meaning for printable ASCII
   * input: every regex it uses is browser-safe, literals and replacements are printable ASCII,
   * every rule is one the engine knows.
   */
  function usable(entry, ctx) {
    const cache = ctx.usable;
    if (cache.has(entry)) return cache.get(entry);
    let ok = true;
    let needsBrands = entry.type === "cardNumber";
    const linkedCvc = isLinkedCvc(entry);
    if (entry.type !== "cardNumber" && !linkedCvc) {
      const pattern = entry.pattern === null || entry.pattern === undefined
        ? DEFAULT_PATTERN[entry.type] : entry.pattern;
      if (pattern === undefined || compilePattern(pattern) === null) ok = false;
    }
    if (entry.mask) {
      ok = ok && Array.isArray(entry.mask) && entry.mask.every(function (p) {
        return p && (typeof p.literal === "string" ? isPrintableChar(p.literal) : usableRegex(p.regex, p.browser));
      });
    }
    if (entry.transform) {
      const t = entry.transform;
      const replacement = typeof t.replacement === "string" ? t.replacement : "";
      ok = ok && t.browser === true && globalRegex(t.matcher) !== null &&
        PRINTABLE_ASCII.test(replacement) && !/[$\\]/.test(replacement);
    }
    if (!linkedCvc) {
      if (Array.isArray(entry.rules)) {
        ok = ok && entry.rules.every(function (r) {
          if (!r || !KNOWN_KINDS[r.kind] || typeof r.error !== "string") return false;
          if (r.kind === "paymentCard") needsBrands = true;
          if (r.kind === "pattern") return usableRegex(r.regex, r.browser);
          if (r.kind === "lengthMatch") return Array.isArray(r.lengths);
          return true;
        });
      } else if (entry.type !== "cardNumber") {
        ok = false; // the effective rules are not known here
      }
    }
    if (needsBrands) ok = ok && ctx.brandsUsable;
    cache.set(entry, ok);
    return ok;
  }

  // --- FieldProcessor.process ----------------------------------------------------------------

  /**
   * Mask, transform, pattern and rules: {raw, errors, model, pattern}, or SERVER.
   * `cardBrand` is the linked card's brand id, for a CVC with a card field.
   */
  function process(entry, ctx, input, cardBrand) {
    if (typeof input !== "string" || !PRINTABLE_ASCII.test(input) || !usable(entry, ctx)) return SERVER;
    let value = input;
    let maskComplete = true;
    if (entry.mask) {
      const masked = applyMask(entry.mask, value);
      value = masked.value;
      maskComplete = masked.complete;
    }
    if (entry.transform) {
      const t = entry.transform;
      value = value.replace(globalRegex(t.matcher), typeof t.replacement === "string" ? t.replacement : "");
    }
    if (!PRINTABLE_ASCII.test(value)) return SERVER; // defensive: literals and replacements are checked

    let pattern;
    let rules;
    let raw;
    let model = null;
    let detected = null;
    if (entry.type === "cardNumber") {
      // The brand is detected from the digits the widest layout reads; the number is then laid
      // out in that brand's pattern, whatever was configured (the SDK's behaviour).
      const digits = rawText(UNKNOWN_CARD_LAYOUT, value);
      const first = detect(ctx, digits);
      pattern = compilePattern(first.pattern);
      rules = Array.isArray(entry.rules) ? entry.rules
        : [{ kind: "paymentCard", validateUnknownBrand: false, error: ERROR.cardNumber }];
      const allDigits = digits.length < UNKNOWN_CARD_LAYOUT.count;
      raw = allDigits && keepsDigits(pattern, digits.length) ? digits : rawText(pattern, value);
      model = digits === raw ? first : detect(ctx, raw);
      detected = { raw: raw, model: model };
    } else {
      if (isLinkedCvc(entry)) {
        // A linked card field decides the CVC's pattern and lengths (unknown brand when none).
        const brand = brandById(ctx, cardBrand);
        const longest = brand.cvcLengths.length ? Math.max.apply(null, brand.cvcLengths) : 4;
        pattern = compilePattern("#".repeat(longest));
        rules = [
          { kind: "pattern", regex: CVC_REGEX, error: ERROR.pattern },
          { kind: "lengthMatch", lengths: brand.cvcLengths, error: ERROR.lengthMatch },
        ];
      } else {
        pattern = compilePattern(entry.pattern === null || entry.pattern === undefined
          ? DEFAULT_PATTERN[entry.type] : entry.pattern);
        rules = entry.rules;
      }
      raw = rawText(pattern, value);
    }

    const errors = [];
    for (let i = 0; i < rules.length; i++) {
      if (!passes(rules[i], raw, ctx, detected)) errors.push(rules[i].error);
    }
    if (!maskComplete) errors.push(ERROR.maskIncomplete);
    return { raw: raw, errors: errors, model: model, pattern: pattern };
  }

  // --- public API ----------------------------------------------------------------------------

  /** The engine's view of a form schema: today, the brands in detection order, the unknown brand. */
  function context(schema) {
    const brands = Array.isArray(schema.brands) ? schema.brands : [];
    const unknown = schema.unknownBrand;
    return {
      today: schema.today,
      brands: brands,
      unknown: unknown,
      brandsUsable: brandUsable(unknown) && brands.every(brandUsable),
      usable: new WeakMap(), // per schema entry: whether usable() lets the engine decide it
    };
  }

  /**
   * The field's state, keys in the server's order (FieldResult.writeStateRest), or SERVER.
   * options: {dirty: bool, cardBrand: linked card brand id (CVCs with a card field)}.
   */
  function fieldState(entry, ctx, input, options) {
    const opts = options || {};
    const result = process(entry, ctx, input, opts.cardBrand);
    if (result === SERVER) return SERVER;
    const raw = result.raw;
    const length = raw.length;
    const valid = result.errors.length === 0;
    const state = {
      isRequired: entry.required === true,
      isRequiredValidOnly: entry.requiredValidOnly === true,
      isValid: valid,
      isEmpty: length === 0,
      isDirty: opts.dirty === true,
      inputLength: length,
      validationErrors: result.errors,
    };
    if (entry.type === "cardNumber") {
      const model = result.model || ctx.unknown;
      const binLength = model.eightDigitBin ? (length >= 16 ? 8 : 0) : Math.min(6, length);
      state.cardBrand = model.id;
      state.cardBrandName = model.name;
      state.bin = valid ? raw.slice(0, binLength) : "";
      state.last4 = valid && length >= 12 ? raw.slice(length - 4) : "";
    } else if (entry.type === "ssn") {
      state.last4 = valid && length === 9 ? raw.slice(length - 4) : "";
    }
    return state;
  }

  // --- card attributes (CardAttributes.swift, FieldProcessor.process; issue 48) ----------------

  const CARD_NOT_ACCEPTED = "CARD_NOT_ACCEPTED";

  /**
   * CardAcceptRule.accepts: a card is refused only by a funding or a country its attributes give
   * and the rule's list (when it has one) lacks; what the table does not give passes.
   */
  function acceptsCard(rule, attributes) {
    if (!rule || typeof rule !== "object" || !attributes || typeof attributes !== "object") return true;
    const funding = attributes.funding;
    const country = attributes.country;
    if (Array.isArray(rule.funding) && typeof funding === "string" && rule.funding.indexOf(funding) < 0) return false;
    if (Array.isArray(rule.countries) && typeof country === "string" && rule.countries.indexOf(country) < 0) return false;
    return true;
  }

  /**
   * A card number's state (fieldState's, showing `bin`) with the attributes of that `bin`, as the
   * server writes it: `cardAttributes` after `last4`, and when the field's `accept` rule refuses
   * them, its error after the others (isValid false) while `bin` and `last4` stay shown.
   */
  function withCardAttributes(entry, state, attributes) {
    const out = Object.assign({}, state, { cardAttributes: attributes });
    if (!acceptsCard(entry.accept, attributes)) {
      const error = typeof entry.accept.error === "string" ? entry.accept.error : CARD_NOT_ACCEPTED;
      out.isValid = false;
      out.validationErrors = state.validationErrors.concat([error]);
    }
    return out;
  }

  /** Types laid out as the user types (when they have no mask and no transform). */
  const FORMATTED_TYPES = { cardNumber: 1, expDate: 1, ssn: 1, cvc: 1 };

  /**
   * The input laid out in the field's pattern (e.g. "4111 1111 1111 1111", "12/30"), or null
   * to leave it as typed. Only a text whose raw text is the same as the input's is proposed.
   */
  function format(entry, ctx, input, cardBrand) {
    if (!FORMATTED_TYPES[entry.type] || entry.mask || entry.transform) return null;
    const result = process(entry, ctx, input, cardBrand);
    if (result === SERVER || result.pattern.text === "") return null;
    const text = layout(result.pattern, result.raw);
    const again = process(entry, ctx, text, cardBrand);
    return again !== SERVER && again.raw === result.raw ? text : null;
  }

  /**
   * FormValidation.isValid: no required field empty, no required-valid-only field invalid.
   * `states` maps names to states; a field without a state counts as empty and invalid.
   */
  function formValidity(entries, states) {
    const requiredMissing = [];
    const requiredInvalid = [];
    entries.forEach(function (e) {
      const s = states[e.name];
      if (e.required === true && (!s || s.isEmpty)) requiredMissing.push(e.name);
      if (e.requiredValidOnly === true && (!s || !s.isValid)) requiredInvalid.push(e.name);
    });
    return {
      isValid: requiredMissing.length === 0 && requiredInvalid.length === 0,
      requiredMissing: requiredMissing,
      requiredInvalid: requiredInvalid,
    };
  }

  global.CloakRules = Object.freeze({
    SERVER: SERVER,
    context: context,
    fieldState: fieldState,
    format: format,
    formValidity: formValidity,
    withCardAttributes: withCardAttributes,
    acceptsCard: acceptsCard,
    /**
     * One edit of a masked field ({text, caret}), or null when the field has no mask or one the
     * browser cannot read as the server does (the text then stays as typed).
     */
    editMask: function (entry, text, start, end, inserted) {
      if (!entry || !entry.mask || !maskUsable(entry.mask)) return null;
      return editMask(entry.mask, text, start, end, inserted);
    },
    changeOf: changeOf,
    // Exposed for the frames' own checks and for tests.
    luhn: luhn,
    rawText: function (patternText, input) {
      const p = compilePattern(patternText);
      return p === null ? null : rawText(p, input);
    },
  });
})(typeof self !== "undefined" ? self : this);
