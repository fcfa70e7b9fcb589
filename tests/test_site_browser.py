"""The built results site in headless Chromium: every page loads with no console error, every chart renders (SVG
with data marks), a click on a prompt shows its details and highlights it in every arm, and a screenshot of each
page is saved. A run page with completions shows its sampled draws, runs none of a hostile completion's markup and finds a draw
by its id.

The site is built from synthetic run folders (`proposal_nb.analysis.fixtures.synthetic_results`, three trained arms), so the test
exercises every page before real runs exist. Chromium comes from Debian's `chromium` package: when it is missing, the
test installs it with scripts/setup_browser.sh (apt-get, about a minute); it skips, saying why, only when apt-get
itself is unavailable. Screenshots go to $SITE_SCREENSHOTS when set, else to the test's tmp folder (printed).
One test function on purpose: under pytest-xdist the site is built and the browser installed once."""
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from proposal_nb.analysis.fixtures import synthetic_results
from proposal_nb.site.browser import Chromium, _POINT_JS, check_site, find_chromium
from proposal_nb.site.build import build_site

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["index.html", "zc.html", "training.html", "heldout.html", "bins.html", "prompts.html", "report-card.html",
         "calibration.html", "breakeven.html"]


def chromium():
    "The chromium executable, installed with apt-get when missing; skip only when apt-get is unavailable."
    exe = find_chromium()
    if exe: return exe
    if not shutil.which("apt-get"):
        pytest.skip("no chromium on PATH and no apt-get to install it: install Debian's 'chromium' package to run this test")
    r = subprocess.run(["bash", str(ROOT / "scripts" / "setup_browser.sh")], capture_output=True, text=True, timeout=900)
    exe = find_chromium()
    assert exe, f"scripts/setup_browser.sh did not install chromium (exit {r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    return exe


def read_panel(b:Chromium)->dict:
    "Click the first visible point of the per-prompt chart and read what the page shows."
    pt = b.eval(_POINT_JS)
    assert pt, "no point to click in the per-prompt chart"
    b.click(pt["x"], pt["y"])
    t = time.time()
    while time.time() - t < 5 and not b.eval("document.getElementById('prompt-panel').dataset.prompt || ''"): time.sleep(0.05)
    return dict(
        pid=b.eval("document.getElementById('prompt-panel').dataset.prompt"),
        text=b.eval("document.getElementById('prompt-panel').innerText"),
        rows=b.eval("document.querySelectorAll('#prompt-panel table tr').length"),
        # fully opaque points: the selected prompt in each arm's panel, and the points of its trajectory below
        lit=b.eval("""Array.from(document.querySelectorAll('g.mark-symbol.role-mark > path'))
                      .filter(p => (p.getAttribute('opacity') || p.style.opacity) === '1').length"""),
        lines=b.eval("document.querySelectorAll('g.mark-line.role-mark > path').length"))


HOSTILE = "```python\nprint('</pre><script>window.PWNED=1</script>')\n```\n</code></pre><img src=x onerror=\"window.PWNED=2\">"


def keep_completions(folder:Path)->str:
    "Give a run's draws a completion each; the first draw its page shows gets HOSTILE. Returns that draw's id."
    from proposal_nb.results import read_table, write_table
    from proposal_nb.site.tables import completion_sample, draw_ids
    t = read_table(folder, "draws")
    t["completion"] = [f"```python\ndef f():\n    return {i}\n```" for i in range(len(t))]
    first = completion_sample(t).id.iloc[0]
    t.loc[draw_ids(t) == first, "completion"] = HOSTILE
    write_table(folder, "draws", t)
    return first


def read_completions(b:Chromium, query:str|None=None)->dict:
    "What a run page's completion sample shows (after typing `query` into its search box, when given)."
    if query is not None:
        b.eval(f"(() => {{ const i = document.querySelector('input.draw-find'); i.value = {query!r}; i.dispatchEvent(new Event('input')); return 1; }})()")
    return dict(cards=b.eval("document.querySelectorAll('.completions .draw').length"),
                visible=b.eval("Array.from(document.querySelectorAll('.completions .draw')).filter(c => c.offsetParent !== null).map(c => c.dataset.id)"),
                count=b.eval("document.querySelector('.draw-find-count').textContent"),
                programs=b.eval("Array.from(document.querySelectorAll('.completions pre.program')).map(p => p.textContent)"),
                whole=b.eval("Array.from(document.querySelectorAll('.completions details pre')).map(p => p.textContent)"),
                pwned=b.eval("typeof window.PWNED"), injected=b.eval("document.querySelectorAll('.completions script, .completions img').length"))


