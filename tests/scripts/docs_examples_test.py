#!/usr/bin/env python3
"""Every command in a shell block of README.md and docs/*.md works as written, in the order the
page gives them, from a fresh folder that holds the repository's inputs and the build.

Each command is run in a form that checks all it reads without its minutes of simulation:
`xpusim run` as `xpusim check` with the same config, trace and overrides; `sweep` with
`--dry-run`; `serve` and the training planner with `--check`; the trace generator, the profile
importer and Python one-liners in full (seconds); a long script with `--help` (each is tested in full by its own
ctest entry). What a command reads that an earlier command writes (a run's or a sweep's folder,
a generated trace) must have been written by an earlier command of the page, and a sweep into a
folder an earlier command filled must say `--resume`. Commands that install or build
(quickstart.sh, test.sh, install-deps.sh, fuzz.sh, cmake --install) must exist and be executable.
`my-trace.yaml`, the README's stand-in for the user's own trace, is tests/data/gemm-small.yaml.

Usage: docs_examples_test.py XPUSIM_BINARY (run by ctest as docs.examples)."""
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XPUSIM = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else os.path.join(ROOT, "build", "xpusim")
BUILD = os.path.dirname(XPUSIM)
PAGES = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
STAND_INS = {"my-trace.yaml": os.path.join(ROOT, "tests", "data", "gemm-small.yaml")}
# Set up or build; checked to exist and be executable, not run.
NOT_RUN = {"./scripts/quickstart.sh", "./scripts/test.sh", "scripts/install-deps.sh", "scripts/fuzz.sh",
           "tests/fuzz/fuzz_import_profile.py"}
# Scripts fast enough to run as written.
RUN_AS_WRITTEN = {"scripts/xpusim-trace.py", "scripts/import-torch-profile.py"}
# Scripts with a mode that checks their inputs without simulating: the flag that selects it.
CHECK_MODE = {"scripts/xpusim-plan.py": "--check"}
# `xpusim run` options that `check` does not take: where the run writes, and how it simulates.
RUN_ONLY = {"-o": 1, "--out": 1, "--fidelity": 1, "--tolerance": 1, "-q": 0, "--quiet": 0, "-v": 0, "--verbose": 0}
ENV = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1", OMPI_ALLOW_RUN_AS_ROOT="1",
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def commands(page):
    """(line number, the command's words) of every command in the page's sh blocks, backslash
    continuations joined, comments dropped."""
    out = []
    with open(os.path.join(ROOT, page)) as f:
        lines = f.read().splitlines()
    block, i = False, 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"^```(sh|bash|shell)\s*$", line):
            block = True
        elif line.startswith("```"):
            block = False
        elif block and line.strip():
            start, text = i + 1, line
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text[:-1] + " " + lines[i]
            words = shlex.split(text, comments=True)
            if words:
                out.append((start, words))
        i += 1
    return out


def option_value(words, *names):
    for j, w in enumerate(words):
        if w in names and j + 1 < len(words):
            return words[j + 1]
        for n in names:
            if n.startswith("--") and w.startswith(n + "="):
                return w.split("=", 1)[1]
    return None


