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
