"""Issue 40 item 4: a researcher's own data and adapters.

Data: each dataset layout loads from a file in its published format (data/fixtures/, built by data/fixtures/build.py; the
schemas' sources are in data/fixtures/README.md), and an HF dataset is read by id, config, split and revision from the
local HF hub cache, offline, with an error naming a config, split or revision that is not there and what is. Adapters:
one of any rank and targets saved by peft loads back through `PeftModel.from_pretrained` with identical logits, an
adapter of another base model is refused naming both, and gradient checkpointing (which this project's eval-mode
training needs `load_model` to switch on) gives the same loss and gradients as without it."""
import json
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch

from proposal_nb.programs.tasks import TaskFormatError, data_dir, load_humaneval, load_tasks, read_rows

ROOT = Path(__file__).resolve().parents[1]
FX = data_dir() / "fixtures"
HUB = FX / "hub"
CLI = str(Path(sys.executable).with_name("proposal-nb"))

# The published schemas (data/fixtures/README.md says where each comes from): column -> Arrow type, in the files' order.
STR, I32, I64, STRS = "string", "int32", "int64", "list<element: string>"
TESTS = "struct<input: list<element: string>, output: list<element: string>>"
SOLS = "struct<language: list<element: int64>, solution: list<element: string>>"
SCHEMAS = {
    "mbpp/full": dict(task_id=I32, text=STR, code=STR, test_list=STRS, test_setup_code=STR, challenge_test_list=STRS),
    "mbpp/sanitized": dict(source_file=STR, task_id=I32, prompt=STR, code=STR, test_imports=STRS, test_list=STRS),
    "openai_humaneval": dict(task_id=STR, prompt=STR, canonical_solution=STR, test=STR, entry_point=STR),
    "code_contests": dict(name=STR, description=STR, public_tests=TESTS, private_tests=TESTS, generated_tests=TESTS, source=I64,
                          difficulty=I64, solutions=SOLS, incorrect_solutions=SOLS, cf_contest_id=I64, cf_index=STR, cf_points="double",
                          cf_rating=I64, cf_tags=STRS, is_description_translated="bool", untranslated_description=STR,
                          time_limit="struct<seconds: int64, nanos: int64>", memory_limit_bytes=I64, input_file=STR, output_file=STR),
}
JSON_FIELDS = {   # the jsonl fixtures: the fields of one row of the published files
    "livecodebench.jsonl": ["question_title", "question_content", "platform", "question_id", "contest_id", "contest_date", "starter_code",
                            "difficulty", "metadata", "public_test_cases", "private_test_cases"],
    "ds1000.jsonl": ["prompt", "reference_code", "code_context", "metadata"],
    "mbpp.jsonl": list(SCHEMAS["mbpp/full"]),
}


def snapshot(repo:str)->Path:
    d = HUB / f"datasets--{repo.replace('/', '--')}"
    return d / "snapshots" / (d / "refs" / "main").read_text()


@pytest.mark.parametrize("path, schema", [
    (snapshot("google-research-datasets/mbpp") / "full" / "test-00000-of-00001.parquet", "mbpp/full"),
    (snapshot("google-research-datasets/mbpp") / "sanitized" / "test-00000-of-00001.parquet", "mbpp/sanitized"),
    (snapshot("openai/openai_humaneval") / "openai_humaneval" / "test-00000-of-00001.parquet", "openai_humaneval"),
    (snapshot("deepmind/code_contests") / "data" / "test-00000-of-00001.parquet", "code_contests"),
    (FX / "code_contests.parquet", "code_contests"),
], ids=["mbpp-full", "mbpp-sanitized", "humaneval", "code_contests-hub", "code_contests-file"])
def test_fixture_files_hold_the_published_schema(path, schema):
    got = {f.name: str(f.type) for f in pq.read_schema(path)}
    assert got == SCHEMAS[schema] and list(got) == list(SCHEMAS[schema])


@pytest.mark.parametrize("name", list(JSON_FIELDS))
def test_jsonl_fixtures_hold_the_published_fields(name):
    rows = [json.loads(l) for l in (FX / name).read_text().splitlines() if l.strip()]
    assert all(sorted(r) == sorted(JSON_FIELDS[name]) for r in rows), [sorted(r) for r in rows]


