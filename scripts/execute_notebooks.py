"""Execute the band notebooks and keep their small outputs (tables, figures, short prints) in the files, so that a
reader sees the results next to the code in Jupyter or on a code host, as nbdev projects do.

    .venv/bin/python scripts/execute_notebooks.py [NOTEBOOK ...]     # default: every nbs/*.ipynb (not runs/, not _*)

Cells flagged `slow` or `gpu`, and `#| eval: false` cells, are skipped, as in the tests, and keep the outputs they have (a full run's). Kept: rich results and displays (HTML/Markdown tables, SVG
and PNG figures, Vega-Lite charts) up to MAX_BYTES each, and stdout prints up to MAX_LINES lines. Dropped: stderr
(warnings, progress bars), long logs, and anything larger. The notebook's sources are never changed; run
`nbdev-clean` afterwards (it keeps outputs). CI executes the notebooks anyway, stored outputs or not."""
import json, sys, time
from pathlib import Path

from fastcore.nbio import read_nb
from execnb.shell import CaptureShell
from fastcore.xtras import working_directory

ROOT = Path(__file__).resolve().parents[1]
SKIP = ("slow", "gpu")
MAX_BYTES, MAX_LINES = 150_000, 20
CELL_OUTPUTS, CELL_BYTES = 6, 200_000   # per cell: the first outputs up to these (a loop of displays shows its start)
RICH = ("text/html", "text/markdown", "image/svg+xml", "image/png", "application/vnd.vegalite.v5+json",
        "application/vnd.vegalite.v6+json", "text/plain")


def flagged(cell)->bool:
    "A code cell whose directives name a skipped flag (e.g. `#| slow`) or say `#| eval: false`, as nbdev-test skips them."
    first = [l for l in cell["source"].splitlines() if l.startswith("#|")]
    return any(f in l.split() for l in first for f in SKIP) or any(l.replace(" ", "") == "#|eval:false" for l in first)


def small(output)->dict|None:
    "The output if a reader should see it, trimmed to what is worth storing; None to drop it."
    kind = output.get("output_type")
    if kind == "stream":
        text = output.get("text", "")
        text = "".join(text) if isinstance(text, list) else text
        if output.get("name") != "stdout" or not text.strip() or text.count("\n") > MAX_LINES or "\r" in text: return None
        return output
    if kind in ("execute_result", "display_data"):
        data = {k: v for k, v in output.get("data", {}).items() if k in RICH}
        if not data or len(json.dumps(data)) > MAX_BYTES: return None
        return dict(output, data=data)
    return None                                                  # errors never: the run stops at one


def capped(outs:list)->list:
    "The first outputs of a cell within CELL_OUTPUTS and CELL_BYTES."
    kept, size = [], 0
    for o in outs[:CELL_OUTPUTS]:
        size += len(json.dumps(o))
        if size > CELL_BYTES: break
        kept.append(o)
    return kept


def execute(path:Path)->tuple[int, int, float]:
    "Run one notebook in its folder and store its small outputs; return (cells run, outputs kept, seconds)."
    raw = json.loads(path.read_text())
    nb = read_nb(path)
    skip = lambda cell: cell.cell_type != "code" or flagged(cell)
    t0, shell = time.time(), CaptureShell(path)
    with working_directory(path.parent):
        shell.run_all(nb, exc_stop=True, preproc=skip)
    ran = kept = 0
    for c_raw, c in zip(raw["cells"], nb.cells):
        if c_raw["cell_type"] != "code": continue
        if skip(c): continue                                     # a slow cell keeps the outputs of its last full run
        outs = capped([o for o in (small(dict(o)) for o in c.get("outputs", [])) if o is not None])
        ran += 1; kept += len(outs)
        c_raw["outputs"] = outs
    path.write_text(json.dumps(raw, indent=1, ensure_ascii=False) + "\n")
    return ran, kept, time.time() - t0


def main(paths):
    sys.argv = sys.argv[:1]                                      # a cell that parses the command line sees none
    nbs = [Path(p) for p in paths] or sorted(p for p in (ROOT / "nbs").glob("*.ipynb") if not p.name.startswith("_"))
    for p in nbs:
        ran, kept, secs = execute(p.resolve())
        print(f"{p.name}: {ran} cells run, {kept} outputs kept ({secs:.0f} s)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
