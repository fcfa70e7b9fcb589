"One schema, one flat boundary: every flat name reaches its own field and comes back, and the LM default is a named recipe."
from dataclasses import fields
from proposal_nb.config import FLAT, LM_RECIPE, OnlineConfig, LoopConfig, from_flat, to_flat
from proposal_nb.estimators.registry import RECIPES

# a value unlike the default for every flat name (so a misplaced value shows)
DISTINCT = dict(M=7, prompts_per_step=3, steps=11, lr=2e-4, grad_clip=0.5, max_new_tokens=99, checkpoint_every=5, seed=7,
                ema_beta=0.9, engine="hf", compile=True, overlap_checks=True, gen_batch=9, score_batch=4, score_rows=6, check_weights=False,
                weights="scorer", scoring="model", identity_window=13, identity_z=2.5, identity_stop=False, reverse_draws=3,
                estimator="msc", clip=7.0, clip_floor=1.5, baseline="batch_mean", kl_beta=0.25, skip_invalid=True, length_norm=True,
                ceiling=1e5, normalizer="eb", n0=11.0, m0=12.0, mu0=0.3, fold_clip=13.0, baseline_cap=0.9, fold_floor=0.7,
                prior_temperature=0.8, prior_top_k=20, prior_top_p=0.9, prior_min_p=0.05, prior_repetition_penalty=1.05, nucleus=True)


def test_every_flat_name_reaches_its_own_field():
    assert set(DISTINCT) == set(FLAT)
    c = from_flat(DISTINCT)
    assert to_flat(c) == DISTINCT
    default = to_flat(OnlineConfig())
    for k in FLAT: assert to_flat(from_flat({k: DISTINCT[k]})) == default | {k: DISTINCT[k]}, k


def test_lm_runs_keep_the_published_runs_estimator():
    "The LM default is the named recipe h200_pilot (clip 10, shrinkage, no fold floor); the toy recipe many_prompts is opt-in."
    assert LM_RECIPE == "h200_pilot"
    c = OnlineConfig()
    assert (c.iguana, c.normalizer) == tuple(RECIPES[LM_RECIPE][:2])
    assert (c.iguana.clip, c.iguana.clip_floor, c.iguana.baseline) == (10.0, None, "zhat")
    assert (c.normalizer.kind, c.normalizer.fold_clip, c.normalizer.fold_floor, c.normalizer.baseline_cap) == ("shrinkage", 10.0, None, 1.0)
