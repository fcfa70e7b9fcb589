"""Issue 37: a researcher's own runs (a small local model, a 7-row task file) through the commands a user types, run from
a folder outside the checkout. Each test pins one problem the old code had, seen as the user sees it (files, exit codes,
messages, seconds); the issue's item number is in the test's name. Training and evaluation use the tiny random model
(lm.models.tiny_model) saved as a local folder, two steps of two draws, so the whole file takes about a minute.

What the old code did, and why the notebook tests missed it: they ran the pipeline from the checkout (where the
kernel's working directory and the caller's are one), on the embedded model and task names (never a relative file),
into fresh temporary folders (never one holding a user's run or a published name)."""
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proposal_nb.lm.models import tiny_model
from proposal_nb.pipeline.notebooks import RUNS, run_notebook
from proposal_nb.results import find_runs, published_root

pytestmark = pytest.mark.xdist_group("user_runs")   # one worker: its module fixture (a trained user run) is built once, not once per worker

ROOT = Path(__file__).resolve().parents[1]
CLI = str(Path(sys.executable).with_name("proposal-nb"))
SMALL_TRAIN = ["--set", "steps=2", "--set", "M=2", "--set", "max_new_tokens=8", "--set", "checkpoint_every=1"]
SMALL_EVAL = ["--set", "R=1", "--set", "M=2", "--set", "max_new_tokens=8", "--set", "n_boot=50"]
TRAIN = ["run", "11_train_online.ipynb", "-p", "model", "my-coder", "-p", "tasks", "my_tasks.jsonl"]


def cli(*args, cwd, timeout=600, **env):
    "`proposal-nb ARGS` in `cwd`; without Chromium on PATH, so a site build is not followed by its browser check."
    e = {**os.environ, "PATH": str(Path(sys.executable).parent), "COLUMNS": "200", **env}
    return subprocess.run([CLI, *args], cwd=cwd, env=e, capture_output=True, text=True, timeout=timeout)


def native_tasks(n:int=7)->str:
    "The first n embedded tasks as a user's native task file (ids renamed)."
    rows = [json.loads(l) for l in (ROOT / "data" / "tasks" / "embedded.jsonl").read_text().splitlines()[:n]]
    return "".join(json.dumps({**r, "id": r["id"].replace("embedded/", "mine/")}) + "\n" for r in rows)


def html_tables(page:str)->list:
    "Every <table> of an HTML page as a DataFrame of its cells' text (header row from <th>)."
    import html, re
    import pandas as pd
    text = lambda c: html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
    out = []
    for t in re.findall(r"<table.*?</table>", page, re.S):
        head = [text(c) for c in re.findall(r"<th[^>]*>(.*?)</th>", t, re.S)]
        body = [[text(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)] for r in re.findall(r"<tr[^>]*>(.*?)</tr>", t, re.S)]
        out.append(pd.DataFrame([r for r in body if len(r) == len(head)], columns=head))
    return out


def snapshot(folder:Path)->dict:
    "{relative path: sha256} of every file under a folder."
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    "A user's folder outside the checkout: my-coder (a local model), my_tasks.jsonl, and runs/my_iguana trained from there."
    d = tmp_path_factory.mktemp("user")
    m, tok = tiny_model(seed=0)
    m.save_pretrained(d / "my-coder"); tok.save_pretrained(d / "my-coder")
    (d / "my_tasks.jsonl").write_text(native_tasks())
    (d / "mbpp.jsonl").write_text("".join(json.dumps(dict(task_id=i, text=f"Write f{i}.", code=f"def f{i}(): return {i}",
                                                          test_list=[f"assert f{i}() == {i}"])) + "\n" for i in range(3)))
    (d / "no_public.jsonl").write_text("".join(json.dumps(dict(id=f"t{i}", prompt=f"Write f{i}.", entry_point=f"f{i}", public_tests=[],
                                                                hidden_tests=[f"assert f{i}() == {i}"])) + "\n" for i in range(6)))
    p = cli("run", "11_train_online.ipynb", "-p", "model", str(d / "my-coder"), "-p", "tasks", str(d / "my_tasks.jsonl"),   # absolute paths:
            "--out", str(d / "runs" / "my_iguana"), *SMALL_TRAIN, cwd=d)                                             # the old code ran it too
    assert p.returncode == 0, p.stdout + p.stderr
    return d


