"""Issue 40 item 2, the evaluation and site half: every held-out draw keeps its completion text, and the site shows a
bounded sample of them beside weight, verdict, step and prompt, escaped.

The evaluation runs the real run notebook (nbs/runs/13_evaluate, through papermill) on the tiny random model
(lm.models.tiny_model) saved as a local folder, with a base arm and a LoRA adapter arm, R=1 x M=3 draws of 12 tokens on
the held-out share of the first 10 embedded tasks: about half a minute. The site half builds pages from that folder
and from synthetic run folders (analysis.fixtures.synthetic_results) given a hostile completion."""
import html
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from proposal_nb.lm.models import tiny_model

pytestmark = pytest.mark.xdist_group("completions")   # one worker: the module fixture (an evaluation) is made once

HOSTILE = "```python\nprint('</pre><script>alert(1)</script>')\n```\n</code></pre><script>window.PWNED=1</script><b>bold</b>"


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory):
    "An evaluation folder made by nbs/runs/13_evaluate on the tiny model: arms base and mine (a random adapter)."
    import torch
    from proposal_nb.lm.models import add_lora, load_model
    from proposal_nb.pipeline.notebooks import resolve_notebook, run_notebook
    d = tmp_path_factory.mktemp("completions")
    m, tok = tiny_model(seed=0)
    m.save_pretrained(d / "tiny"); tok.save_pretrained(d / "tiny")
    lm, _ = load_model(str(d / "tiny"))
    torch.manual_seed(1)
    peft = add_lora(lm)
    with torch.no_grad():
        for n, p in peft.named_parameters():
            if "lora_B" in n: p.normal_(0, 0.5)            # an adapter that moves the model: its draws differ from the base's
    peft.save_pretrained(d / "adapter")
    out = d / "eval"
    run_notebook(resolve_notebook("13_evaluate"), out, dict(out_dir=str(out), model=str(d / "tiny"), tasks="embedded", limit=10,
                 checkpoints=f"base=,mine={d / 'adapter'}", R=1, M=3, max_new_tokens=12, batch_size=8, n_boot=50, engine="hf"),
                 log=d / "eval.log")
    return out


def test_every_heldout_draw_of_every_arm_keeps_its_text(evaluation):
    from proposal_nb.lm.rollouts import text_hash
    d = pd.read_parquet(evaluation / "draws.parquet")
    assert "completion" in d.columns and set(d.checkpoint) == {"base", "mine"}, list(d.columns)
    assert d.completion.map(lambda x: isinstance(x, str)).all()                  # a text on every row, of every arm
    assert "token_ids" not in d.columns and "prompt_ids" not in d.columns          # the tokens are decoded, not stored
    # the stored text is the graded one: its hash is the row's text_hash (computed by the sampler from the text it graded)
    assert (d.completion.map(text_hash) == d.text_hash).all()
    assert d.groupby("checkpoint").completion.apply(lambda s: s.str.len().sum()).gt(0).all()


def test_completion_is_the_decode_of_the_stored_tokens():
    "Where a table stores token ids (keep_tokens=True, as the campaign's base arm does), completion is their decode."
    from proposal_nb.analysis.evaluation import with_completions
    from proposal_nb.lm.models import add_lora
    from proposal_nb.lm.rollouts import evaluation_draws, text_hash
    from proposal_nb.programs.tasks import load_embedded
    m, tok = tiny_model(seed=0)
    peft = add_lora(m)
    ok = lambda tasks, texts: np.ones(len(texts))
    d = evaluation_draws(peft, tok, load_embedded()[:2], "base", None, 1, 4, ok, ok, max_new_tokens=10, progress=False,
                         keep_tokens=True, engine="hf")
    c = with_completions(d, tok)
    assert list(c.completion) == [tok.decode(list(t), skip_special_tokens=True) for t in d.token_ids]
    assert (c.completion.map(text_hash) == c.text_hash).all()
    assert with_completions(c, tok) is c                                        # already there: nothing decoded again


def card_programs(page:str)->dict:
    "{draw id: the program text a run page shows for it} (unescaped)."
    cards = re.findall(r"<div class='draw' id='draw-([^']*)' data-id='[^']*'>.*?<pre class='program'><code>(.*?)</code></pre>", page, re.S)
    return {html.unescape(i): html.unescape(p) for i, p in cards}


