"""check_site / verify_site with full=False: each page's screenshot is its first viewport (the browser's 1280 x 900), not the
whole page; with full=True it is the whole page. The site is two hand-written pages: one 3,000 px tall (its first 900 px red,
the rest blue) and one shorter than the viewport. Chromium as in test_site_browser (installed with apt-get when missing,
skipped only without apt-get)."""
import json
from pathlib import Path

import pytest
from PIL import Image

from proposal_nb.site.browser import check_site, verify_site
from test_site_browser import chromium

W, H = 1280, 900                        # Chromium()'s default viewport, which check_site uses
TALL = 3000
RED, BLUE, WHITE = (255, 0, 0), (0, 0, 255), (255, 255, 255)
PAGES = {
    "index.html": f"""<!doctype html><html><head><meta charset="utf-8"><style>html,body{{margin:0;padding:0}}</style></head><body>
<div style="height:{H}px;background:rgb(255,0,0)"></div><div style="height:{TALL - H}px;background:rgb(0,0,255)"></div></body></html>""",
    "short.html": """<!doctype html><html><head><meta charset="utf-8"><style>html,body{margin:0;padding:0;background:#fff}</style></head>
<body><p>short</p></body></html>""",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    d = tmp_path_factory.mktemp("site")
    for name, html in PAGES.items(): (d / name).write_text(html)
    return d


def png(p:Path):
    "(width, height) and the RGB image of a PNG file."
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", p
    im = Image.open(p).convert("RGB")
    return im.size, im


@pytest.mark.parametrize("how", ["check_site", "verify_site"])
def test_viewport_screenshots(site, tmp_path, how):
    exe = chromium()
    shots = tmp_path / "shots"
    if how == "check_site":
        checks = check_site(site, shots, exe, full=False)
        assert [c.page for c in checks] == ["index.html", "short.html"] and not any(c.errors for c in checks), checks
        files = [c.screenshot for c in checks]
    else:
        rep = verify_site(site, shots, exe, full=False)
        assert rep["pages"] == 2 and rep == json.loads((shots / "check.json").read_text())
        files = [shots / c["screenshot"] for c in rep["checks"]]
    assert [f.name for f in files] == ["index.png", "short.png"]
    for f in files:
        size, im = png(f)
        assert size == (W, H), (f.name, size)               # the viewport's pixel height, not the page's
    _, im = png(shots / "index.png")
    assert im.getpixel((W // 2, 0)) == RED and im.getpixel((W // 2, H - 1)) == RED   # the page's first viewport: all red


def test_full_page_screenshots(site, tmp_path):
    "The contrast: with full=True (the default) the same pages give the whole page."
    exe = chromium()
    shots = tmp_path / "shots"
    check_site(site, shots, exe, full=True)
    size, im = png(shots / "index.png")
    assert size == (W, TALL), size                          # the whole tall page
    assert im.getpixel((W // 2, 0)) == RED and im.getpixel((W // 2, H - 1)) == RED
    assert im.getpixel((W // 2, H)) == BLUE and im.getpixel((W // 2, TALL - 1)) == BLUE
    size, im = png(shots / "short.png")
    assert size == (W, H), size                             # a page shorter than the viewport: the viewport
    assert im.getpixel((W // 2, H - 1)) == WHITE


PANEL = f"""<!doctype html><html><head><meta charset="utf-8"><style>html,body{{margin:0;padding:0}}</style></head><body>
<div style="height:{H}px;background:rgb(255,0,0)"></div><div id='prompt-panel' style="height:{TALL - H}px;background:rgb(0,0,255)">
<div class="chart" style="padding-top:1500px"><svg width="40" height="40"><g class="mark-symbol role-mark"><path d="M0,0H30V30H0Z" fill="green"/></g></svg></div></div>
<script>document.addEventListener('click', () => {{ document.getElementById('prompt-panel').dataset.prompt = 'task/7'; }});</script></body></html>"""


def test_viewport_after_a_prompt_click(tmp_path):
    "A per-prompt page: the click scrolls its point into view (far below the first viewport); the shot is still the first viewport."
    exe = chromium()
    site = tmp_path / "site"; site.mkdir(); (site / "prompts.html").write_text(PANEL)
    checks = check_site(site, tmp_path / "shots", exe, full=False)
    assert [c.prompt for c in checks] == ["task/7"], checks          # the click reached the panel
    size, im = png(checks[0].screenshot)
    assert size == (W, H) and im.getpixel((W // 2, 0)) == RED and im.getpixel((W // 2, H - 1)) == RED