def test_item3_the_run_folder_lands_where_the_command_ran(user):
    """Old: the kernel ran in the checkout, so `-p tasks my_tasks.jsonl` was 'no such file' and tables went to <checkout>/runs;
    item 10: the notebook's name without .ipynb was 'no notebook'."""
    p = cli("run", "11_train_online", *TRAIN[2:], "--out", "runs/relative", *SMALL_TRAIN, cwd=user)
    assert p.returncode == 0, p.stdout + p.stderr
    run = user / "runs" / "relative"
    for f in ("11_train_online.ipynb", "run.log", "config.json", "log.parquet", "draws.parquet", "checkpoints/step-2/adapter/adapter_config.json"):
        assert (run / f).exists(), f
    assert not (ROOT / "runs").exists()
    cfg = json.loads((run / "config.json").read_text())
    assert (cfg["model"], cfg["tasks"], cfg["out_dir"]) == (str(user / "my-coder"), str(user / "my_tasks.jsonl"), str(run))


def test_item8_mu0_is_measured_not_assumed(user):
    "Old: mu0 defaulted to 0.5 for a user's run (the main job alone measured it)."
    cfg = json.loads((user / "runs" / "my_iguana" / "config.json").read_text())
    assert cfg["mu0"]["how"].startswith("measured: mean validity"), cfg["mu0"]
    assert cfg["training"]["normalizer"]["mu0"] == cfg["mu0"]["value"] and 0.05 <= cfg["mu0"]["value"] <= 0.95


def test_item5_a_refused_resume_leaves_the_folder_as_it_was(user):
    "Old: the notebook wrote config.json with the refused settings before OnlineRun refused the resume."
    run = user / "runs" / "my_iguana"
    before = snapshot(run)
    p = cli("run", "11_train_online.ipynb", "-p", "model", str(user / "my-coder"), "-p", "tasks", str(user / "my_tasks.jsonl"),
            "--out", str(run), *SMALL_TRAIN, "--set", "M=4", cwd=user)
    assert p.returncode == 1 and "holds a training run with other settings (M: was 2, now 4)" in p.stderr, p.stderr
    assert snapshot(run) == before                                          # not a byte changed, run.log included
    # the notebook's own guard (papermill without the command's checks): the run's config and notebook stay
    params = dict(model=str(user / "my-coder"), tasks=str(user / "my_tasks.jsonl"), out_dir=str(run), steps=2, M=4, max_new_tokens=8, checkpoint_every=1)
    with pytest.raises(Exception, match="other settings"):
        run_notebook(RUNS / "11_train_online.ipynb", run, params, log=user / "guard.log", cwd=user)
    from proposal_nb.results import failed_attempt
    after = snapshot(run)
    assert {k: after[k] for k in ("config.json", "11_train_online.ipynb")} == {k: before[k] for k in ("config.json", "11_train_online.ipynb")}
    assert (run / "11_train_online.failed.ipynb").exists() and failed_attempt(run) is None
    (run / "11_train_online.failed.ipynb").unlink()


def test_item6_a_failed_attempt_is_no_run(user):
    "Old: config.json was written before the model loaded, so every failure left a folder the site listed as a training run."
    from proposal_nb.results import failed_attempt
    out = user / "runs" / "broken"
    with pytest.raises(Exception, match="no such folder"):
        run_notebook(RUNS / "11_train_online.ipynb", out, dict(model=str(user / "no-such-model"), out_dir=str(out)), log=out / "run.log", cwd=user)
    assert not (out / "config.json").exists() and "no such folder" in failed_attempt(out)["error"]
    assert "broken" not in [r.name for r in find_runs(user / "runs", failed=True)]   # no config: not even a failed run


