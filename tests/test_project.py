"""Project invariants: README in sync with index.ipynb and its two commands, CI calling the README's test
command, nbdev-clean keeping the papermill tag, and proposal_nb/ being exactly what the notebooks export."""
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]


def quick_start_commands():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## Quick start.*?```sh\n(.*?)```", text, re.S).group(1)
    return [l.split("#")[0].strip() for l in block.splitlines() if l.split("#")[0].strip()]


def test_readme_is_generated_from_index():
    p = subprocess.run([sys.executable, "scripts/make_readme.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_readme_has_exactly_two_commands_and_ci_runs_the_test_one():
    cmds = quick_start_commands()
    assert len(cmds) == 2, cmds
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert cmds[1] in [l.strip() for l in ci], f"{cmds[1]!r} not called by .ci/run"
    for c in cmds: assert (ROOT / c.split()[1]).exists(), c


def test_nbdev_clean_keeps_parameters_tag(tmp_path):
    from nbdev.clean import clean_nb
    from nbdev.config import get_config
    cfg = get_config(ROOT)
    for nb_path in sorted((ROOT / "nbs" / "runs").glob("*.ipynb")):
        nb = nbformat.read(nb_path, as_version=4)
        clean_nb(nb, allowed_cell_metadata_keys=cfg.allowed_cell_metadata_keys)
        tags = [t for c in nb.cells for t in c.get("metadata", {}).get("tags", [])]
        assert tags.count("parameters") == 1, f"{nb_path.name}: {tags}"


def test_library_is_what_the_notebooks_export(tmp_path):
    import shutil
    shutil.copytree(ROOT / "nbs", tmp_path / "nbs", ignore=shutil.ignore_patterns("runs", ".ipynb_checkpoints"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "proposal_nb").mkdir()
    shutil.copy(ROOT / "proposal_nb" / "__init__.py", tmp_path / "proposal_nb")
    subprocess.run([sys.executable, "-c", "from nbdev.doclinks import nbdev_export; nbdev_export.__wrapped__()"],
                   cwd=tmp_path, check=True)
    fresh = {p.relative_to(tmp_path / "proposal_nb") for p in (tmp_path / "proposal_nb").rglob("*.py")}
    mine = {p.relative_to(ROOT / "proposal_nb") for p in (ROOT / "proposal_nb").rglob("*.py")}
    assert fresh == mine, f"modules differ: only exported {sorted(fresh - mine)}, only in proposal_nb/ {sorted(mine - fresh)}"
    for rel in sorted(fresh - {Path("_modidx.py")}):
        assert (ROOT / "proposal_nb" / rel).read_text() == (tmp_path / "proposal_nb" / rel).read_text(), \
            f"proposal_nb/{rel} differs from its notebook: run nbdev-export"


BANDS = {"results": 0, "theory": 1, "estimators": 2, "config": 3, "programs": 4, "lm": 5, "analysis": 6, "site": 7, "pipeline": 8}


def test_imports_point_one_way():
    "A module imports only from its own band or the bands below it (results ← theory ← estimators ← config ← programs ← lm ← analysis ← site ← pipeline)."
    import ast
    band = lambda mod: BANDS.get(mod.split(".")[1]) if mod.count(".") else None
    wrong = []
    for p in sorted((ROOT / "proposal_nb").rglob("*.py")):
        if p.name in ("_modidx.py", "__init__.py"): continue
        me = "proposal_nb." + ".".join(p.relative_to(ROOT / "proposal_nb").with_suffix("").parts)
        for n in ast.walk(ast.parse(p.read_text())):
            if not isinstance(n, ast.ImportFrom): continue
            target = ".".join(me.split(".")[:-n.level] + [n.module or ""]).rstrip(".") if n.level else (n.module or "")
            if target.startswith("proposal_nb.") and band(target) is not None and band(target) > band(me):
                wrong.append(f"{me} (line {n.lineno}) imports {target}")
    assert not wrong, "imports against the bands:\n" + "\n".join(wrong)


def test_analysis_band_reads_tables_only():
    "The analysis band reads saved tables: it imports neither `lm` (models) nor `programs` (the sandbox and the tasks)."
    import ast
    wrong = []
    for p in sorted((ROOT / "proposal_nb" / "analysis").glob("*.py")):
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.ImportFrom):
                target = ("proposal_nb." + (n.module or "")) if n.level == 2 else ("proposal_nb.analysis." + (n.module or "")) if n.level == 1 else (n.module or "")
                names = [target]
            elif isinstance(n, ast.Import): names = [a.name for a in n.names]
            else: continue
            wrong += [f"analysis/{p.name} (line {n.lineno}) imports {t}" for t in names if t.startswith(("proposal_nb.lm", "proposal_nb.programs"))]
    assert not wrong, "the analysis band must not run models or programs:\n" + "\n".join(wrong)


# A run notebook's flat parameter that means what the schema's default means, written the way papermill can carry it.
# score_rows' 0 = None is config.FLAT's own sentinel; mu0's 0 (measure first) is the notebook's rule.
BOUNDARY = {"mu0": (0.0, 0.5)}          # 0: measure the base model's validity first; the class's 0.5 is a stand-in


def test_run_notebook_defaults_are_the_configs():
    "11_train_online's parameters and the training configuration have one set of defaults (or a boundary mapping above)."
    import ast
    from proposal_nb.config import FLAT, OnlineConfig, to_flat
    nb = nbformat.read(ROOT / "nbs" / "runs" / "11_train_online.ipynb", as_version=4)
    src = next(c.source for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    params = {n.target.id: ast.literal_eval(n.value) for n in ast.parse(src).body if isinstance(n, ast.AnnAssign)}
    default = to_flat(OnlineConfig())
    wrong, seen = [], 0
    for k in FLAT:
        if k not in params: continue
        seen += 1
        if BOUNDARY.get(k) == (params[k], default[k]): continue
        if default[k] != params[k]: wrong.append(f"{k}: schema {default[k]!r}, notebook {params[k]!r}")
    assert seen >= 15 and not wrong, "\n".join(wrong)


def test_no_code_is_loaded_by_file_path():
    "Tests and modules import the package; none loads a file as a module (importlib's loaders by path) or puts a folder on sys.path."
    import ast, importlib.machinery, importlib.util
    by_path = {importlib.util.spec_from_file_location.__name__, importlib.machinery.SourceFileLoader.__name__}
    wrong = []
    for p in sorted([*(ROOT / "tests").glob("*.py"), *(ROOT / "proposal_nb").rglob("*.py")]):
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.Call) and isinstance(n.func, (ast.Attribute, ast.Name)):
                f = ast.unparse(n.func)
                if f.split(".")[-1] in by_path or f in ("sys.path.insert", "sys.path.append"):
                    wrong.append(f"{p.relative_to(ROOT)}:{n.lineno} {f}")
    assert not wrong, "code loaded by path:\n" + "\n".join(wrong)
