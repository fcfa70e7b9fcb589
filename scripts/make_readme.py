"""Write README.md from nbs/index.ipynb (Quarto, which nbdev uses for this, is not available here).
Markdown cells are copied; visible code cells become fenced blocks followed by their text output, if
executed. Usage: .venv/bin/python scripts/make_readme.py [--check]"""
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]


def render(nb_path=ROOT / "nbs" / "index.ipynb") -> str:
    nb = nbformat.read(nb_path, as_version=4)
    parts = ["<!-- generated from nbs/index.ipynb by scripts/make_readme.py: edit the notebook, not this file -->"]
    for cell in nb.cells:
        src = cell.source.strip()
        if cell.cell_type == "markdown":
            parts.append(src)
        elif cell.cell_type == "code" and src and not src.startswith("#| hide"):
            code = "\n".join(l for l in src.splitlines() if not l.startswith("#|"))
            parts.append(f"```python\n{code}\n```")
            text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
            if text.strip(): parts.append(f"```\n{text.rstrip()}\n```")
    return "\n\n".join(parts) + "\n"


if __name__ == "__main__":
    want, readme = render(), ROOT / "README.md"
    if "--check" in sys.argv:
        if not readme.exists() or readme.read_text() != want:
            sys.exit("README.md is out of date: run .venv/bin/python scripts/make_readme.py")
    else:
        readme.write_text(want)
