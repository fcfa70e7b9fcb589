"""The built results site in headless Chromium: every page loads with no console error, every chart renders (SVG
with data marks), a click on a prompt shows its details, and a screenshot of each page is saved.

The site is built from synthetic run folders (`proposal_nb.site.synthetic_results`), so the test exercises every
page before real runs exist. Chromium comes from Debian's `chromium` package: when it is missing, the test installs
it with apt-get (scripts/setup_browser.sh); it skips, saying why, only when apt-get itself is unavailable.
Screenshots go to $SITE_SCREENSHOTS when set, else to the test's tmp folder (printed)."""
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from proposal_nb.site import Chromium, _POINT_JS, build_site, check_site, find_chromium, synthetic_results

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["index.html", "zc.html", "training.html", "heldout.html", "bins.html", "prompts.html", "report-card.html",
         "calibration.html", "breakeven.html"]


@pytest.fixture(scope="module")
def chromium():
    exe = find_chromium()
    if exe: return exe
    if not shutil.which("apt-get"):
        pytest.skip("no chromium on PATH and no apt-get to install it: install Debian's 'chromium' package to run this test")
    r = subprocess.run(["bash", str(ROOT / "scripts" / "setup_browser.sh")], capture_output=True, text=True, timeout=600)
    exe = find_chromium()
    assert exe, f"scripts/setup_browser.sh did not install chromium (exit {r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    return exe


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    synthetic_results(root / "results", arms=("iguana", "msc", "rbmsc"), n_prompts=30)
    pages = build_site(root / "results", root / "_build", n_boot=300)
    return root / "_build", pages


@pytest.fixture(scope="module")
def checks(site, chromium, tmp_path_factory):
    shots = Path(os.environ.get("SITE_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    out = check_site(site[0], shots, chromium)
    print(f"\nscreenshots of {len(out)} pages in {shots}")
    return {c.page: c for c in out}


def test_every_page_is_built(site):
    names = [p.name for p in site[1]]
    assert names[:len(PAGES)] == PAGES, names
    assert {"run-heldout.html", "run-theory.html", "run-train_rbmsc.html"} <= set(names)


def test_pages_load_without_console_errors(checks, site):
    assert set(checks) == {p.name for p in site[1]}
    bad = {p: c.errors for p, c in checks.items() if c.errors}
    assert not bad, bad


def test_every_chart_renders_marks(checks):
    n = 0
    for page, c in checks.items():
        for ch in c.charts:
            assert ch["svg"] + ch["canvas"] > 0, (page, ch)
            assert ch["marks"] > 0, (page, ch)
            n += 1
    assert n >= 15, n   # the synthetic site has at least this many charts


def test_click_on_a_prompt_shows_its_details(checks):
    c = checks["prompts.html"]
    assert c.prompt and c.prompt.startswith("p"), c.prompt


def test_prompt_panel_content(site, chromium):
    """Click a prompt, then read the panel: its text, Z, C and one row per arm and checkpoint; the same prompt is
    highlighted (full opacity) in every arm's panel."""
    with Chromium(chromium) as b:
        b.goto((site[0] / "prompts.html").as_uri(), "window.__siteReady")
        pt = b.eval(_POINT_JS)
        b.click(pt["x"], pt["y"])
        t = time.time()
        while time.time() - t < 5 and not b.eval("document.getElementById('prompt-panel').dataset.prompt || ''"): time.sleep(0.05)
        text = b.eval("document.getElementById('prompt-panel').innerText")
        pid = b.eval("document.getElementById('prompt-panel').dataset.prompt")
        rows = b.eval("document.querySelectorAll('#prompt-panel table tr').length")
        # fully opaque points: the selected prompt in each of the 4 arms' panels (base, iguana, msc, rbmsc), and the
        # points of its trajectory below; every other prompt is faded
        lit = b.eval("""Array.from(document.querySelectorAll('g.mark-symbol.role-mark > path'))
                        .filter(p => (p.getAttribute('opacity') || p.style.opacity) === '1').length""")
        trajectory = b.eval("document.querySelectorAll('g.mark-line.role-mark > path').length")
        assert not b.errors(), b.errors()
    assert f"def task_{int(pid[1:])}(xs)" in text, text
    assert "Z = " in text and "C = " in text, text
    assert rows == 1 + 1 + 3 * 2, rows          # header + base + 3 arms x 2 checkpoints
    assert lit == 4 + (rows - 1), lit          # one lit point per arm in the scatter + the trajectory's 7 points
    assert trajectory >= 1, trajectory


def test_screenshots_saved(checks):
    for page, c in checks.items():
        assert c.screenshot.exists() and c.screenshot.stat().st_size > 10_000, (page, c.screenshot)
        assert c.screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
