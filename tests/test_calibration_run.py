"""The calibration run notebook end to end (generation -> sandbox -> metrics -> judge) with the tiny random model,
so it runs in seconds; the embedded model runs the same notebook with its defaults (nbs/runs/30_calibration)."""
import json

import pandas as pd

from proposal_nb.lm.models import tiny_model
from proposal_nb.pipeline.notebooks import REPO, run_notebook


def test_run_with_tiny_model(tmp_path):
    m, tok = tiny_model(seed=0)
    m.save_pretrained(tmp_path / "tiny"); tok.save_pretrained(tmp_path / "tiny")
    from proposal_nb.programs.tasks import load_embedded
    ts = load_embedded()[:3]
    pd.DataFrame(dict(task_id=[t.id for t in ts] + [ts[0].id],
                      completion=[f"```python\n{t.solution}```" for t in ts] + ["```python\nraise ValueError\n```"])
                 ).to_csv(tmp_path / "saved.csv", index=False)
    out = tmp_path / "run"
    run_notebook(REPO / "nbs" / "runs" / "30_calibration.ipynb", out,
                 dict(out_dir=str(out), model=str(tmp_path / "tiny"), device="cpu", n_bundles=2, particles=2, rounds=2, reruns=1,
                      max_new_tokens=24, judge_items=6, judge_answers=["yes", "no"], judge_variants=False, n_boot=200, bar=0.05,
                      programs_path=str(tmp_path / "saved.csv")),
                 progress=False)
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["bar"] == 0.05 and cfg["samples_per_bundle_and_arm"] == 4
    rec = pd.read_parquet(out / "records.parquet")
    assert rec.groupby("arm").size().to_dict() == {"resample": 8, "solo": 8, "ring": 8, "star": 8}
    assert (rec.visible.map(len) == 5).all() and (rec.hidden.map(len) == 10).all()
    assert len(pd.read_parquet(out / "reruns.parquet")) == 8
    hill = pd.read_csv(out / "hill.csv")
    assert hill.programs.sum() == 32
    assert list(pd.read_csv(out / "calibration.csv").columns) == ["bucket", "n", "pass_rate", "lo", "hi"]
    j = pd.read_csv(out / "judge.csv")
    assert len(j) == 6 and j.p_pass.between(0, 1).all() and j.answer_mass.between(0, 1).all()
    hs = pd.read_csv(out / "hill_saved.csv").set_index("bucket")   # reference solutions pass, the raising program does not
    assert hs.loc["all", "programs"] == 3 and hs.loc["all", "hidden_passes"] == 3 and hs.loc["0", "programs"] == 1
    s = json.loads((out / "summary.json").read_text())
    assert set(s["primary"]) == {"resample", "solo", "ring", "star"}
    js = pd.read_csv(out / "judge_saved.csv")          # the judge on the saved programs too: all 4 (fewer than judge_items)
    assert len(js) == 4 and js.p_pass.between(0, 1).all()
    assert sorted(js.passed.tolist()) == [0, 1, 1, 1]      # their hidden passes: 3 reference solutions, 1 raising program
    assert s["judge_saved"]["n_pos"] == 3 and s["judge_saved"]["n_neg"] == 1 and 0 <= s["judge_saved"]["auc"] <= 1


def test_bundle_size_and_difficulties_reach_the_run(tmp_path):
    "The pre-registered v2 design (published/h200_calibration_v2): the size and the task pool are parameters, recorded in config.json."
    m, tok = tiny_model(seed=0)
    m.save_pretrained(tmp_path / "tiny"); tok.save_pretrained(tmp_path / "tiny")
    out = tmp_path / "run"
    run_notebook(REPO / "nbs" / "runs" / "30_calibration.ipynb", out,
                 dict(out_dir=str(out), model=str(tmp_path / "tiny"), device="cpu", n_bundles=3, bundle_size=2, difficulties=["easy"],
                      particles=1, rounds=2, reruns=0, max_new_tokens=16, judge_items=0, n_boot=100),
                 progress=False)
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["bundle_size"] == 2 and cfg["difficulties"] == ["easy"] and cfg["n_bundles"] == 3
    rec = pd.read_parquet(out / "records.parquet")
    assert (rec.visible.map(len) == 2).all() and (rec.hidden.map(len) == 4).all()     # 2 shown, 2 x 2 hidden asserts
    assert rec.groupby("arm").size().to_dict() == {"resample": 6, "solo": 6, "ring": 6, "star": 6}
    from proposal_nb.programs.grading import make_bundles
    from proposal_nb.programs.tasks import load_embedded
    import numpy as np
    easy = [t for t in load_embedded() if t.tags.get("difficulty") == "easy"]
    ref = make_bundles(easy, 3, np.random.default_rng(0), size=2)                      # seed 0: the notebook's default
    assert sorted(set(rec.bundle)) == [b.id for b in ref]
    by_id = {t.id: t for t in load_embedded()}
    assert all(by_id[t.id].tags["difficulty"] == "easy" for b in ref for t in b.tasks)


def test_bad_bundle_size_is_refused(tmp_path):
    import pytest
    out = tmp_path / "run"
    with pytest.raises(Exception, match="bundle_size must be an integer >= 1, got 0"):
        run_notebook(REPO / "nbs" / "runs" / "30_calibration.ipynb", out, dict(out_dir=str(out), device="cpu", bundle_size=0), progress=False)


