"""Write README.md from nbs/index.ipynb (Quarto, which nbdev uses for this, is not available here).
Markdown cells are copied; visible code cells become fenced blocks followed by their text output, if
executed; the marker `<!-- published-runs -->` becomes the list of published run folders, read from their config.json.
Usage: .venv/bin/python scripts/make_readme.py [--check]"""
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
MARKER = "<!-- published-runs -->"


def published_list(root=ROOT / "published") -> str:
    "A folded table of the published run folders: folder, what it holds, machine, date, commit."
    from proposal_nb.results import published_runs
    cell = lambda x, n=None: "—" if x is None or x != x else str(x if n is None or len(str(x)) <= n else str(x)[:n].rsplit(" ", 1)[0] + " …").replace("|", "\\|")
    t = published_runs(root)
    rows = [f"| [`{r.run}`](published/{r.run}) | {cell(r.title)} | {cell(r.machine, 70)} | {cell(r.date)[:10]} | "
            f"{cell(r.commit.split(', ')[0] + (f' +{r.commit.count(chr(44))}' if ',' in r.commit else '') if isinstance(r.commit, str) else None)} |"
            for r in t.itertuples()]
    return (f"<details><summary>{len(t)} run folders</summary>\n\n| folder | what it holds | machine | date | commit |\n|---|---|---|---|---|\n"
            + "\n".join(rows) + "\n\n</details>")


def render(nb_path=ROOT / "nbs" / "index.ipynb") -> str:
    nb = nbformat.read(nb_path, as_version=4)
    parts = ["<!-- generated from nbs/index.ipynb by scripts/make_readme.py: edit the notebook, not this file -->"]
    for cell in nb.cells:
        src = cell.source.strip()
        if cell.cell_type == "markdown":
            parts.append(src.replace(MARKER, published_list()) if MARKER in src else src)
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