@pytest.mark.parametrize("args, says", [
    (["-p", "model", "my-codr"], "model 'my-codr': no such folder"),
    (["-p", "model", "no-org/no-such-coder"], "the HF hub cannot be reached (offline)"),
    (["-p", "model", "my-coder", "-p", "tasks", "mbpp.jsonl"], "the row looks like the 'mbpp' layout: load it with layout='mbpp' (-p layout mbpp)"),
    (["-p", "model", "my-coder", "-p", "tasks", "my_tasks.jsonl", "-p", "layout", "mbbp"], "unknown layout 'mbbp'"),
    (["-p", "model", "my-coder", "-p", "tasks", "my_tasks.jsonl", "-p", "potential", "correct"], "potential 'correct' is not one of no_error, strict, tiered"),
    (["-p", "model", "my-coder", "-p", "tasks", "my_tasks.jsonl", "-p", "engine", "vlm"], "engine 'vlm' is not one of auto, fast, vllm, hf"),
    (["-p", "model", "my-coder", "-p", "tasks", "no_public.jsonl", "-p", "potential", "strict"],
     "no_public.jsonl, row 1: potential 'strict' needs public tests; task 't0' has none"),     # item 2: was found at the first grading
], ids=["model-folder", "hf-id-offline", "layout-suggested", "layout", "potential", "engine", "rows-without-tests"])
def test_item7_errors_come_in_the_first_second(user, args, says):
    "Old: each of these waited for the kernel (7-10 s), an HF id offline retried for 54 s, a missing folder read as a bad repo id."
    out = f"runs/err_{abs(hash(tuple(args)))}"
    t = time.time()
    p = cli("run", "11_train_online.ipynb", *args, "--out", out, cwd=user, HF_HUB_OFFLINE="1")
    took = time.time() - t
    assert p.returncode == 1 and "nothing was started" in p.stderr and says in p.stderr, p.stderr
    assert took < 4, f"{took:.1f}s"                                         # the interpreter's start included
    assert not (user / out).exists()


def test_item7_a_missing_vllm_names_one_remedy(user):
    import importlib.util
    if importlib.util.find_spec("vllm"): pytest.skip("vLLM is installed here")
    p = cli(*TRAIN, "-p", "engine", "vllm", "--out", "runs/err_vllm", cwd=user)
    assert p.returncode == 1 and "vLLM is not installed here (GPU: bash scripts/setup.sh --gpu --vllm; CPU: bash scripts/setup_vllm.sh" in p.stderr, p.stderr


def test_item4_evaluation_reads_its_training_run(user):
    "Old: no evaluation command; model, tasks and split were repeated by hand."
    from proposal_nb.pipeline.inputs import load_task_set
    from proposal_nb.programs.tasks import split_tasks
    import pandas as pd
    p = cli("evaluate", "runs/my_iguana", "--out", "runs/my_eval", *SMALL_EVAL, cwd=user)
    assert p.returncode == 0, p.stdout + p.stderr
    ev, tr = (json.loads((user / "runs" / n / "config.json").read_text()) for n in ("my_eval", "my_iguana"))
    assert [ev[k] for k in ("model", "tasks", "heldout_frac", "split_seed")] == [tr[k] for k in ("model", "tasks", "heldout_frac", "split_seed")]
    assert ev["checkpoints"] == {"base": "", "my_iguana/step-2": str(user / "runs" / "my_iguana" / "checkpoints" / "step-2" / "adapter")}
    assert ev["runs"] == [str(user / "runs" / "my_iguana")] and ev["trained_on"] == {}
    held = {t.id for t in split_tasks(load_task_set(str(user / "my_tasks.jsonl")), tr["heldout_frac"], tr["split_seed"])[1]}
    assert set(pd.read_csv(user / "runs" / "my_eval" / "per_prompt.csv").prompt_id) == held


def test_prior_runs_rescores_only_the_first_runs_of_the_base(user):
    "13_evaluate's prior_runs (issue 41: the main job's cheaper report card): the prior table holds the base's first runs, under every arm."
    import pandas as pd
    small = ["--set", "R=2", "--set", "M=2", "--set", "max_new_tokens=8", "--set", "n_boot=50"]
    p = cli("evaluate", "runs/my_iguana", "--out", "runs/card_eval", *small, "--set", "prior_runs=1", cwd=user)
    assert p.returncode == 0, p.stdout + p.stderr
    d = user / "runs" / "card_eval"
    draws, prior = pd.read_parquet(d / "draws.parquet"), pd.read_parquet(d / "prior.parquet")
    key = ["prompt_id", "run", "draw"]
    first = draws[(draws.checkpoint == "base") & (draws.run == 0)].sort_values(key)
    assert set(draws[draws.checkpoint == "base"].run) == {0, 1} and set(prior.run) == {0}
    assert sorted(prior.checkpoint.unique()) == sorted(draws.checkpoint.unique())
    for ck, g in prior.groupby("checkpoint"):                        # the same draws under each arm: the base's run 0, in full
        assert g.sort_values(key)[key + ["text_hash"]].values.tolist() == first[key + ["text_hash"]].values.tolist(), ck
    p = cli("evaluate", "runs/my_iguana", "--out", "runs/card_eval_bad", *small, "--set", "prior_runs=3", cwd=user)
    assert p.returncode == 1 and "prior_runs must be in 0..R=2, got 3" in p.stderr, p.stderr