class Page:
    """One page's commands, run in order in a folder of their own."""

    def __init__(self, test, page, tmp):
        self.test, self.page, self.tmp = test, page, tmp
        self.written = set()  # folders and files the page's commands wrote so far
        self.env = dict(ENV)
        for d in ("configs", "traces", "scripts", "docs", "python", "tests"):
            os.symlink(os.path.join(ROOT, d), os.path.join(tmp, d))
        os.symlink(BUILD, os.path.join(tmp, "build"))

    def where(self, line):
        return f"{self.page}:{line}"

    def run(self, line, argv, env=None):
        r = subprocess.run(argv, cwd=self.tmp, env=env or self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=600)
        self.test.assertEqual(r.returncode, 0, f"{self.where(line)}: {' '.join(argv)}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        return r

    def exists(self, line, path):
        """A path the command reads: in the repository, or written by an earlier command."""
        norm = os.path.normpath(path)
        ok = os.path.exists(os.path.join(self.tmp, path)) or norm in self.written or \
            any(norm.startswith(w + os.sep) for w in self.written)
        self.test.assertTrue(ok, f"{self.where(line)}: reads {path}, which nothing before it on the page writes")

    def wrote(self, path):
        if path:
            self.written.add(os.path.normpath(path))

    def xpusim(self, line, words):
        sub = words[1] if len(words) > 1 else ""
        rest = [STAND_INS.get(w, w) for w in words[2:]]
        if sub in ("--help", "describe", "check"):
            return self.run(line, [XPUSIM, sub, *rest])
        if sub == "run":
            out = option_value(rest, "-o", "--out") or "xpusim-out"
            args, j = [], 0
            while j < len(rest):
                if rest[j] in RUN_ONLY:
                    j += 1 + RUN_ONLY[rest[j]]
                    continue
                args.append(rest[j])
                j += 1
            self.run(line, [XPUSIM, "check", *args])
            self.wrote(out)
        elif sub == "sweep":
            out = option_value(rest, "-o", "--out")
            if out and os.path.normpath(out) in self.written:
                self.test.assertIn("--resume", rest, f"{self.where(line)}: sweeps into {out}, which an earlier "
                                   "command filled, without --resume (the sweep refuses it)")
            self.run(line, [XPUSIM, "sweep", *rest, "--dry-run"])
            self.wrote(out)
        elif sub == "serve":
            self.run(line, [XPUSIM, "serve", *rest, "--check"])
            self.wrote(option_value(rest, "--out"))
        elif sub == "compare":
            for folder in [w for w in rest if not w.startswith("-")]:
                self.exists(line, folder)
        else:
            self.test.fail(f"{self.where(line)}: xpusim {sub}: the test does not know this command")

    def script(self, line, words):
        path = words[0]
        self.test.assertTrue(os.access(os.path.join(ROOT, path), os.X_OK), f"{self.where(line)}: {path} is not executable")
        if path in NOT_RUN:
            return
        if path in CHECK_MODE:
            flag = CHECK_MODE[path]
            self.run(line, [sys.executable, path, *words[1:], *([] if flag in words else [flag])])
            self.wrote(option_value(words, "-o", "--out"))
            return
        if path in RUN_AS_WRITTEN:
            for w in words[1:]:
                if w.endswith((".yaml", ".json", ".jsonl", ".et")) and not w.startswith("-") and \
                        option_value(words, "-o", "--out") != w:
                    self.exists(line, w)
            self.run(line, [sys.executable, path, *words[1:]])
            self.wrote(option_value(words, "-o", "--out"))
            return
        for w in words[1:]:
            if w.startswith("out/"):
                self.exists(line, w)
        self.run(line, [sys.executable, path, "--help"])

    def command(self, line, words):
        words = [os.path.expandvars(w.replace("$PWD", self.tmp)) if "$" in w else w for w in words]
        if words[0] == "export" or re.match(r"^[A-Z_]+=", words[0]) and len(words) == 1:
            for w in words[1:] if words[0] == "export" else words:
                k, v = w.split("=", 1)
                os.environ[k] = v  # for expandvars, above
                self.env[k] = os.environ[k]
            return
        env_sets = []
        while re.match(r"^[A-Z_]+=", words[0]):
            env_sets.append(words.pop(0))
        if words[0] == "mpirun":
            j = 1
            while j < len(words) and words[j].startswith("-"):
                j += 2 if words[j] in ("-np", "-n") else 1
            words = words[j:]
        if words[0] in ("build/xpusim", "xpusim"):  # xpusim: installed (cmake --install), the same binary
            return self.xpusim(line, words)
        if words[0] == "cmake":
            # Installing is tested by ctest's install.layout; the build's package stands in for it.
            self.test.assertEqual(words[1:], ["--install", "build"], f"{self.where(line)}: an unknown cmake line")
            self.env["PYTHONPATH"] = os.path.join(self.tmp, "build", "python")
            return
        if words[0] == "python3":
            env = dict(self.env, **dict(e.split("=", 1) for e in env_sets))
            if "PYTHONPATH" in env:
                env["PYTHONPATH"] = ":".join(os.path.join(self.tmp, p) if not os.path.isabs(p) else p
                                             for p in env["PYTHONPATH"].split(":"))
            if not os.path.exists(os.path.join(BUILD, "python", "xpusim")):
                return  # the Python module is not built here (no pybind11)
            self.run(line, words, env)
            return
        if words[0].startswith(("scripts/", "./scripts/", "tests/")):
            return self.script(line, words)
        self.test.fail(f"{self.where(line)}: {words[0]}: the test does not know this command")


class DocsExamples(unittest.TestCase):
    def test_every_command_of_every_page_works_as_written(self):
        saved = dict(os.environ)
        try:
            for page in PAGES:
                cmds = commands(page)
                if not cmds:
                    continue
                with tempfile.TemporaryDirectory(prefix="xpusim-docs-") as tmp:
                    p = Page(self, page, tmp)
                    for line, words in cmds:
                        with self.subTest(page=page, line=line):
                            p.command(line, words)
        finally:
            os.environ.clear()
            os.environ.update(saved)

    def test_a_command_that_reads_what_nothing_wrote_fails(self):
        # The test's own check: a compare of a folder no command wrote is caught.
        with tempfile.TemporaryDirectory() as tmp:
            p = Page(self, "example", tmp)
            p.xpusim(1, ["build/xpusim", "run", "-c", "configs/h100-sxm.yaml", "-t", "my-trace.yaml", "-o", "out/a"])
            p.xpusim(2, ["build/xpusim", "compare", "out/a"])
            with self.assertRaises(AssertionError):
                p.xpusim(3, ["build/xpusim", "compare", "out/a", "out/b"])
            p.xpusim(4, ["build/xpusim", "sweep", "configs/sweeps/hbm-x-sms.yaml", "-o", "out/s"])
            with self.assertRaises(AssertionError):
                p.xpusim(5, ["build/xpusim", "sweep", "configs/sweeps/hbm-x-sms.yaml", "-o", "out/s"])


if __name__ == "__main__":
    unittest.main()
