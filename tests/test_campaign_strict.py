"""The strict pair of the campaign (proposal_nb.pipeline.campaign_job, its report campaign_report) (MISSION finding 3) on CPU with a tiny random model: the arms copy iguana / iguana_kl
with r = strict and mu0 = 0.16 (the existing arms untouched), train and evaluate with strict, base_strict regrades the base
arm's own held-out draws with strict exactly, and the report writes their evaluation apart from campaign_eval."""
import json, math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.xdist_group("campaign_strict")   # one worker: its module fixtures (tiny strict runs) are built once, not once per worker

ROOT = Path(__file__).resolve().parents[1]
from proposal_nb.pipeline import campaign_job as C  # noqa: E402
from proposal_nb.pipeline import campaign_report as R  # noqa: E402

# arm_config(arm).to_dict() of every existing arm before the strict pair was added (commit dc7886c), flattened;
# estimator.clip_floor and estimator.ceiling were added to the saved layout later (one schema: IguanaConfig's fields, the values it always ran with)
IGUANA = {'estimator.baseline': 'zhat', 'estimator.clip': 3.0, 'estimator.clip_floor': None, 'estimator.ceiling': 1e6, 'estimator.kl_beta': 0.0, 'estimator.length_norm': False,
          'estimator.name': 'iguana', 'estimator.skip_invalid': False, 'loop.M': 10, 'loop.check_weights': True,
          'loop.checkpoint_every': 251, 'loop.compile': False, 'loop.ema_beta': 0.999, 'loop.engine': 'fast', 'loop.gen_batch': 32,
          'loop.grad_clip': 1.0, 'loop.lr': 0.0001, 'loop.max_new_tokens': 256, 'loop.prompts_per_step': 8, 'loop.score_batch': 8,
          'loop.score_rows': None, 'loop.seed': 42, 'loop.steps': 250, 'normalizer.baseline_cap': 1.0, 'normalizer.fold_clip': 10.0,
          'normalizer.fold_floor': None, 'normalizer.kind': 'shrinkage', 'normalizer.m0': 50.0, 'normalizer.mu0': 0.48,
          'normalizer.n0': 100.0, 'prior.min_p': 0.0, 'prior.nucleus': False, 'prior.repetition_penalty': 1.0,
          'prior.temperature': 1.0, 'prior.top_k': 0, 'prior.top_p': 1.0}
BEFORE = {"iguana": IGUANA, "iguana_kl": IGUANA | {'estimator.kl_beta': 0.1},
          "msc": IGUANA | {'estimator.clip': 10.0, 'estimator.name': 'msc'},
          "rb_msc": IGUANA | {'estimator.clip': 10.0, 'estimator.name': 'rb-msc'},
          "msc_m2": IGUANA | {'estimator.clip': 10.0, 'estimator.name': 'msc', 'loop.M': 2, 'loop.checkpoint_every': 1251, 'loop.steps': 1250}}
# the loop keys issue 36 added, pinned by campaign.CAMPAIGN_LOOP to what the published arms ran with
SINCE_36 = {'loop.weights': 'scorer', 'loop.scoring': 'model', 'loop.identity_stop': False, 'loop.identity_window': 25,
            'loop.identity_z': 3.0, 'loop.reverse_draws': 8}
# a loop key that changes no number a run computes (the checker beside the scoring: same verdicts, tested in 27_training)
TIMING_ONLY = {'loop.overlap_checks': None}
BEFORE = {a: v | SINCE_36 | TIMING_ONLY for a, v in BEFORE.items()}
flat = lambda d: {f"{k}.{kk}": vv for k, v in d.items() for kk, vv in v.items()}


def test_existing_arms_keep_their_configs():
    assert set(C.ARMS) == set(BEFORE)
    for a, want in BEFORE.items():
        assert flat(C.arm_config(a).to_dict()) == want, a
        assert C.train_potential(a) == "no_error" and C.reference(a) == "base"


