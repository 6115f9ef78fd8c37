#!/usr/bin/env python3
"""Writes Tests/Fixtures/collect-cases.json: the inputs the browser parity test types into Cloak
Elements' fields, one list per field kind.

Every card number, expiry, CVC, SSN, date and cardholder-name input that a test of
Tests/CloakCoreTests uses (CardBrandTests, LuhnTests, ExpiryTests, FormValidationTests,
DateFormatTests, FieldTypeTests, FormatPatternTests), including the numbers those tests build with
`TestLuhn.number(prefix:length:)` and `TestLuhn.broken(_:)` (re-derived here the same way), plus a
few forms a person types on the way (partial numbers, spaces). Inputs that are not printable ASCII
are left out: the browser test types with a keyboard, and non-ASCII input is the server fallback's
job, tested separately (`identity_name`). Left out for that reason: "4\\n", "4111111111111111\\n",
Arabic-Indic and full-width digits (LuhnTests), "٤…", "Jöhn", "Jöe", "Zoë Doe", "a\\r\\nb",
"John\\tDoe" and "123\\t45\\t6789".

Only inputs: the server's "today" is the real date, so the expected state of an expiry comes from
the running server (`POST /forms/{form}/validate`), never from this file.

One table beside them, `maskEdits` (issue 44): edits of a field with a Basis Theory mask, the
checkout form's `billing.phone` (its mask, transform and validation as config/cloak.yaml has them),
each with the text and caret expected after it, written here by hand. Every client runs it:
CloakCore (`InputMask.edit`, MaskEditingTests), CloakCollect (`CloakField.replace`,
EditingTableTests; ConformanceTests compares the state after each edit with the live server's),
and Cloak Elements in Chromium (elements_test.py `masks`, which also compares each state with
`/validate`'s). An edit is a UTF-16 range of the shown text and what replaces it (UIKit's
`NSRange` and replacement string); a deletion replaces its range with "".

Usage: python3 Tests/Browser/make_collect_cases.py   (from the repository root)
"""
import json
import os
import sys


def luhn_sum(digits):
    total = 0
    for offset, d in enumerate(reversed(digits)):
        if offset % 2 == 1:
            d *= 2
            total += d - 9 if d > 9 else d
        else:
            total += d
    return total


def check_digit(partial):
    return (10 - luhn_sum([int(c) for c in partial] + [0]) % 10) % 10


def number(prefix, length, filler="0"):
    """TestLuhn.number: prefix, filler digits, check digit."""
    body = prefix + filler * (length - 1 - len(prefix))
    return body + str(check_digit(body))


def broken(n):
    """TestLuhn.broken: the last digit changed so the number fails Luhn."""
    return n[:-1] + str((int(n[-1]) + 1) % 10)


def printable_ascii(s):
    return all(32 <= ord(c) < 127 for c in s)


# CardBrandTests.detection (brand detection on raw prefixes)
DETECTION = """
4 41 4111111111111111 43 40117 401177 401180 4025 4027 4404 4914 41750 417501 43127
401178 401179 4011780000000000 431274 438935 451416 457393 457631 457632 504175 506699 506700 506779
509000 627780 636297 636368 650031 650035 650040 650049 650050 650051 650405 650409 650430 650439
650485 650489 650490 650499 650500 650529 650530 650538 650541 650700 650720 650901 650920 650969
650970 650978 651652 655000 655021
650034 650052 650404 650410 650484 650539 650540 650919 650979 651651 655001 655020 6500 650
4026 402600 417500 4405 4508 4844 4913 4917
5018 5020 5038 6304 6304000000000000 639000 639099 670000 679999 6759649826438453
600 6000 6007220000000004 5019 5019717010103742
510000 555555 559999 5555555555554444 222100 222999 22300 223000 229999 230000 269999 270000 271999
272000 272099 2223003122003222
34 37 378282246310005
60 601 6010 6012 6062 606282 609999 6062826786276634 384100 384140 384160 637095 637568
36 38 39 300 305 309 3000 3001 38410 384101 30569309025904
6011 601100 6011111111111117 65 644 649 622 6221 6229
62 621 623 629 62778 627781 6200000000000005
35 3528 3530111333300000 2131 213100 1800 180000
0 1 2 3 5 6 7 8 9 30 301 304 308 31 63 643 6390 67 67000 55 5555 55555 500000 506780 560000 22 2221
22210 222000 2230 2720 272100 280000 213 2130 180 1801 9999999999999999
4a abc
""".split() + ["", " 4", "4111 1111"]