@pytest.mark.parametrize("source, layout, kw, ids, harness", [
    ("google-research-datasets/mbpp", "mbpp", dict(config="full"), ["mbpp/9001", "mbpp/9002", "mbpp/9003"], "function"),
    ("google-research-datasets/mbpp", "mbpp", dict(config="sanitized"), ["mbpp/9001", "mbpp/9002", "mbpp/9003"], "function"),
    (str(FX / "mbpp.jsonl"), "mbpp", {}, ["mbpp/9001", "mbpp/9002", "mbpp/9003"], "function"),
    ("openai/openai_humaneval", "humaneval", {}, ["HumanEval/0", "HumanEval/1"], "function"),
    ("deepmind/code_contests", "code_contests", dict(split="valid"), ["code_contests/9003_A. Count evens"], "stdio"),
    (str(FX / "code_contests.parquet"), "code_contests", {}, ["code_contests/9001_A. Sum of pairs", "code_contests/9002_B. Palindrome lines"], "stdio"),
    (str(FX / "livecodebench.jsonl"), "livecodebench", {}, ["livecodebench/pnb001", "livecodebench/pnb002"], None),
    (str(FX / "ds1000.jsonl"), "ds1000", {}, ["ds1000/9001", "ds1000/9002"], "exec"),
], ids=["mbpp-full", "mbpp-sanitized", "mbpp-file", "humaneval", "code_contests-valid", "code_contests-file", "livecodebench", "ds1000"])
def test_each_layout_loads_from_its_real_format_file(source, layout, kw, ids, harness):
    ts = load_tasks(source, layout, cache_dir=HUB, **kw)
    assert [t.id for t in ts] == ids
    assert harness is None or {t.harness for t in ts} == {harness}
    assert all(t.hidden_tests for t in ts) and all(t.solution for t in ts if layout != "livecodebench")   # LiveCodeBench ships no solutions


def test_the_hf_humaneval_layout_is_the_package_loader():
    assert load_tasks("openai/openai_humaneval", "humaneval", cache_dir=HUB) == load_humaneval()[:2]


def test_a_config_split_or_revision_not_there_names_it_and_what_is():
    mbpp = "google-research-datasets/mbpp"
    cases = [(dict(config="santized"), "no config 'santized' here; configs there: full, sanitized"),
             (dict(split="train"), "config 'full': no split 'train' here; splits there: test"),
             (dict(revision="v1.0"), "revision 'v1.0' is not in the local HF cache"),
             (dict(revision="deadbeef"), "revisions there: main (")]
    for kw, says in cases:
        with pytest.raises(TaskFormatError, match=None) as e: read_rows(mbpp, cache_dir=HUB, **kw)
        assert says in str(e.value) and mbpp in str(e.value), str(e.value)
    old = next(p.name for p in (HUB / f"datasets--{mbpp.replace('/', '--')}" / "snapshots").iterdir() if p != snapshot(mbpp))
    with pytest.raises(TaskFormatError) as e: read_rows(mbpp, config="sanitized", revision=old[:7], cache_dir=HUB)
    assert f"{mbpp}@{old[:7]}: no config 'sanitized' here; configs there: full" in str(e.value)
    with pytest.raises(TaskFormatError, match="is a file: it has no config 'full', revision 'main'"):
        read_rows(FX / "mbpp.jsonl", config="full", revision="main")


def test_a_downloaded_dataset_folder_reads_like_the_id(tmp_path):
    "`huggingface-cli download --local-dir DIR` leaves the repository's files: the folder reads as the id does, by config and split."
    import shutil
    shutil.copytree(snapshot("google-research-datasets/mbpp"), tmp_path / "mbpp")
    assert load_tasks(tmp_path / "mbpp", "mbpp", config="sanitized") == load_tasks("google-research-datasets/mbpp", "mbpp", config="sanitized", cache_dir=HUB)
    with pytest.raises(TaskFormatError, match="is a folder, one revision of a dataset"): read_rows(tmp_path / "mbpp", revision="main")


def test_an_id_not_in_the_hub_cache_goes_to_datasets_and_its_error_is_named(tmp_path, monkeypatch):
    "Only an id absent from the hub cache reaches datasets.load_dataset (here a stand-in module); its error comes back with id, config and revision."
    calls = []
    def load_dataset(name, config=None, split=None, revision=None):
        calls.append((name, config, split, revision))
        if config == "nope": raise ValueError("BuilderConfig 'nope' not found. Available: ['main']")
        return [dict(task_id=1, text="Write f.", code="def f(): return 1", test_list=["assert f() == 1"])]
    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    assert [t.id for t in load_tasks("some-org/some-set", "mbpp", config="main", revision="v2", cache_dir=tmp_path)] == ["mbpp/1"]
    with pytest.raises(TaskFormatError) as e: read_rows("some-org/some-set", config="nope", cache_dir=tmp_path)
    assert "some-org/some-set (config 'nope', split 'test', revision 'main')" in str(e.value) and "Available: ['main']" in str(e.value)
    assert calls == [("some-org/some-set", "main", "test", "v2"), ("some-org/some-set", "nope", "test", None)]
    assert read_rows("google-research-datasets/mbpp", cache_dir=HUB)[0] and len(calls) == 2          # a cached id never reaches it
    monkeypatch.setitem(sys.modules, "datasets", None)                                                # not installed
    with pytest.raises(TaskFormatError, match="no dataset 'some-org/some-set' in the local HF cache"): read_rows("some-org/some-set", cache_dir=tmp_path)