def test_generated_fitness_on_chosen_tasks(tmp_path):
    """fitness='generated' on the tasks task_ids names (the seed's swarm control on tasks the base never passes): each function's
    generated tests join the fitness, the bundles come from those tasks only, and both reach config.json."""
    import numpy as np
    from proposal_nb.programs.generated_tests import load_tests
    from proposal_nb.programs.grading import eligible_tasks, make_bundles
    from proposal_nb.programs.tasks import load_embedded
    gen = load_tests()
    pool = [t for t in eligible_tasks(load_embedded()) if t.id in gen and gen[t.id].cases][:3]
    ids = [t.id for t in pool]
    m, tok = tiny_model(seed=0)
    m.save_pretrained(tmp_path / "tiny"); tok.save_pretrained(tmp_path / "tiny")
    out = tmp_path / "run"
    run_notebook(REPO / "nbs" / "runs" / "30_calibration.ipynb", out,
                 dict(out_dir=str(out), model=str(tmp_path / "tiny"), device="cpu", n_bundles=3, bundle_size=1, task_ids=ids,
                      fitness="generated", particles=1, rounds=2, reruns=0, max_new_tokens=16, judge_items=0, n_boot=100),
                 progress=False)
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["fitness"] == "generated" and cfg["task_ids"] == ids
    rec = pd.read_parquet(out / "records.parquet")
    ref = make_bundles(pool, 3, np.random.default_rng(0), size=1)                        # seed 0: the notebook's default
    n_cases = {b.id: len(gen[b.tasks[0].id].cases) for b in ref}
    assert (rec.generated_total == rec.bundle.map(n_cases)).all()
    assert (rec.visible_total == 1 + rec.generated_total).all() and (rec.visible.map(len) == 1).all()
    assert (rec.fitness == rec.visible.map(sum) + rec.generated_passed).all()


def test_bad_fitness_and_unknown_task_ids_are_refused(tmp_path):
    import pytest
    for params, msg in ((dict(fitness="hidden"), "fitness must be 'shown' or 'generated'"),
                        (dict(task_ids=["embedded/no_such_task"]), "task_ids names 1 id"),
                        (dict(task_ids=["embedded/top_customers"], fitness="generated"), "1 of task_ids have no generated tests")):
        out = tmp_path / f"run_{len(msg)}"
        with pytest.raises(Exception, match=msg):
            run_notebook(REPO / "nbs" / "runs" / "30_calibration.ipynb", out, dict(out_dir=str(out), device="cpu", **params), progress=False)


def test_a_stopped_run_resumes_to_the_same_records(tmp_path):
    """A run that stopped after some (arm, round) steps goes on from records_partial.parquet and ends with the whole run's rows;
    a stopped run with other parameters is refused, and resume=False starts afresh."""
    import pytest
    from papermill.exceptions import PapermillExecutionError
    m, tok = tiny_model(seed=0)
    m.save_pretrained(tmp_path / "tiny"); tok.save_pretrained(tmp_path / "tiny")
    nb = REPO / "nbs" / "runs" / "30_calibration.ipynb"
    params = lambda out, **kw: dict(out_dir=str(out), model=str(tmp_path / "tiny"), device="cpu", n_bundles=2, bundle_size=1, fitness="generated",
                                     task_ids=["embedded/count_vowels", "embedded/gcd"], particles=2, rounds=2, reruns=0, max_new_tokens=24,
                                     judge_items=0, n_boot=100) | kw
    whole = tmp_path / "whole"
    run_notebook(nb, whole, params(whole), progress=False)
    rec = pd.read_parquet(whole / "records.parquet")
    assert not (whole / "records_partial.parquet").exists()            # removed once the records are saved
    stopped = tmp_path / "stopped"                                     # as a run stopped after 3 of its 8 steps leaves its folder
    stopped.mkdir()
    (stopped / "config.json").write_text((whole / "config.json").read_text().replace(str(whole), str(stopped)))
    rec.iloc[:3 * 4].to_parquet(stopped / "records_partial.parquet")
    run_notebook(nb, stopped, params(stopped), progress=False)
    again = pd.read_parquet(stopped / "records.parquet")
    cols = [c for c in rec.columns if c not in ("visible", "hidden")]
    pd.testing.assert_frame_equal(again[cols], rec[cols])
    assert again.visible.map(list).tolist() == rec.visible.map(list).tolist()
    cfg, s = json.loads((stopped / "config.json").read_text()), json.loads((stopped / "summary.json").read_text())
    assert len(cfg["resumed"]) == 1 and s["samples_resumed"] == 12
    rec.iloc[:4].to_parquet(stopped / "records_partial.parquet")
    with pytest.raises(PapermillExecutionError, match="a stopped run with other parameters \\(particles, samples_per_bundle_and_arm\\)"):
        run_notebook(nb, stopped, params(stopped, particles=1), progress=False)
    run_notebook(nb, stopped, params(stopped, particles=1, resume=False), progress=False)
    assert len(pd.read_parquet(stopped / "records.parquet")) == 2 * 4 * 1 * 2 and not (stopped / "records_partial.parquet").exists()
