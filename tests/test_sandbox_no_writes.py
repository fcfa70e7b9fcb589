"""Grading writes nothing outside the sandbox's private folder (issue 18): not bytecode next to the package, not
files in the caller's working or temporary directory.

The sandbox server used to start as `python -I`, which ignores PYTHONDONTWRITEBYTECODE, so it wrote __pycache__
into the package folder of the checkout or installation. The test grades programs from a fresh copy of the package
(no __pycache__ yet) with a private TMPDIR and working directory, on the warm and the cold path, and fails when any
of the three folders gains a file."""
import os, shutil, subprocess, sys
from pathlib import Path

import proposal_nb

PACKAGE = Path(proposal_nb.__file__).resolve().parent

GRADE = '''
import json, sys
from proposal_nb.programs.sandbox import Executor
progs = ["print(1)", "import proposal_nb.programs.tasks", "open('here.txt', 'w').write('private')",
         "import proposal_nb, os\\nopen(os.path.join(proposal_nb.__path__[0], 'pwned.py'), 'w').write('x = 1')",
         "import os\\nopen(os.path.join(os.environ.get('HOME', '.'), '..', '..', 'escaped.txt'), 'w').write('x')",
         "import os\\nif os.fork() == 0: open('child.txt', 'w').write('x')\\nelse: os.wait()"]
out = {}
for warm in (True, False):
    with Executor(cpu_seconds=2, wall_seconds=60, workers=2, warm=warm, warm_imports=("numpy",), cache=False) as ex:
        out[warm] = [v.reason for v in ex.run(progs)]
print(json.dumps(out))
'''


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob('*')}


def test_grading_writes_nothing_outside_the_private_folder(tmp_path):
    pkg, tmp, cwd = tmp_path / 'site' / 'proposal_nb', tmp_path / 'tmp', tmp_path / 'cwd'
    shutil.copytree(PACKAGE, pkg, ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
    tmp.mkdir(); cwd.mkdir()
    before = _files(pkg)
    assert not any('__pycache__' in f for f in before)
    env = {**os.environ, 'PYTHONPATH': str(pkg.parent), 'TMPDIR': str(tmp), 'PYTHONDONTWRITEBYTECODE': '1'}
    # -B for this caller too: the folder must change only if the sandbox itself writes there
    r = subprocess.run([sys.executable, '-B', '-c', GRADE], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    reasons = __import__('json').loads(r.stdout.strip().splitlines()[-1])
    # it ran, on both paths; the package is not in the programs' world, so importing it fails there
    assert reasons['true'][:3] == reasons['false'][:3] == ['ok', 'exception:ModuleNotFoundError', 'ok'], reasons
    assert _files(pkg) - before == set(), f'the package folder gained files during grading: {sorted(_files(pkg) - before)}'
    assert _files(tmp) == set(), f'TMPDIR kept files after grading: {sorted(_files(tmp))}'
    assert _files(cwd) == set(), f'the working directory gained files: {sorted(_files(cwd))}'