def test_strict_arms_copy_iguana_with_strict_and_mu0():
    for a, src in (("iguana_strict", "iguana"), ("iguana_kl_strict", "iguana_kl")):
        got = flat(C.arm_config(a).to_dict())
        assert got == BEFORE[src] | {'normalizer.mu0': 0.16}, a       # the only setting that differs; no `potential` field
        assert C.train_potential(a) == "strict" and C.reference(a) == "base_strict"
        assert flat(C.arm_config(a, {"M": 2}).to_dict())["loop.M"] == 2
    with pytest.raises(SystemExit, match="iguana_strcit"): C.arm_config("iguana_strcit")


def test_mu0_is_the_mean_strict_z_of_the_training_prompts():
    "Recomputed here from the z_table (not via campaign_report.strict_zcounts), then compared with it and with STRICT['mu0']."
    z = pd.read_csv(ROOT / "published" / "h200_z_embedded" / "z_table.csv")
    ids = [t.id for t in C._tasks()[0]]
    s = z[z.potential == "strict"].set_index("prompt_id").loc[ids]
    assert len(ids) == 59 and s.n.sum() == 1180
    assert s.n_valid.sum() / s.n.sum() == pytest.approx(s.Z.mean(), abs=1e-12)     # 20 draws each: the pooled rate is the mean
    assert round(s.Z.mean(), 4) == 0.1593 and round(s.Z.mean(), 2) == C.STRICT["mu0"] == 0.16
    assert ((s.Z <= 0.1).sum(), (s.Z == 0).sum()) == (35, 19)
    got = R.strict_zcounts()["by_potential"]
    assert (got["strict"]["hard"], got["strict"]["zero"], got["strict"]["mean_Z"]) == (35, 19, 0.1593)
    assert got["no_error"]["hard"] == 0 and round(got["no_error"]["mean_Z"], 2) == C.SHARED["mu0"]   # why no_error cannot test (3)


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory):
    from proposal_nb.lm.models import tiny_model
    d = tmp_path_factory.mktemp("tiny")
    m, tok = tiny_model(seed=0); m.save_pretrained(d); tok.save_pretrained(d)
    return str(d)


def fence(code:str)->str: return "```python\n" + code + "```\n"


def spellable(n:int=4):
    "The first n held-out tasks whose reference solution the tiny tokenizer spells (its characters only)."
    from proposal_nb.lm.models import TINY_CHARS
    return [t for t in C._tasks()[1] if set(t.solution) <= set(TINY_CHARS)][:n]


def crafted(task):
    "Completions of one held-out task: its solution (passes the public tests), a wrong body that runs, a syntax error."
    wrong = f"def {task.entry_point}(*a):\n    return 12345\n"
    return [fence(task.solution), fence(wrong), fence(f"def {task.entry_point}(:\n")]


def test_strict_potential_is_the_one_the_arms_train_with(tmp_path, tiny_path):
    "open_run gives the strict arms the real strict potential: the solution passes, a wrong body that runs does not (no_error passes it)."
    task = spellable(1)[0]
    texts = crafted(task)[:2]
    for arm, want in (("iguana_strict", [1.0, 0.0]), ("iguana_kl_strict", [1.0, 0.0]), ("iguana", [1.0, 1.0])):
        run, ex = C.open_run(arm, tmp_path / arm, tiny_path, C.arm_config(arm, dict(M=2, prompts_per_step=2, max_new_tokens=8, steps=2)))
        try:
            assert run.potential.kind == C.train_potential(arm)
            assert run.potential([task] * 2, texts).tolist() == want, arm
            assert run.cfg.normalizer.mu0 == (0.16 if arm != "iguana" else 0.48)
        finally: ex.__exit__(None, None, None)


def test_open_run_loads_the_model_in_the_dtype_asked(tmp_path, tiny_path):
    "--dtype reaches the model (the fp32 weight check of NEXT.md needs it); the default on CPU stays fp32."
    import torch
    cfg = C.arm_config("iguana", dict(M=2, prompts_per_step=2, max_new_tokens=8, steps=2))
    for dtype, want in ((None, torch.float32), ("bfloat16", torch.bfloat16), ("float32", torch.float32)):
        run, ex = C.open_run("iguana", tmp_path / str(dtype), tiny_path, cfg, dtype)
        try: assert {p.dtype for p in run.model.parameters() if not p.requires_grad} == {want}, dtype   # the base model (peft keeps LoRA in fp32)
        finally: ex.__exit__(None, None, None)


