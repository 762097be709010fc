#!/usr/bin/env python3
"""Every script under scripts/ that starts with a shebang can be run as the README and the help
texts write it (scripts/huangs-law.py, not python3 scripts/huangs-law.py): its mode has the
execute bits, in the checkout and in git's index. Run by ctest (scripts.executable)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    bad = []
    index = {}
    ls = subprocess.run(["git", "-C", ROOT, "ls-files", "-s", "scripts"], capture_output=True, text=True)
    for line in ls.stdout.splitlines():  # "<mode> <object> <stage>\t<path>"
        mode, _, _ = line.split("\t")[0].split()
        index[line.split("\t")[1]] = mode
    for folder, _, files in os.walk(os.path.join(ROOT, "scripts")):
        for f in sorted(files):
            path = os.path.join(folder, f)
            with open(path, "rb") as fh:
                if fh.read(2) != b"#!":
                    continue
            rel = os.path.relpath(path, ROOT)
            if not os.access(path, os.X_OK):
                bad.append(f"{rel}: not executable (chmod +x)")
            elif index.get(rel, "100755") != "100755":
                bad.append(f"{rel}: git records mode {index[rel]} (git update-index --chmod=+x)")
    for b in bad:
        print(b)
    print(f"{'every' if not bad else len(bad)} script{'' if not bad else 's'} with a shebang "
          f"{'is executable' if not bad else 'not executable'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