def test_item4_another_split_is_refused_and_the_overlap_named(user):
    "Old: a different split was accepted silently, and prompts the adapter was trained on were scored as held out."
    adapter = user / "runs" / "my_iguana" / "checkpoints" / "step-2" / "adapter"
    t = time.time()
    p = cli("run", "13_evaluate.ipynb", "-p", "model", "my-coder", "-p", "tasks", "my_tasks.jsonl", "-p", "checkpoints", f"base=,mine={adapter}",
            "-p", "heldout_frac", "0.6", "--out", "runs/other_split", cwd=user)
    assert p.returncode == 1 and "prompts as held out that checkpoints were trained on ({'mine': ['mine/" in p.stderr, p.stderr
    assert time.time() - t < 4 and not (user / "runs" / "other_split").exists()
    p = cli("evaluate", "runs/my_iguana", "-p", "heldout_frac", "0.6", "--out", "runs/other_split", cwd=user)
    assert p.returncode == 1 and "heldout_frac=0.6 differs from the runs' heldout_frac=0.3" in p.stderr and "--other-split" in p.stderr, p.stderr
    p = cli("evaluate", "runs/my_iguana", "-p", "heldout_frac", "0.6", "--other-split", "--out", "runs/other_split", *SMALL_EVAL, cwd=user)
    assert p.returncode == 0, p.stdout + p.stderr
    trained_on = json.loads((user / "runs" / "other_split" / "config.json").read_text())["trained_on"]
    assert list(trained_on) == ["my_iguana/step-2"] and trained_on["my_iguana/step-2"], trained_on     # accepted, and reported


def test_item4_the_adapters_base_model_is_checked_before_loading(user):
    "Old: forgetting the model loaded the embedded one and failed with 16 lines of LoRA size mismatch."
    adapter = user / "runs" / "my_iguana" / "checkpoints" / "step-2" / "adapter"
    t = time.time()
    p = cli("run", "13_evaluate.ipynb", "-p", "tasks", "my_tasks.jsonl", "-p", "checkpoints", f"base=,mine={adapter}", "--out", "runs/no_model", cwd=user)
    assert p.returncode == 1 and f"checkpoint 'mine': its adapter was trained on model '{user / 'my-coder'}'" in p.stderr, p.stderr
    assert f"pass -p model {user / 'my-coder'}" in p.stderr and "size mismatch" not in p.stderr and time.time() - t < 4


def test_item1_the_site_never_deletes_a_users_folder(tmp_path):
    "Old: `--only site` removed every results/ folder with a published name before copying the published runs in."
    mine = tmp_path / "results" / "h200_iguana"; mine.mkdir(parents=True)
    (mine / "config.json").write_text(json.dumps(dict(kind="train", arm="iguana", note="my own run")))
    (mine / "notes.md").write_text("three weeks of work")
    p = cli("--results", "results", "--only", "site", cwd=tmp_path, PROPOSAL_NB_PUBLISHED=str(ROOT / "published"))
    assert (mine / "notes.md").read_text() == "three weeks of work" and json.loads((mine / "config.json").read_text())["note"] == "my own run"
    assert p.returncode == 1 and "has the name of a published run" in p.stderr and "--no-published" in p.stderr, p.stderr
    p = cli("site", "--results", "results", "--no-published", cwd=tmp_path)           # a site of the user's runs alone
    assert p.returncode == 0, p.stderr
    index = (tmp_path / "results" / "site" / "index.html").read_text()
    assert "Your runs (1)" in index and "Published runs" not in index and "run-h200_iguana.html" in index
    published = {q.parent.name for q in published_root().glob("*/config.json")}
    assert not {q.name for q in (tmp_path / "results").iterdir()} & (published - {"h200_iguana"})   # nothing copied in