# CardBrandTests.validNumbers
VALID_NUMBERS = [
    ("4111111111111111", "visa"), ("4012888888881881", "visa"), ("4222222222222", "visa"),
    (number("4", 19), "visa"),
    ("5555555555554444", "mastercard"), ("5105105105105100", "mastercard"), ("2223003122003222", "mastercard"),
    (number("272099", 16), "mastercard"),
    ("378282246310005", "amex"), ("371449635398431", "amex"), ("340000000000009", "amex"),
    ("6011111111111117", "discover"), ("6011000990139424", "discover"),
    (number("644", 19), "discover"), (number("6221", 17), "discover"),
    ("3530111333300000", "jcb"), ("3566002020360505", "jcb"), (number("2131", 16), "jcb"),
    (number("1800", 19), "jcb"),
    ("30569309025904", "dinersClub"), ("38520000023237", "dinersClub"), ("36227206271667", "dinersClub"),
    (number("300", 16), "dinersClub"), (number("36", 19), "dinersClub"),
    ("6200000000000005", "unionpay"), ("6200000000000004", "unionpay"), ("6212345678901234567", "unionpay"),
    ("62123456789012345", "unionpay"),
    (number("401178", 16), "elo"), (number("509000", 16), "elo"),
    (number("650031", 16), "elo"), (number("636368", 16), "elo"),
    (number("4026", 16), "visaElectron"), (number("417500", 16), "visaElectron"),
    (number("4917", 16), "visaElectron"),
    ("6759649826438453", "maestro"), (number("6304", 12), "maestro"),
    (number("6304", 19), "maestro"), (number("5018", 16), "maestro"),
    (number("639000", 15), "maestro"), (number("670000", 13), "maestro"),
    ("6007220000000004", "forbrugsforeningen"), (number("600", 16), "forbrugsforeningen"),
    ("5019717010103742", "dankort"),
    ("6062826786276634", "hipercard"), (number("384100", 19), "hipercard"),
    (number("609", 14), "hipercard"), (number("637568", 16), "hipercard"),
]

# CardBrandTests.onlyTheBrandsLengthsAreAccepted: one prefix per brand, 10 to 20 digits
LENGTH_PREFIXES = ["401178", "4026", "6304", "600", "5019", "4111", "555555", "37", "606282", "36", "6011", "62", "35"]


