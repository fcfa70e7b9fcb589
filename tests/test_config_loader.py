"Every published config.json is read through the one loader, config.load_config, and says what ran."
import json
from pathlib import Path

import pytest

from proposal_nb.config import LEGACY, LEGACY_SKIP, FLAT_V1, OnlineConfig, load_config
from proposal_nb.estimators.registry import RECIPES
from proposal_nb.pipeline.campaign_job import arm_config
from proposal_nb.lm.training import _config_diff

PUB = Path(__file__).resolve().parents[1] / "published"
FILES = sorted(PUB.glob("*/config.json"))
flat = lambda d: {f"{p}.{k}": v for p, part in d.items() for k, v in part.items()}


def _training(d):
    return d.get("config") if d.get("kind") == "exact_weights" else d.get("training")


@pytest.mark.parametrize("f", FILES, ids=lambda f: f.parent.name)
def test_every_published_config_loads(f):
    d = json.loads(f.read_text()); r = load_config(f.parent)
    assert r == load_config(d) and r.kind == d.get("kind")
    t = _training(d)
    if r.layout == "nested":
        got = flat(r.training.to_dict()); saved = flat(t)
        assert {k: got[k] for k in saved} == saved                                       # every key in the file, as written
        assert set(got) - set(saved) == set(r.filled)
        assert set(r.filled) <= {f"{p}.{k}" for p, k in (*LEGACY, *LEGACY_SKIP)}, r.filled   # only keys with a known history
    elif r.layout == "flat_v1": assert set(t) <= set(FLAT_V1)
    elif r.layout == "offline": assert r.training.items() >= t.items()
    else: assert r.training is None


def test_layout_counts():
    from collections import Counter
    got = Counter(load_config(f.parent).layout for f in FILES)
    assert (got["nested"], got["flat_v1"], got["offline"]) == (13, 1, 4) and sum(got.values()) == len(FILES), got


def test_recipes_stand_on_their_evidence():
    pilot = load_config(PUB / "h200_iguana").training
    assert (pilot.iguana, pilot.normalizer) == (RECIPES["h200_pilot"].iguana, RECIPES["h200_pilot"].normalizer._replace(mu0=0.4))
    for name in ("campaign_iguana", "campaign_iguana_kl", "campaign_iguana_fp32", "campaign_iguana_kl_fp32",
                 "campaign_iguana_strict", "campaign_iguana_kl_strict", "h200_exact_weights"):
        c = load_config(PUB / name).training
        assert c.iguana._replace(kl_beta=0.0) == RECIPES["campaign"].iguana, name
        assert c.normalizer._replace(mu0=0.5) == RECIPES["campaign"].normalizer, name
    assert json.loads((PUB / "cpu_many_prompts_noclip" / "config.json").read_text()).get("defaults_changed") is True


def test_runs_without_a_fold_floor_load_without_one():
    for name in ("campaign_iguana_kl", "campaign_rb_msc", "h200_iguana"):
        assert load_config(PUB / name).training.normalizer.fold_floor is None, name


@pytest.mark.parametrize("arm", ["iguana", "iguana_kl", "msc", "rb_msc", "msc_m2"])
def test_published_campaign_checkpoints_still_resume(arm):
    for suffix in ("", "_fp32"):
        saved = _training(json.loads((PUB / f"campaign_{arm}{suffix}" / "config.json").read_text()))
        assert _config_diff(arm_config(arm).to_dict(), saved) == [], (arm, suffix)