def test_item1_an_old_copy_of_a_published_run_is_shown_once(tmp_path, capsys):
    "A results folder that an older version filled with copies still builds: an identical copy is the published run."
    import shutil
    from proposal_nb.site.build import site_runs
    shutil.copytree(published_root() / "h200_eval", tmp_path / "h200_eval")
    runs = site_runs(tmp_path, [published_root()])
    assert [(r.name, r.origin) for r in runs if r.name == "h200_eval"] == [("h200_eval", "published")]
    assert "is a copy of the published run" in capsys.readouterr().err


def test_item9_the_site_shows_the_users_runs_first_and_stays_light(user):
    """Old: the run navigation was one line that could not wrap, the headline table stopped at 25 rows, a user's run joined
    the published arm of its name on the Training page, estimator/steps/M were blank for most training rows, and the
    site weighed 22 MB (training.html 10.5 MB). Built here from the user's folder and the published runs (read in place)."""
    import pandas as pd
    from proposal_nb.site.charts import chart_specs, spec_values
    p = cli("--results", "runs", "--only", "site", cwd=user, PROPOSAL_NB_PUBLISHED=str(ROOT / "published"))
    assert p.returncode == 0, p.stdout + p.stderr
    site = user / "runs" / "site"
    sizes = {f.name: f.stat().st_size for f in site.glob("*.html")}
    assert max(sizes.values()) < 2_000_000, sorted(sizes.items(), key=lambda kv: -kv[1])[:3]
    assert sum(f.stat().st_size for f in site.rglob("*") if f.is_file()) <= 8_000_000
    mine, published = find_runs(user / "runs"), find_runs(ROOT / "published")
    index = (site / "index.html").read_text()
    nav = index.split("<main>")[0]
    assert nav.index(f"Your runs ({len(mine)})") < nav.index("Published runs (") and "flex-wrap" in (site / "style.css").read_text()
    assert all(f"href='run-{r.name}.html'" in nav for r in mine + published)
    # every column of the overview's run tables that the run's config holds somewhere is filled
    from proposal_nb.site.tables import config_field
    configs = {r.name: r.config for r in mine + published}
    rows = pd.concat([t for t in html_tables(index) if "run" in t.columns]).set_index("run")
    for name, cfg in configs.items():
        for k in ("estimator", "steps", "M", "tasks"):
            if (v := config_field(cfg, k)) is None or k not in rows.columns: continue
            shown = Path(str(v)).name if str(v).startswith("/") and len(str(v)) > 30 else str(v)   # a long path shows its last part
            assert rows.loc[name, k] == shown, (name, k, rows.loc[name, k], v)
    assert rows.loc["my_iguana", "estimator"] == "iguana" and rows.loc["campaign_msc", "steps"] == "250"
    headline = index.split("Headline:")[1].split("<h2>")[0]
    assert "rows shown" not in headline and headline.count("<tr") > 26                 # every row (the published runs alone have 30)
    # the training page: the user's runs in a chart of their own, each run a line of its own (by folder)
    charts = chart_specs((site / "training.html").read_text())
    trained = {r.name for r in mine if (r.path / "log.parquet").exists()}
    assert spec_values(charts[0], "run") == trained and "my_iguana" in trained
    assert all(not (spec_values(c, "run") & trained) for c in charts[1:])
    # no page draws an empty chart
    for f in site.glob("*.html"):
        for c in chart_specs(f.read_text()):
            assert sum(len(v) for v in c.get("datasets", {}).values()) or "values" in json.dumps(c.get("data", {})), f.name


def test_item10_docs_and_cli_help(tmp_path):
    """Old: bring-your-own-model sat under 'On a GPU box' with no evaluation or tokenizer step, `proposal-nb run --help`
    listed no notebook, and three remedies for a missing vLLM contradicted each other."""
    import re
    readme = (ROOT / "README.md").read_text()
    own = readme.split("## Your own model and tasks")[1].split("\n## ")[0]
    for s in ("proposal-nb run 11_train_online", "proposal-nb evaluate runs/my_iguana", "proposal-nb site", "AutoTokenizer.from_pretrained('BASE_MODEL').save_pretrained"):
        assert s in own, s
    assert readme.index("## Your own model and tasks") < readme.index("## On a GPU box")
    assert "pip install 'proposal_nb[vllm" not in readme and "setup_vllm.sh" in own and "setup.sh --gpu --vllm" in own
    h = cli("run", "--help", cwd=tmp_path).stdout
    for nb in sorted(RUNS.glob("*.ipynb")): assert f"\n  {nb.stem}" in h, nb.stem
    assert "prompts_per_step" in h and "run_checkpoints" in h
    h = cli("run", "11_train_online", "--help", cwd=tmp_path).stdout
    assert re.search(r"\n  mu0 +float +0\.0 +prior mean of Z", h), h