def card_cases():
    cases = list(DETECTION)
    cases += [n for n, _ in VALID_NUMBERS]
    cases += [broken(n) for n, brand in VALID_NUMBERS if brand != "unionpay"]
    for length in range(16, 20):  # unionPayHasNoChecksum
        cases += [number("62", length), broken(number("62", length))]
    for prefix in LENGTH_PREFIXES:
        cases += [number(prefix, length) for length in range(10, 21)]
    cases += [number("4026", 13), number("4111", 13)]  # visaElectronIsNotValidAtThirteenDigitsEvenThoughVisaIs
    cases += ["4111 1111 1111 1111", "4111-1111-1111-1111", "", "abcdabcdabcdabcd", "4111111111111111 "]
    unknown9 = number("9", 16)
    cases += [unknown9, number("9", 17), number("0", 19), number("9", 15), number("9", 20), broken(unknown9),
              "9a99999999999999", number("4", 17)]
    # custom brands and accepted lists (the same inputs; the parity form uses the standard brands)
    cases += ["4012888888881881", number("411111", 13), number("9", 18), broken(number("9", 18)),
              "6221260000000000", "6011111111111117", "5555555555554444"]
    # LuhnTests
    cases += ["4111111111111111", "5555555555554444", "378282246310005", "6011111111111117", "3530111333300000",
              "30569309025904", "6200000000000005", "4222222222222", "000000000", "000000018", "79927398713"]
    cases += ["4111111111111112", "5555555555554445", "378282246310006", "79927398710", "000000001"]
    cases += ["", "0", "18", "0000", "00000000", "4111118", "42424242", "00000018"]
    cases += ["4111 1111 1111 1111", "4111-1111-1111-1111", "411111111111111a", "a4111111111111111",
              " 4111111111111111", "+4111111111111111", "-4111111111111111", "4111111111111111.0"]
    # FormValidationTests.cardCases and the card inputs of the other FormValidationTests
    cases += ["4111 1111 1111 1111", "4111111111111111", "4222222222222", number("4", 19), "5555 5555 5555 4444",
              "2223003122003222", number("6304", 16), number("6304", 13), number("6304", 12), number("4026", 16),
              "3782 822463 10005", "6011111111111117", "3530111333300000", "30569309025904", "6200000000000005",
              number("401178", 16), "6062826786276634", "5019717010103742", "6007220000000004",
              "4111111111111112", "4111 1111 1", "378282246310006", number("9", 16), ""]
    cases += ["7" * 25, "7777 7777 7777 7777 777", "7777 7777 7777", "7777 7777 ABCD", number("8", 10)]
    cases += ["378282246310005", "3782", "9999"]  # cvcLengthsFollowTheLinkedCardBrand's card values
    # FormatPatternTests
    cases += [" 4111.1111/1111_1111 ", "41111111111111112222", "4111 1111 1111 1111 2222", "3782 822463 100051",
              "4111a1111 1111 1111"]
    # typed on the way: partial numbers and spaces
    cases += ["41", "4111 1111", "4111 11", "4111 1111 1111 111", "5555 5555", "3782 822463", "4 1 1 1"]
    return cases


def exp_cases():
    # ExpiryTests (every format's inputs; the parity field is shortYear), FieldTypeTests.expDateRegex,
    # FormValidationTests.defaultRulesPerFieldType, DateFormatTests, FormatPatternTests
    cases = """
    1126 1026 1226 0127 1225 0146 1246 0147 1299 0026 1326 9926 112 11260 11/26 ab26 11ab 112026
    102026 122046 012047 122025 002030 132030 1120260 11/2026
    2611 2610 4612 4701 2600 2613 261 202611 202610 204612 204701 203000 203013 2611
    102027 0199 0100 0601 1221 1247 0148 1230 123012 12/30 1230 01/2030 012030 00/30 13/30 1/30 12/3
    12/203 12-30 12//30 11/26 10/26 12/2030 2030/12 30/12 11/25 1125 122030 12/ab 10/2027 1a2/30 1x2/30
    """.split()
    cases += ["", "12 / 30"]
    # typed on the way
    cases += ["1", "12", "12/", "12/3", "1/2", "0", "09/3", "1 2 / 3 0"]
    return cases


def cvc_cases():
    # FormValidationTests (CVC lengths, patterns), FieldTypeTests.cvcRegex, ValidationRuleTests (length match)
    cases = ["1234", "123", "12", "1", "1a", "12345", "", "12a", " 12", "737", "0000"]
    cases += ["1 2 3", "12 34"]
    return cases


def ssn_cases():
    # FormValidationTests (last4, default rules), FieldTypeTests.ssnRegex, FormatPatternTests
    cases = ["123-45-6789", "123456789", "123 45 6789", "000-12-3456", "123-45-678", "", "123-45 6789",
             "666-12-3456", "900-12-3456", "123-00-6789", "123-45-0000", "123--45-6789", "12-345-6789"]
    cases += ["123", "123-45", "123-45-", "1234567890"]
    return cases


