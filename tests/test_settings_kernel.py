"The run settings build their estimator kernels field by field by name, so a new kernel field never shifts the others."
from dataclasses import fields
from proposal_nb.lm.training import EstimatorConfig, NormalizerSettings


def _distinct(cls):
    "Settings whose every field holds a value unlike its default (so a misplaced value shows)."
    vals = dict(clip=7.0, baseline="batch_mean", kl_beta=0.25, skip_invalid=True, length_norm=True,
                kind="eb", n0=11.0, m0=12.0, mu0=0.3, fold_clip=13.0, baseline_cap=0.9, fold_floor=0.7)
    return cls(**{f.name: vals[f.name] for f in fields(cls) if f.name in vals})


def test_kernels_take_every_shared_field_by_name():
    for cls in (EstimatorConfig, NormalizerSettings):
        s = _distinct(cls); k = s.kernel()
        shared = [n for n in k._fields if hasattr(s, n)]
        assert len(shared) >= 5, shared
        for n in shared: assert getattr(k, n) == getattr(s, n), (cls.__name__, n, getattr(k, n), getattr(s, n))


def test_lm_runs_keep_the_published_runs_estimator():
    "The LM run settings stay at what the published GPU runs used (clip 10, shrinkage, no fold floor); issue 22's toy recipe is opt-in."
    k, n = EstimatorConfig().kernel(), NormalizerSettings().kernel()
    assert (k.clip, k.clip_floor, k.baseline) == (10.0, None, "zhat")
    assert (n.kind, n.fold_clip, n.fold_floor, n.baseline_cap) == ("shrinkage", 10.0, None, 1.0)
