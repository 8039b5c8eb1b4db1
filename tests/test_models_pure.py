"""Models are pure Python: they must import without amaranth or cocotb."""
import subprocess
import sys


def test_models_do_not_import_amaranth_or_cocotb():
    code = ("import sys, importlib, pkgutil, models\n"
            "for m in pkgutil.iter_modules(models.__path__): importlib.import_module('models.' + m.name)\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('amaranth', 'cocotb')]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True)