def fake_base(runs:Path, tiny_path:str)->pd.DataFrame:
    "A base held-out table of crafted completions (tokenised with the tiny tokenizer), graded as `base` grades: no_error, correctness."
    from transformers import AutoTokenizer
    from proposal_nb.lm.rollouts import grade, text_hash
    from proposal_nb.programs.potentials import make_potential
    from proposal_nb.programs.sandbox import Executor
    tok = AutoTokenizer.from_pretrained(tiny_path)
    tasks = spellable()
    ft, texts = [t for t in tasks for _ in range(3)], [c for t in tasks for c in crafted(t)]
    with Executor() as ex: r = grade({"valid": make_potential("no_error", ex), "correct": make_potential("correctness", ex)}, ft, texts)
    ids = [tok(x, add_special_tokens=False)["input_ids"] for x in texts]
    n = len(texts)
    d = pd.DataFrame(dict(prompt_id=[t.id for t in ft], checkpoint="base", run=0, draw=[i % 3 for i in range(n)], valid=r["valid"],
                          correct=r["correct"] * (r["valid"] > 0), logp=-np.arange(1.0, n + 1), logq=-np.arange(1.0, n + 1),
                          logr=np.where(r["valid"] > 0, 0.0, -np.inf), length=[len(i) for i in ids], text_hash=[text_hash(x) for x in texts],
                          prompt_ids=[[1, 5, 6]] * n, token_ids=ids, difficulty="easy", library="python"))
    (runs / "base").mkdir(parents=True); d.to_parquet(runs / "base" / "heldout_draws.parquet")
    return d


def test_base_strict_regrades_the_base_draws_with_strict_exactly(tmp_path, tiny_path):
    from proposal_nb.programs.potentials import make_potential
    from proposal_nb.programs.sandbox import Executor
    runs = tmp_path / "runs"
    base = fake_base(runs, tiny_path)
    by_id = {t.id: t for t in C._tasks()[1]}
    texts = [c for t in spellable() for c in crafted(t)]
    with Executor() as ex:
        strict = make_potential("strict", ex)([by_id[i] for i in base.prompt_id], texts)
        corr = make_potential("correctness", ex)([by_id[i] for i in base.prompt_id], texts)
    assert strict.tolist() == [1.0, 0.0, 0.0] * 4 and base.valid.tolist() == [1.0, 1.0, 0.0] * 4   # strict and no_error differ here
    d = pd.read_parquet(C.base_strict(runs, tiny_path))
    np.testing.assert_array_equal(d.valid.to_numpy(), strict)
    np.testing.assert_array_equal(d.correct.to_numpy(), corr * (strict > 0))
    assert np.array_equal(d.logr.to_numpy(), np.where(strict > 0, 0.0, -np.inf))
    assert (d.checkpoint == "base_strict").all()
    same = [c for c in base.columns if c not in ("valid", "correct", "logr", "checkpoint")]
    pd.testing.assert_frame_equal(d[same], base[same])                          # the same draws: keys, tokens, densities
    led = json.loads((runs / "base_strict" / "ledger.jsonl").read_text().splitlines()[-1])
    assert (led["draws"], led["no_error_reproduced"], led["correct_reproduced"]) == (12, 12, 12)
    assert led["validity"] == pytest.approx(4 / 12) and led["base_validity"] == pytest.approx(8 / 12)
    base.assign(text_hash=base.text_hash.where(base.index != 5, "0" * 16)).to_parquet(runs / "base" / "heldout_draws.parquet")
    with pytest.raises(SystemExit, match="row 5"): C.base_strict(runs, tiny_path)   # a text that does not rebuild is refused