def test_site_in_headless_chromium(tmp_path):
    exe = chromium()
    t0 = time.time()
    synthetic_results(tmp_path / "results", arms=("iguana", "msc", "rbmsc"), n_prompts=30, n_boot=300)
    hostile = keep_completions(tmp_path / "results" / "heldout")          # the evaluation keeps its texts; the training runs hashes only
    pages = build_site(tmp_path / "results", tmp_path / "_build")
    names = [p.name for p in pages]
    assert names[:len(PAGES)] == PAGES, names
    assert {"run-heldout.html", "run-theory.html", "run-rbmsc.html", "run-zx.html"} <= set(names), names
    t1 = time.time()

    shots = Path(os.environ.get("SITE_SCREENSHOTS") or tmp_path / "screenshots")
    checks = {c.page: c for c in check_site(tmp_path / "_build", shots, exe)}
    print(f"\nsite built in {t1 - t0:.1f}s, {len(checks)} pages checked in {time.time() - t1:.1f}s; screenshots in {shots}")
    assert set(checks) == set(names)

    # every page loads with no console error
    bad = {p: c.errors for p, c in checks.items() if c.errors}
    assert not bad, bad
    # every chart renders: an SVG with data marks
    n = 0
    for page, c in checks.items():
        for ch in c.charts:
            assert ch["svg"] + ch["canvas"] > 0 and ch["marks"] > 0, (page, ch)
            n += 1
    assert n >= 15, n
    # a click on a prompt fills the detail panel
    assert checks["prompts.html"].prompt and checks["prompts.html"].prompt.startswith("p"), checks["prompts.html"].prompt
    # a screenshot per page
    for page, c in checks.items():
        assert c.screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and c.screenshot.stat().st_size > 10_000, (page, c.screenshot)

    # the panel's content and the highlight across arms
    with Chromium(exe) as b:
        b.goto((tmp_path / "_build" / "prompts.html").as_uri(), "window.__siteReady")
        got = read_panel(b)
        assert not b.errors(), b.errors()
    assert f"def task_{int(got['pid'][1:])}(xs)" in got["text"], got["text"]      # the prompt's text
    assert "Z = " in got["text"] and "C = " in got["text"], got["text"]
    assert got["rows"] == 1 + 1 + 3 * 2, got["rows"]         # header + base + 3 arms x 2 checkpoints
    # one lit point per arm (4 panels) + the trajectory: 7 values, plus the base point repeated at the start of 3 arms
    assert got["lit"] == 4 + (got["rows"] - 1) + 3, got["lit"]
    assert got["lines"] >= 3, got["lines"]                   # the trajectory of each trained arm

    # a run page's completions: the sample is shown as text, and the search box finds a draw by its id
    from proposal_nb.site.tables import COMPLETION_K
    with Chromium(exe) as b:
        b.goto((tmp_path / "_build" / "run-heldout.html").as_uri(), "document.readyState === 'complete'")
        seen = read_completions(b)
        n_ck = b.eval("document.querySelectorAll('.completions h3').length")
        assert seen["cards"] == n_ck * 3 * COMPLETION_K and n_ck == 7, seen      # every checkpoint (base + 3 arms x 2 steps), 3 kinds of k draws
        assert seen["pwned"] == "undefined" and seen["injected"] == 0, seen       # no markup of a completion ran or became an element
        assert "print('</pre><script>window.PWNED=1</script>')\n" in seen["programs"], seen["programs"][:3]
        assert any('<img src=x onerror="window.PWNED=2">' in w for w in seen["whole"]), seen["whole"][:3]
        assert any("return " in p for p in seen["programs"])
        found = read_completions(b, hostile)
        assert found["visible"] == [hostile] and found["count"] == f"1 of {seen['cards']} shown draws", found
        none = read_completions(b, "no-such-draw")
        assert none["visible"] == [] and "not among the shown draws" in none["count"], none
        assert read_completions(b, "")["visible"] == seen["visible"]
        assert not b.errors(), b.errors()
        b.goto((tmp_path / "_build" / "run-iguana.html").as_uri(), "document.readyState === 'complete'")
        assert "completion text not stored in this run (hash only)" in b.eval("document.querySelector('main').innerText")
