"""The site builds from the committed published/ folder, as the main job builds it: every published run folder must be
readable through the results contract. A readings folder that wrote a table named like the contract's `per_prompt`
(published/confirm_readings, 2026-12-04) stopped the whole build, and no test built the site from published/ before."""
import pandas as pd
from pathlib import Path
from proposal_nb.site.build import build_site

ROOT = Path(__file__).resolve().parents[1]


def test_the_site_builds_from_the_published_runs(tmp_path):
    (tmp_path / "results").mkdir()
    pages = build_site(tmp_path / "results", tmp_path / "site", published=[ROOT / "published"])
    folders = sorted(p.name for p in (ROOT / "published").iterdir() if (p / "config.json").exists())
    names = {p.name for p in pages}
    missing = [f for f in folders if f"run-{f}.html" not in names]
    assert not missing, f"published folders without a run page: {missing}"
    index = pages[0].read_text()
    assert pages[0].name == "index.html" and index.index("Confirmatory readings") < index.index("Findings of the published runs")
    readings = pd.read_csv(ROOT / "published" / "confirm_readings" / "readings.csv")
    waiting = readings.missing.dropna().astype(str)
    waiting = waiting[waiting.str.strip() != "—"]
    if len(waiting): assert all(w in index for w in waiting.iloc[:3])   # the rows name the runs they wait for, as the table does
    else: assert "awaiting runs" not in index                          # every run is in: no row says it waits
    assert all(v in index for v in readings[readings.status == "verdict"].verdict.unique())   # each decided row shows its verdict