@pytest.fixture(scope="module")
def strict_runs(tmp_path_factory, tiny_path):
    """base, base_strict and three arms (iguana, iguana_strict, iguana_kl_strict) trained 2 steps with held-out checkpoints, on 3
    training and 2 held-out prompts. A random model never writes a program that passes public tests, so a stand-in registered
    under the name `strict` grades: the parity of the program's character codes (a function of what text_hash hashes); it
    records its verdict per text_hash, so every table's validity can be checked against it. no_error and correctness stay real."""
    from proposal_nb.lm.rollouts import text_hash
    from proposal_nb.programs import potentials
    from proposal_nb.programs.tasks import extract_program
    runs, seen, real = tmp_path_factory.mktemp("runs"), {}, potentials.make_potential

    class Parity:
        kind = "strict"
        def __call__(self, tasks, completions):
            v = np.array([float(sum(map(ord, extract_program(c).strip())) % 2 == 0) for c in completions])
            seen.update(zip(map(text_hash, completions), v))
            return v

    tr, ho = C._tasks()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(C, "_tasks", lambda: (tr[:3], ho[:2]))
        for k, v in dict(R=1, M=3, batch_size=8).items(): mp.setitem(C.EVAL, k, v)
        mp.setitem(C.SHARED, "max_new_tokens", 8)
        mp.setattr(potentials, "make_potential", lambda name, ex=None, **kw: Parity() if name == "strict" else real(name, ex, **kw))
        C.base_eval(runs, tiny_path)
        C.base_strict(runs, tiny_path)
        for arm in ("iguana", "iguana_strict", "iguana_kl_strict"):
            over = dict(M=2, prompts_per_step=2, max_new_tokens=8, steps=2)
            C.train(arm, runs / arm, tiny_path, math.inf, config=C.arm_config(arm, over), overrides=over,
                    base_file=runs / C.reference(arm) / "heldout_draws.parquet")
    return runs, seen


def test_strict_arms_train_and_evaluate_with_strict(strict_runs):
    runs, seen = strict_runs
    verdict = lambda t: np.array([seen[h] for h in t.text_hash])
    base, bs = (pd.read_parquet(runs / a / "heldout_draws.parquet") for a in ("base", "base_strict"))
    np.testing.assert_array_equal(bs.valid.to_numpy(), verdict(bs))                  # base_strict: the same draws, graded strict
    assert (base.valid == 0).all() and list(bs.text_hash) == list(base.text_hash)    # real no_error: a random model's text never runs
    pooled = []
    for arm in ("iguana", "iguana_strict", "iguana_kl_strict"):
        led = json.loads((runs / arm / "ledger.jsonl").read_text().splitlines()[-1])
        assert led["potential"] == C.train_potential(arm) and led["end_step"] == 2
        cfg = json.loads((runs / arm / "config.json").read_text())
        assert cfg["normalizer"]["mu0"] == (0.48 if arm == "iguana" else 0.16)
        assert cfg["estimator"]["kl_beta"] == (0.1 if arm == "iguana_kl_strict" else 0.0)
        tables = [pd.read_parquet(runs / arm / "draws.parquet")]                      # training draws
        tables += [pd.read_parquet(f) for f in sorted((runs / arm / "heldout").glob("step-*_draws.parquet"))]
        assert len(tables) == 3                                                        # checkpoints at steps 1 and 2
        for t in tables:
            if arm == "iguana": assert (t.valid == 0).all()
            else: np.testing.assert_array_equal(t.valid.to_numpy(), verdict(t)); pooled += list(t.valid)
        for f in (runs / arm / "heldout").glob("step-*_prior.parquet"):               # the report card re-scores the arm's reference
            pr = pd.read_parquet(f)
            ref = bs if arm != "iguana" else base
            assert list(pr.text_hash) == list(ref.text_hash) and list(pr.valid) == list(ref.valid)
    assert 0 < np.mean(pooled) < 1                                                     # the stand-in separated texts: the checks bite