def test_the_evaluations_page_shows_its_completions(evaluation, tmp_path):
    "The run page of the real evaluation: the sampled draws with the programs their rows hold, by the stated rule."
    import shutil
    from proposal_nb.programs.tasks import extract_program
    from proposal_nb.site.build import build_site
    from proposal_nb.site.tables import COMPLETION_K, draw_ids
    shutil.copytree(evaluation, tmp_path / "res" / "eval")
    build_site(tmp_path / "res", tmp_path / "site")
    page = (tmp_path / "site" / "run-eval.html").read_text()
    d = pd.read_parquet(evaluation / "draws.parquet")
    d.index = draw_ids(d)
    shown = card_programs(page)
    per = d.groupby("checkpoint").size()                                       # 9 draws per arm: all 3 kinds of k = 2 fit
    assert len(shown) == 2 * 3 * COMPLETION_K and all(n >= 3 * COMPLETION_K for n in per)
    assert {i.split("/")[0] for i in shown} == {"base", "mine"}
    for i, prog in shown.items(): assert prog == extract_program(d.completion[i]), i
    assert "<h2>Completions</h2>" in page and "find_draw(&#x27;res/eval&#x27;, ID)" in page and "site.js" in page


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory):
    "Synthetic runs whose heldout evaluation and iguana training run keep completions (5,000 characters each; the first one shown is hostile); msc keeps hashes only."
    from proposal_nb.analysis.fixtures import synthetic_results
    from proposal_nb.results import read_table, write_table
    from proposal_nb.site.build import build_site
    from proposal_nb.site.tables import completion_sample, draw_ids
    d = tmp_path_factory.mktemp("hostile")
    synthetic_results(d / "res", n_boot=100)
    for name, extra in (("heldout", {}), ("iguana", dict(log_uw=lambda t: np.log(np.maximum(t.valid, 1e-3)) - 0.1 * t.draw))):
        t = read_table(d / "res" / name, "draws").assign(**extra)
        t["completion"] = ["```python\n" + f"# draw {i}\n" + "x = 1\n" * 830 + "```" for i in range(len(t))]
        t.loc[draw_ids(t) == completion_sample(t).id.iloc[0], "completion"] = HOSTILE          # a draw the page shows
        write_table(d / "res" / name, "draws", t)
    build_site(d / "res", d / "site")
    return d


def test_a_hostile_completion_renders_as_text(hostile_site):
    from proposal_nb.programs.tasks import extract_program
    for name in ("heldout", "iguana"):
        page = (hostile_site / "site" / f"run-{name}.html").read_text()
        assert "<script>window.PWNED" not in page and "<script>alert(1)" not in page and "<b>bold</b>" not in page, name
        assert html.escape("</code></pre><script>window.PWNED=1</script><b>bold</b>") in page, name   # the text is on the page, inert
        assert extract_program(HOSTILE) in card_programs(page).values(), name
        assert page.count("<script") == page.count("</script>") == 1 and "<script src='site.js'></script>" in page   # the site's own, only


def test_old_runs_say_hash_only_and_pages_stay_bounded(hostile_site):
    from proposal_nb.site.tables import COMPLETION_GROUPS, COMPLETION_K
    msc = (hostile_site / "site" / "run-msc.html").read_text()
    assert "completion text not stored in this run (hash only)." in msc and "class='draw'" not in msc
    for name in ("heldout", "iguana"):
        f = hostile_site / "site" / f"run-{name}.html"
        page = f.read_text()
        cards = page.count("<div class='draw'")
        assert 0 < cards <= COMPLETION_GROUPS * 3 * COMPLETION_K, (name, cards)
        assert page.count("more characters)") >= cards - 1                 # every 5,000-character text is cut (but the short hostile one)
        assert f.stat().st_size < 400_000, (name, f.stat().st_size)          # 48 cards of two 2,000-character texts at most
    assert "log_uw" in (hostile_site / "site" / "run-iguana.html").read_text()   # the table is still there, without the texts
    assert "x = 1\nx = 1" not in (hostile_site / "site" / "training.html").read_text()