def date_cases():
    # DateFormatTests (inputs of every format; the parity field is mmddyyyy), FieldTypeTests.dateRegex,
    # FormValidationTests.defaultRulesPerFieldType, FormatPatternTests
    cases = """
    02292024 02292023 02292000 02291900 12312020 01012020 04312020 13012020 00012020 0229202 022920240
    ab012020 02/29/24 02-29-2024 29022024 29022023 31122020 31042020 20240229 20230229 20201231 20201331
    2020-1-1 05/02/2016 12/31/2020 12-31-2020 2020.12.31 12..31..2020 12/31-2020 12/31/2020/ 12/31 /12/31
    ab 12/31//2020 06152020 12312019 01012021 02302020 1231202 12319999 01010001 02/29/2024 20200101
    20210101 2020/12/31 31.12.2020 02/30/2020 12/31/20 garbage 2016-05-02 02.05.2016 123120 1/31/2020
    12/31/202
    """.split()
    cases += ["", "12 / 31 / 2020"]
    # typed on the way
    cases += ["1", "12", "12/3", "12/31/", "12/31/2"]
    return cases


def name_cases():
    # FieldTypeTests.cardHolderNameRegex, FormValidationTests, FormatPatternTests
    cases = ["Jo", "Joe Business", "O'Brien-Smith, Jr.", "R2 D2", "J", "", "John_", "Jane@Doe", "Jane", "Joe",
             "Jane Doe", "  x-y "]
    cases += ["J.", "Mary-Jane O'Neil", " "]
    return cases


# --- masks while typing ---------------------------------------------------------------------

PHONE_MASK = [{"literal": "("}] + [{"regex": "\\d"}] * 3 + [{"literal": ")"}] + [{"regex": "\\d"}] * 3 + \
    [{"literal": "-"}] + [{"regex": "\\d"}] * 4


def edit(start, end, text, shown, caret):
    return {"range": [start, end], "text": text, "shown": shown, "caret": caret}


def type_at(offset, text, shown, caret):
    """Typing (or pasting) `text` at the caret."""
    return edit(offset, offset, text, shown, caret)


def delete(start, end, shown, caret):
    """A backspace over [start, end) (a selection deleted)."""
    return edit(start, end, "", shown, caret)


def mask_cases():
    return [
        {"what": "typing 5551234567 one key at a time", "edits": [
            type_at(0, "5", "(5", 2), type_at(2, "5", "(55", 3), type_at(3, "5", "(555", 4),
            type_at(4, "1", "(555)1", 6), type_at(6, "2", "(555)12", 7), type_at(7, "3", "(555)123", 8),
            type_at(8, "4", "(555)123-4", 10), type_at(10, "5", "(555)123-45", 11),
            type_at(11, "6", "(555)123-456", 12), type_at(12, "7", "(555)123-4567", 13)]},
        {"what": "a paste of 5551234567", "edits": [type_at(0, "5551234567", "(555)123-4567", 13)]},
        {"what": "a paste with the mask's literals, other separators and a space", "edits": [
            type_at(0, "(555) 123-4567", "(555)123-4567", 13)]},
        {"what": "a character the position's pattern refuses is dropped", "edits": [
            type_at(0, "a", "", 0), type_at(0, "5", "(5", 2), type_at(2, "a", "(5", 2),
            type_at(2, "5x5", "(555", 4), type_at(4, " ", "(555", 4), type_at(4, "-", "(555", 4)]},
        {"what": "typed literals are accepted in place", "edits": [
            type_at(0, "(", "(", 1), type_at(1, "555", "(555", 4), type_at(4, ")", "(555)", 5),
            type_at(5, "x", "(555)", 5), type_at(5, "123-", "(555)123-", 9), type_at(9, "4567", "(555)123-4567", 13)]},
        {"what": "input past the mask's end is dropped", "edits": [
            type_at(0, "5551234567", "(555)123-4567", 13), type_at(13, "8", "(555)123-4567", 13),
            type_at(1, "99", "(555)123-4567", 1), type_at(6, "0", "(555)123-4567", 6)]},
        {"what": "a paste in the middle", "edits": [
            type_at(0, "5554567", "(555)456-7", 10), type_at(5, "123", "(555)123-4567", 8),
            # over a selection: what followed keeps its place, what does not fit is dropped
            edit(5, 8, "98765", "(555)987-4567", 8)]},
        {"what": "the caret stays right after what the edit inserted", "edits": [
            type_at(0, "555123", "(555)123", 8), type_at(1, "9", "(955)512-3", 2),
            type_at(6, "8", "(955)581-23", 7), type_at(4, "0", "(955)058-123", 6)]},
        {"what": "backspace over a literal deletes the character before it", "edits": [
            type_at(0, "5551234", "(555)123-4", 10), delete(8, 9, "(555)124", 7), delete(4, 5, "(551)24", 3),
            # nothing before the first literal: nothing is deleted
            delete(0, 1, "(551)24", 0),
            # no literal is left trailing
            delete(6, 7, "(551)2", 6), delete(5, 6, "(551", 4), delete(1, 4, "", 0)]},
        {"what": "deleting a selection in the middle closes the gap", "edits": [
            type_at(0, "5551234567", "(555)123-4567", 13), delete(5, 6, "(555)234-567", 5),
            delete(0, 12, "", 0)]},
    ]