def test_a_checker_of_ones_own_trains_the_run(user):
    "-p potential my_checks:has_a: the user's module (on PYTHONPATH) is checked before the kernel starts, then trains the run;"
    " the run records the checker by its name and logs its values (in [0, 1]) step by step."
    import pandas as pd
    (user / "my_checks.py").write_text("def has_a(task, completion):\n    return float('a' in completion)\n")
    p = cli(*TRAIN, "-p", "potential", "my_checks:has_ab", "--out", "runs/mine_typo", *SMALL_TRAIN, cwd=user, PYTHONPATH=str(user))
    assert p.returncode == 1 and "has no 'has_ab'" in p.stderr and "nothing was started" in p.stderr, p.stderr
    p = cli(*TRAIN, "-p", "potential", "my_checks:has_a", "--out", "runs/mine", *SMALL_TRAIN, cwd=user, PYTHONPATH=str(user))
    assert p.returncode == 0, p.stdout + p.stderr
    run = user / "runs" / "mine"
    assert json.loads((run / "config.json").read_text())["potential"] == "my_checks:has_a"
    log = pd.read_parquet(run / "log.parquet")
    assert len(log) == 2 and log.validity.between(0, 1).all()


def test_a_checker_of_ones_own_is_refused_by_name(user):
    "Issue 40 item 3: a checker of the wrong signature stops the run before a kernel starts, naming it; one whose value leaves"
    " [0, 1] fails the run on its first use, naming the checker, the task and the value."
    (user / "bad_checks.py").write_text("def one_arg(completion): return 1.0\ndef big(task, completion): return 1.5\n")
    t = time.time()
    p = cli(*TRAIN, "-p", "potential", "bad_checks:one_arg", "--out", "runs/bad_signature", *SMALL_TRAIN, cwd=user, PYTHONPATH=str(user))
    assert p.returncode == 1 and "checker 'bad_checks:one_arg': it must take (task, completion)" in p.stderr and "nothing was started" in p.stderr, p.stderr
    assert time.time() - t < 4 and not (user / "runs" / "bad_signature").exists()
    p = cli(*TRAIN, "-p", "potential", "bad_checks:big", "--out", "runs/bad_value", *SMALL_TRAIN, cwd=user, PYTHONPATH=str(user))
    assert p.returncode != 0 and "checker 'bad_checks:big' returned 1.5 for task 'mine/" in p.stdout + p.stderr, p.stdout + p.stderr
    assert "it must be a number in [0, 1]" in p.stdout + p.stderr


def test_a_checker_of_ones_own_refuses_rows_it_cannot_grade(user):
    "A checker's own `check` (here: every row needs public tests) refuses the run's training rows in the first second, naming"
    " the checker and the row; the run folder is not made."
    (user / "public_checks.py").write_text(
        "def needs_public(tasks):\n"
        "    if bare := [t.id for t in tasks if not t.public_tests]: raise ValueError(f'task {bare[0]!r} has no public tests')\n"
        "def passes(task, completion): return 1.0\n"
        "passes.check = needs_public\n")
    t = time.time()
    p = cli("run", "11_train_online.ipynb", "-p", "model", "my-coder", "-p", "tasks", "no_public.jsonl", "-p", "potential",
            "public_checks:passes", "--out", "runs/no_public_own", *SMALL_TRAIN, cwd=user, PYTHONPATH=str(user))
    assert p.returncode == 1 and "nothing was started" in p.stderr, p.stderr
    assert "tasks: checker 'public_checks:passes': task 't" in p.stderr and "has no public tests" in p.stderr, p.stderr
    assert time.time() - t < 4 and not (user / "runs" / "no_public_own").exists()
