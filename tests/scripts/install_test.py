#!/usr/bin/env python3
"""`cmake --install` of a build (docs/python.md): the binary lands in PREFIX/bin and the package
in PREFIX/<site folder>/xpusim, and from any folder, with that site folder as the only addition
to Python's path, `import xpusim` finds its native part and the installed binary and simulates, and its serving
and trace-generator modules run; the installed binary's `serve` and `plot` run the installed package.
Installs into a temporary prefix (the default /usr/local is where Debian's python3 looks
without PYTHONPATH).

  install_test.py CMAKE BUILD_DIR PYTHON SITE_SUBDIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    cmake, build, python, site = sys.argv[1:5]
    prefix = tempfile.mkdtemp(prefix="xpusim-install-")
    try:
        subprocess.run([cmake, "--install", build, "--prefix", prefix], check=True, stdout=subprocess.DEVNULL)
        binary = os.path.join(prefix, "bin", "xpusim")
        version = subprocess.run([binary, "--version"], check=True, capture_output=True, text=True).stdout
        assert version.startswith("xpusim "), version
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": os.path.join(prefix, site), "SYSTEMC_DISABLE_COPYRIGHT_MESSAGE": "1"}
        code = ("import os, xpusim\n"
                f"assert xpusim._cli() == {binary!r}, xpusim._cli()\n"
                f"assert os.path.dirname(xpusim.__file__) == {os.path.join(prefix, site, 'xpusim')!r}\n"
                f"r = xpusim.run({os.path.join(ROOT, 'configs', 'h100-sxm.yaml')!r}, "
                f"{os.path.join(ROOT, 'tests', 'data', 'gemm-2k.yaml')!r}, out='out')\n"
                "assert r['total']['time_s'] > 0 and os.path.exists('out/report.html')\n"
                "print('installed', xpusim.__version__)\n")
        work = os.path.join(prefix, "work")
        os.makedirs(work)
        p = subprocess.run([python, "-c", code], cwd=work, env=env, capture_output=True, text=True)
        print(p.stdout + p.stderr, end="")
        if p.returncode:
            return p.returncode
        # The installed package's serving and trace generator as modules, as `xpusim serve` runs them.
        for module in ("xpusim.serving", "xpusim.workloads"):
            h = subprocess.run([python, "-m", module, "--help"], cwd=work, env=env, capture_output=True, text=True)
            if h.returncode or "usage:" not in h.stdout:
                print(f"python3 -m {module} --help: exit {h.returncode}\n{h.stderr}")
                return 1
        # The installed binary's Python commands run the installed package (its own version), not
        # the source tree's: each module's entry says where it ran from.
        for command, module in (("serve", "serving"), ("plot", "plots")):
            main_py = os.path.join(prefix, site, "xpusim", module, "__main__.py")
            with open(main_py) as f:
                text = f.read()
            with open(main_py, "w") as f:
                f.write("import sys\nsys.stderr.write('running ' + __file__ + '\\n')\n" + text)
            h = subprocess.run([binary, command, "--help"], cwd=work, capture_output=True, text=True,
                               env=dict(env, PYTHONPATH="", XPUSIM_PYTHON_EXE=python))
            if h.returncode or "usage:" not in h.stdout or f"running {main_py}" not in h.stderr:
                print(f"xpusim {command} --help (installed): exit {h.returncode}\n{h.stdout}{h.stderr}")
                return 1
        return 0
    finally:
        shutil.rmtree(prefix, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
