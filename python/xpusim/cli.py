"""The Python commands' command lines (xpusim serve, xpusim-trace.py) as the binary's behave: a
mistyped flag or choice is one line naming it with what it may have meant (exit 2, as `xpusim
run` does), times carry their units, and a long first run says what it is simulating and how
long it has left.
"""
import argparse
import concurrent.futures
import difflib
import math
import re
import sys
import threading
import time

TIME_UNITS = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}  # per second


class UsageError(ValueError):
    """A flag or value a parser could not take (raise_usage parsers raise it instead of exiting)."""


class Parser(argparse.ArgumentParser):
    """argparse, whose errors are one line: the flag or value it could not take, what it may have
    meant, and where the options are listed (exit 2); with raise_usage set, a UsageError with
    that line instead (for callers in process, such as the Python API)."""

    raise_usage = False

    def error(self, message):
        hint = ""
        m = re.match(r"unrecognized arguments: (.*)", message)
        if m:
            flags = [w for w in m.group(1).split() if w.startswith("-")]
            known = [o for o in self._option_string_actions if o.startswith("--")]
            word = flags[0] if flags else m.group(1).split()[0]
            near = difflib.get_close_matches(word.split("=")[0], known, n=1, cutoff=0.6)
            message = f"unknown option {word}" if flags else f"unexpected argument {word}"
            hint = f" (did you mean {near[0]}?)" if near else ""
        m = re.match(r"argument (\S+): invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            choices = [c.strip(" '") for c in m.group(3).split(",")]
            near = difflib.get_close_matches(m.group(2), choices, n=1, cutoff=0.5)
            message = f"{m.group(1)} {m.group(2)}: not one of {', '.join(choices)}"
            hint = f" (did you mean {near[0]}?)" if near else ""
        if self.raise_usage:
            raise UsageError(f"{message}{hint}")
        self.exit(2, f"error: {self.prog}: {message}{hint}; see `{self.prog} --help`\n")


def time_value(text):
    """A time with its unit (500ms, 0.5 s, 200us), in seconds: positive and finite. An argparse
    type: a bare number is refused, as every other xpusim command refuses one."""
    m = re.fullmatch(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([a-z]*)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a time with its unit, e.g. 500ms or 0.5s")
    if m.group(2) not in TIME_UNITS:
        raise argparse.ArgumentTypeError(
            f"{text!r}: " + (f"unknown unit {m.group(2)!r}" if m.group(2) else "a time needs its unit") +
            " (s, ms, us or ns, e.g. 500ms)")
    v = float(m.group(1)) / TIME_UNITS[m.group(2)]
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"{text!r}: must be a positive time")
    return v


def ms_text(seconds):
    """A time as the flags take it back: 500 ms, 1.5 s."""
    return f"{seconds:g} s" if seconds >= 1 else f"{seconds * 1e3:g} ms"


def clock_text(seconds):
    s = int(round(seconds))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class Counter:
    """`what: n of N, time` on standard error as a long script's runs finish, so that it is seen to
    move: rewritten in place on a terminal, elsewhere (a log, ctest) a line at each tenth and at
    the end. tick() may be called from several threads."""

    def __init__(self, what, total, stream=None):
        self.what, self.total, self.n = what, total, 0
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.lock = threading.Lock()
        self.t0 = time.monotonic()

    def tick(self):
        with self.lock:
            self.n += 1
            text = f"{self.what}: {self.n} of {self.total}, {clock_text(time.monotonic() - self.t0)}"
            if self.tty:
                self.stream.write("\r" + text + ("\n" if self.n == self.total else "\x1b[K"))
            elif self.n == self.total or self.n * 10 // self.total != (self.n - 1) * 10 // self.total:
                self.stream.write(text + "\n")
            self.stream.flush()


def counted_map(what, jobs, fn, items):
    """fn over items on `jobs` threads, the results in order, each one counted on standard error
    as it finishes (Counter)."""
    counter = Counter(what, len(items))

    def one(x):
        result = fn(x)
        counter.tick()
        return result
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, items))


class Progress:
    """What a run says while it simulates step shapes, on standard error. A serving run finds the
    shapes it needs as its scheduler reaches them, a few at a time, so on a terminal one line
    counts them as they go (done, found so far, time spent, and the time the current batch has
    left); elsewhere (a log, a sweep) one line at the end says how many took how long. -q: nothing;
    -v: a line per shape as well."""

    def __init__(self, verbosity=0, stream=None):
        self.verbosity = verbosity
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.lock = threading.Lock()
        self.found = self.done_count = 0
        self.spent = 0.0  # seconds of simulation batches before the current one
        self.t0 = self.batch_t0 = 0.0
        self.batch = self.batch_done = 0

    def say(self, text, end="\n"):
        if self.verbosity >= 0:
            self.stream.write(text + end)
            self.stream.flush()

    def start(self, total):
        self.batch, self.batch_done, self.batch_t0 = total, 0, time.monotonic()
        self.found += total
        self.line()

    def line(self):
        if self.tty and self.verbosity == 0:
            now = time.monotonic()
            elapsed = self.spent + now - self.batch_t0
            left = (now - self.batch_t0) / self.batch_done * (self.batch - self.batch_done) if self.batch_done else None
            self.say(f"\rsimulating step shapes: {self.done_count} of {self.found} found so far done, "
                     f"{clock_text(elapsed)}" + (f", this batch about {clock_text(left)} more" if left is not None else "") +
                     "\x1b[K", end="")

    def done(self, label, seconds):
        with self.lock:
            self.done_count += 1
            self.batch_done += 1
            if self.verbosity > 0:
                self.say(f"  {label}: {seconds:.1f} s ({self.done_count} of {self.found})")
            self.line()

    def end(self):
        self.spent += time.monotonic() - self.batch_t0

    def close(self):
        """The run's last word on its simulations (nothing when it needed none)."""
        if not self.found:
            return
        if self.tty and self.verbosity == 0:
            self.say("\r\x1b[K", end="")
        self.say(f"simulated {self.found} step shape{'s' if self.found != 1 else ''} in {clock_text(self.spent)}")