def cli(*args, cwd, **env):
    e = {**os.environ, "PATH": str(Path(sys.executable).parent), "HF_HUB_CACHE": str(HUB), "HF_HUB_OFFLINE": "1", **env}
    return subprocess.run([CLI, *args], cwd=cwd, env=e, capture_output=True, text=True, timeout=600)


def test_measure_z_on_an_hf_dataset_by_config_offline(tmp_path):
    "10_measure_z on mbpp's sanitized config from the local HF cache, with eager attention; a config not there stops it in the first seconds."
    from proposal_nb.lm.models import tiny_model
    m, tok = tiny_model(seed=0); m.save_pretrained(tmp_path / "tiny"); tok.save_pretrained(tmp_path / "tiny")
    run = ["run", "10_measure_z.ipynb", "-p", "model", "tiny", "-p", "tasks", "google-research-datasets/mbpp", "-p", "layout", "mbpp"]
    t = time.time()
    p = cli(*run, "-p", "tasks_config", "santized", "--out", "z_bad", cwd=tmp_path)
    assert p.returncode == 1 and "no config 'santized' here; configs there: full, sanitized" in p.stderr and "nothing was started" in p.stderr, p.stderr
    assert time.time() - t < 5 and not (tmp_path / "z_bad").exists()
    p = cli(*run, "-p", "tasks_config", "sanitized", "-p", "attn_implementation", "eager", "--set", "n=1", "--set", "max_new_tokens=8", "--out", "z", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    cfg = json.loads((tmp_path / "z" / "config.json").read_text())
    assert (cfg["tasks_config"], cfg["tasks_split"], cfg["attn_implementation"]) == ("sanitized", "", "eager")
    import pandas as pd
    assert sorted(pd.read_parquet(tmp_path / "z" / "base_rollouts.parquet").prompt_id.unique()) == ["mbpp/9001", "mbpp/9002", "mbpp/9003"]


# --- adapters ---------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def embedded():
    from proposal_nb.lm.models import embedded_model_path
    torch.set_num_threads(2)
    return embedded_model_path()


def _randomise(pm, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, w in pm.named_parameters():
            if "lora_" in n: w.copy_(torch.randn(w.shape, generator=g) * 0.02)


def test_a_rank4_q_proj_adapter_saved_by_peft_loads_back_with_identical_logits(embedded, tmp_path):
    from proposal_nb.lm.models import add_lora, load_adapter, load_model, save_adapter
    lm, tok = load_model(embedded)
    pm = add_lora(lm, r=4, alpha=8, dropout=0.0, targets=("q_proj",)).eval(); _randomise(pm, 0)
    x = tok("def add(a, b):\n    return", return_tensors="pt").input_ids
    with torch.no_grad(): want = pm(x).logits
    pm.save_pretrained(tmp_path / "q4")                                   # peft's own save
    cfg = json.loads((tmp_path / "q4" / "adapter_config.json").read_text())
    assert (cfg["r"], cfg["target_modules"], Path(cfg["base_model_name_or_path"]).name) == (4, ["q_proj"], embedded.name)
    back = load_adapter(load_model(embedded)[0], tmp_path / "q4", model_name="embedded:SmolLM2-135M-Instruct").eval()
    with torch.no_grad(): assert torch.equal(back(x).logits, want)
    with torch.no_grad(), back.disable_adapter(): assert not torch.equal(back(x).logits, want)   # the adapter does something
    save_adapter(back, tmp_path / "again", base="HuggingFaceTB/SmolLM2-135M-Instruct")           # a base named by hand
    assert json.loads((tmp_path / "again" / "adapter_config.json").read_text())["base_model_name_or_path"] == "HuggingFaceTB/SmolLM2-135M-Instruct"


def test_an_adapter_of_another_base_model_is_refused_naming_both(embedded, tmp_path):
    from proposal_nb.lm.models import add_lora, load_adapter, load_model, tiny_model
    m, tok = tiny_model(seed=0); m.save_pretrained(tmp_path / "my-tiny"); tok.save_pretrained(tmp_path / "my-tiny")
    pm = add_lora(load_model(tmp_path / "my-tiny")[0], r=4, targets=("q_proj",))
    pm.save_pretrained(tmp_path / "adapter")
    with pytest.raises(ValueError) as e: load_adapter(load_model(embedded)[0], tmp_path / "adapter")
    msg = str(e.value)
    assert f"trained on base model '{tmp_path / 'my-tiny'}'" in msg and f"this run's model is '{embedded}'" in msg, msg
    assert "size mismatch" not in msg


def test_same_base_and_same_model_agree():
    "lm.models.same_base (torch) and pipeline.inputs.same_model (the run checks, no torch) say the same of the same names."
    from proposal_nb.lm.models import embedded_model_path, same_base
    from proposal_nb.pipeline.inputs import EMBEDDED_MODEL, same_model
    names = ["", EMBEDDED_MODEL, str(embedded_model_path()), "HuggingFaceTB/SmolLM2-135M-Instruct", "Qwen/Qwen2.5-Coder-1.5B-Instruct",
             "/models/Qwen2.5-Coder-1.5B-Instruct", "gpt2", str(ROOT / "data")]
    assert [[same_base(a, b) for b in names] for a in names] == [[same_model(a, b) for b in names] for a in names]


def test_gradient_checkpointing_gives_the_same_loss_and_gradients(embedded):
    "In eval mode, as the training loop runs: loss equal to 1e-6 and LoRA gradients to 1e-6 relative (float32, CPU); less kept for backward."
    from proposal_nb.lm.models import add_lora, load_model
    x = torch.arange(100, 116).unsqueeze(0)
    out = {}
    for ckpt in (False, True):
        lm, _ = load_model(embedded, gradient_checkpointing=ckpt)
        pm = add_lora(lm, dropout=0.0).eval(); _randomise(pm, 1)
        saved = []
        with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t.numel() * t.element_size()) or t, lambda t: t):
            loss = pm(x, labels=x).loss
        loss.backward()
        out[ckpt] = loss.item(), torch.cat([w.grad.flatten() for n, w in pm.named_parameters() if "lora_" in n]), sum(saved)
    (l0, g0, b0), (l1, g1, b1) = out[False], out[True]
    assert abs(l0 - l1) <= 1e-6 * abs(l0)
    assert (g0 - g1).abs().max() <= 1e-6 * g0.abs().max()
    assert b1 < b0 / 2, (b0, b1)