def mask_table():
    return {
        "form": "checkout", "field": "billing.phone", "mask": PHONE_MASK,
        "transform": {"matcher": "[()-]", "replacement": ""},
        "validation": [{"pattern": "^\\d{10}$", "error": "PHONE_VALIDATION_ERROR"}],
        "cases": mask_cases(),
    }


def write_mask_table(f, table):
    f.write('  "maskEdits": {\n')
    for key in ["form", "field", "mask", "transform", "validation"]:
        f.write(f"    {json.dumps(key)}: {json.dumps(table[key])},\n")
    f.write('    "cases": [\n')
    for i, case in enumerate(table["cases"]):
        f.write(f'      {{"what": {json.dumps(case["what"])}, "edits": [\n')
        lines = [f"        {json.dumps(e, ensure_ascii=False)}" for e in case["edits"]]
        f.write(",\n".join(lines) + "\n")
        f.write("      ]}" + ("," if i < len(table["cases"]) - 1 else "") + "\n")
    f.write("    ]\n  }\n")


def main():
    out = {"card": card_cases(), "exp": exp_cases(), "cvc": cvc_cases(), "ssn": ssn_cases(),
           "date": date_cases(), "name": name_cases()}
    for kind, cases in out.items():
        seen, unique = set(), []
        for c in cases:
            if not printable_ascii(c):
                sys.exit(f"{kind}: {c!r} is not printable ASCII")
            if c not in seen:
                seen.add(c)
                unique.append(c)
        out[kind] = unique
    masks = mask_table()
    for case in masks["cases"]:
        for e in case["edits"]:
            if not printable_ascii(e["text"] + e["shown"]):
                sys.exit(f"maskEdits: {case['what']}: {e} is not printable ASCII")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(root, "Tests", "Fixtures", "collect-cases.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("{\n")
        kinds = list(out)
        for i, kind in enumerate(kinds):
            f.write(f"  {json.dumps(kind)}: [\n")
            items = [json.dumps(c) for c in out[kind]]
            line = "    "
            lines = []
            for j, item in enumerate(items):
                piece = item + ("," if j < len(items) - 1 else "")
                if len(line) + len(piece) + 1 > 110 and line.strip():
                    lines.append(line.rstrip())
                    line = "    "
                line += piece + " "
            if line.strip():
                lines.append(line.rstrip())
            f.write("\n".join(lines) + "\n")
            f.write("  ],\n")
        write_mask_table(f, masks)
        f.write("}\n")
    print(f"{path}: " + ", ".join(f"{k} {len(v)}" for k, v in out.items())
          + f", maskEdits {sum(len(c['edits']) for c in masks['cases'])} edits")


if __name__ == "__main__":
    main()
