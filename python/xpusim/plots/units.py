"""Quantities as a reader reads them, one way on every page and axis: a value in base units (s, J,
W, B, B/s, Hz, ...) shown with the SI prefix that keeps it between 1 and 1000 ("2.468 ms",
"3.35 TB/s"), bytes with binary prefixes ("80 GiB") as xpusim's terminal output does, and
seconds never above "s". parse() reads such a text back: "300 W", "5.23 GT/s", "50 MiB"."""
import math
import re

_DECIMAL = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "u"),
            (1e-9, "n"), (1e-12, "p"), (1e-15, "f")]
_BINARY = [(1024.0 ** 5, "Pi"), (1024.0 ** 4, "Ti"), (1024.0 ** 3, "Gi"), (1024.0 ** 2, "Mi"), (1024.0, "Ki"), (1.0, "")]
_PREFIX = {p: s for s, p in _DECIMAL if p} | {p: s for s, p in _BINARY if p} | {"K": 1e3, "µ": 1e-6, "μ": 1e-6}
# The units an SI prefix may stand before in an axis's values ("ms", "GT/s", "TB/s", "kW").
_BASE_UNITS = {"s", "J", "W", "Wh", "V", "A", "Hz", "B", "b", "bit", "B/s", "b/s", "bit/s", "T/s", "FLOP", "FLOPS",
               "FLOP/s", "OPS", "OP/s", "B/cycle", "J/bit", "J/token"}


def _number(v, digits):
    t = f"{v:.{digits}g}"
    if "e" in t:  # %g's exponent form: written out (large ones whole, small ones in decimals)
        if abs(v) >= 1:
            t = f"{v:.0f}"
        else:
            t = f"{v:.{digits - 1 - math.floor(math.log10(abs(v)))}f}".rstrip("0").rstrip(".")
    return t


def fmt(value, unit="", digits=4):
    """`value` (in base units) as text with its unit and a prefix: fmt(0.002468, "s") is "2.468 ms"."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0" + (f" {unit}" if unit else "")
    a = abs(value)
    if not unit:  # a plain count or ratio: prefixes only for large ones
        if a < 1e4 and float(_number(a, digits)) < 1e4:
            return _number(value, digits)
        steps = [s for s in _DECIMAL if s[0] >= 1]
    elif unit == "B":
        steps = _BINARY
    elif unit == "s":
        steps = [s for s in _DECIMAL if s[0] <= 1]
    else:
        steps = _DECIMAL
    at = len(steps) - 1
    for i, (s, _) in enumerate(steps):
        if a >= s * (1 - 1e-12):
            at = i
            break
    # A value that rounds up to the next prefix's 1 (999.96 W at four digits) is written with it.
    base = 1024.0 if unit == "B" else 1000.0
    if at > 0 and abs(float(_number(a / steps[at][0], digits))) >= base:
        at -= 1
    scale, prefix = steps[at]
    return f"{_number(value / scale, digits)} {prefix}{unit}".rstrip()


_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-zµμ/%^0-9]*)\s*$")


def parse(text):
    """(value in base units, unit) for a number with an optional unit ("300 W" -> (300.0, "W"),
    "5.23 GT/s" -> (5.23e9, "T/s"), "66" -> (66.0, "")), or None for anything else ("bf16")."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return (float(text), "")
    m = _QUANTITY.match(str(text))
    if not m:
        return None
    value, word = float(m.group(1)), m.group(2)
    if word and word[0].isdigit():
        return None
    if word in ("k", "K", "M", "G", "T"):  # a bare multiplier: 1k is 1000
        return value * _PREFIX[word], ""
    for p in ("Ki", "Mi", "Gi", "Ti", "Pi"):
        if word.startswith(p) and word[2:] in ("B", "b", "bit"):
            return value * _PREFIX[p], word[2:]
    # A prefix only before a unit it can scale: "8 GPUs" and "4 nodes" are counts of things.
    if len(word) > 1 and word[0] in _PREFIX and word[1:] in _BASE_UNITS:
        return value * _PREFIX[word[0]], word[1:]
    return value, word


def parse_all(texts):
    """([values in base units], unit) when every text is a number in one unit, else None."""
    got = [parse(t) for t in texts]
    if not got or any(g is None for g in got) or len({g[1] for g in got}) != 1:
        return None
    return [g[0] for g in got], got[0][1]