def _tiny_adapter(folder:Path, out:Path, **shape):
    "A LoRA adapter of `shape` on the tiny model saved in `folder`, with random B (it moves the model), saved by peft in `out`."
    from proposal_nb.lm.models import add_lora, load_model
    torch.manual_seed(1)
    peft = add_lora(load_model(str(folder))[0], **shape)
    with torch.no_grad():
        for n, p in peft.named_parameters():
            if "lora_B" in n: p.normal_(0, 0.5)
    peft.save_pretrained(out)
    return out


def test_the_evaluation_draws_a_foreign_shaped_adapter(tmp_path):
    "13_evaluate with an adapter of rank 4 on q_proj only (not add_lora's default shape): its draws come from that adapter."
    from proposal_nb.lm.models import tiny_model
    from proposal_nb.pipeline.notebooks import resolve_notebook, run_notebook
    import pandas as pd
    m, tok = tiny_model(seed=0); m.save_pretrained(tmp_path / "tiny"); tok.save_pretrained(tmp_path / "tiny")
    a = _tiny_adapter(tmp_path / "tiny", tmp_path / "q4", r=4, alpha=8, targets=("q_proj",))
    out = tmp_path / "eval"
    run_notebook(resolve_notebook("13_evaluate"), out, dict(out_dir=str(out), model=str(tmp_path / "tiny"), tasks="embedded", limit=10,
                 checkpoints=f"base=,q4={a}", R=1, M=3, max_new_tokens=12, batch_size=8, n_boot=50, engine="auto"), log=tmp_path / "eval.log")
    d = pd.read_parquet(out / "draws.parquet")
    assert set(d.checkpoint) == {"base", "q4"}
    q4 = d[d.checkpoint == "q4"]
    assert (q4.logq - q4.logp).abs().max() > 1e-3           # the adapter moved q away from p on its own draws: it was loaded
    b8 = _tiny_adapter(tmp_path / "tiny", tmp_path / "r8")   # add_lora's default shape
    with pytest.raises(Exception, match="differ in LoRA shape"):
        run_notebook(resolve_notebook("13_evaluate"), tmp_path / "eval2", dict(out_dir=str(tmp_path / "eval2"), model=str(tmp_path / "tiny"),
                     tasks="embedded", limit=10, checkpoints=f"q4={a},r8={b8}", R=1, M=1, max_new_tokens=4, batch_size=8, n_boot=10),
                     log=tmp_path / "eval2.log")