def test_report_keeps_the_strict_evaluation_apart(strict_runs, tmp_path):
    from proposal_nb.results import read_table
    runs, _ = strict_runs
    R.report(runs, tmp_path, n_boot=50)
    cfg = {k: json.loads((tmp_path / k / "config.json").read_text()) for k in ("campaign_eval", "campaign_strict_eval")}
    assert cfg["campaign_eval"]["checkpoints"] == ["base", "iguana-step-1", "iguana-step-2"]
    assert cfg["campaign_strict_eval"]["checkpoints"] == ["base_strict", "iguana_strict-step-1", "iguana_strict-step-2",
                                                          "iguana_kl_strict-step-1", "iguana_kl_strict-step-2"]
    assert cfg["campaign_strict_eval"]["potentials"] == dict(valid="strict", correct="correctness")
    assert set(cfg["campaign_strict_eval"]["gpu_minutes"]) == {"base_strict", "iguana_strict", "iguana_kl_strict"}
    assert not {"base_strict", *C.STRICT_ARMS} & set(cfg["campaign_eval"]["gpu_minutes"])
    bs = pd.read_parquet(runs / "base_strict" / "heldout_draws.parquet")
    for k, ref, arms in (("campaign_eval", "base", {"base", "iguana"}), ("campaign_strict_eval", "base_strict", {"base_strict", *C.STRICT_ARMS})):
        d, paired = read_table(tmp_path / k, "draws"), read_table(tmp_path / k, "paired")
        assert set(d.arm) == arms
        against = paired[(paired.a == ref) & (paired.metric == "validity")].set_index("b")
        assert list(against.index) == cfg[k]["checkpoints"][1:]                       # every checkpoint against its reference
        for b, row in against.iterrows():                                             # diff = mean over prompts of the validity change
            m = d[d.checkpoint.isin([ref, b])].groupby(["checkpoint", "prompt_id"]).valid.mean().unstack(0)
            assert row["diff"] == pytest.approx((m[b] - m[ref]).mean(), abs=1e-12)
    sd = read_table(tmp_path / "campaign_strict_eval", "draws")
    assert list(sd[sd.arm == "base_strict"].valid) == list(bs.valid)
    for arm in ("iguana", *C.STRICT_ARMS):
        c = json.loads((tmp_path / f"campaign_{arm}" / "config.json").read_text())
        assert c["status"] == "complete" and c["potential"] == C.train_potential(arm)
        assert c["user_command"] == (C.STRICT_COMMAND if arm in C.STRICT_ARMS else R.USER_COMMAND)
        assert {"gpu_minutes", "machine", "commit"} <= set(c) and len(read_table(tmp_path / f"campaign_{arm}", "draws")) == 2 * 2 * 2


def test_report_counts_the_weight_check_runs_as_gpu_sharers(strict_runs, tmp_path):
    # campaign_job.sh's arm weightcheck trains beside the arms into RUNS/weight_check/<dtype>/iguana: its jobs share the GPU,
    # so an arm's attributed minutes fall when one ran over the same seconds (here: a copy of iguana's last job)
    import shutil
    runs = shutil.copytree(strict_runs[0], tmp_path / "runs")
    R.report(runs, tmp_path / "plain", n_boot=50)
    job = json.loads((runs / "iguana" / "ledger.jsonl").read_text().splitlines()[-1])
    (runs / "weight_check" / "float32" / "iguana").mkdir(parents=True)
    (runs / "weight_check" / "float32" / "iguana" / "ledger.jsonl").write_text(json.dumps(job) + "\n")
    R.report(runs, tmp_path / "shared", n_boot=50)
    m = {k: json.loads((tmp_path / k / "campaign_eval" / "config.json").read_text())["gpu_minutes"] for k in ("plain", "shared")}
    assert "weight_check_float32" in m["shared"] and "weight_check_float32" not in m["plain"]
    assert m["shared"]["iguana"]["wall"] == m["plain"]["iguana"]["wall"]
    assert m["shared"]["iguana"]["attributed"] < m["plain"]["iguana"]["attributed"]
