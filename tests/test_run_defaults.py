"""Issue 40 item 6: one set of defaults between the run notebook 11_train_online and the code it runs. Every parameter of
its parameters cell is accounted for: it equals the default of the configuration field it sets (config.FLAT), or the
default of the function it is passed to, or it is named below as an input with no code default. Every parameter whose
comment lists its allowed values lists exactly the values the code accepts, and each of those values runs through the
code that reads it. The evaluation notebook splits the tasks as training does, and the YAML parameter files of training
name only parameters the notebook declares, with values the configuration accepts."""
import ast
import inspect
import io
import re
import tokenize
from pathlib import Path

import pytest
import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "nbs" / "runs"


def parameters(name: str) -> dict:
    "name -> (default, comment) of a run notebook's parameters cell (the comment is the text after '#')."
    import nbformat
    nb = nbformat.read(RUNS / f"{name}.ipynb", as_version=4)
    src = next(c.source for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    values = {n.target.id: (n.lineno, ast.literal_eval(n.value)) for n in ast.parse(src).body if isinstance(n, ast.AnnAssign)}
    comments = {t.start[0]: t.string.lstrip("#").strip() for t in tokenize.generate_tokens(io.StringIO(src).readline) if t.type == tokenize.COMMENT}
    return {k: (v, comments.get(line, "")) for k, (line, v) in values.items()}


def documented(comment: str) -> set:
    "The values a parameter's comment lists: after its label ('label: a, b or c'), parenthesised remarks aside."
    text = re.sub(r"\([^)]*\)", "", comment.split(": ", 1)[1] if ": " in comment else comment)
    return {t.strip() for t in re.split(r",|\bor\b", text) if re.fullmatch(r"[a-z][a-z0-9_-]*", t.strip())}


TRAIN = parameters("11_train_online")
# A run notebook's flat value that means what the schema's default means (mu0's 0: measure the base model's validity first).
BOUNDARY = {"mu0": (0.0, 0.5)}
NO_CODE_DEFAULT = {"out_dir", "model", "tasks", "difficulties", "limit", "potential", "mu0_prompts"}   # inputs of this notebook alone


def passed_to():
    "Parameters passed to a function, with that function's default for them."
    from proposal_nb.lm.distributed import online_run
    from proposal_nb.lm.models import add_lora, load_model, run_dtype
    from proposal_nb.lm.tracking import Track
    from proposal_nb.lm.rollouts import load_task_source
    from proposal_nb.programs.tasks import split_tasks
    from proposal_nb.pipeline.job import DEFAULT_SPLIT
    d = lambda f, k: inspect.signature(f).parameters[k].default
    return dict(lora_r=d(add_lora, "r"), lora_alpha=d(add_lora, "alpha"), strategy=d(online_run, "strategy"),
                layout=d(load_task_source, "layout"), split_seed=d(split_tasks, "seed"), heldout_frac=DEFAULT_SPLIT["heldout_frac"],
                report_to=d(Track, "report_to"), tasks_config=d(load_task_source, "config"), tasks_split=d(load_task_source, "split"),
                tasks_revision=d(load_task_source, "revision"), gradient_checkpointing=d(load_model, "gradient_checkpointing"),
                attn_implementation=d(load_model, "attn_implementation") or "",   # the notebook's "" is load_model's None
                dtype=d(run_dtype, "dtype"))


def test_every_parameter_has_one_default():
    from proposal_nb.config import FLAT, OnlineConfig, to_flat
    schema, code = to_flat(OnlineConfig()), passed_to()
    wrong, unaccounted = [], []
    for k, (v, _) in TRAIN.items():
        if k in BOUNDARY and (v, schema[k]) == BOUNDARY[k]: continue
        if k in FLAT: want = schema[k]
        elif k in code: want = code[k]
        elif k in NO_CODE_DEFAULT: continue
        else: unaccounted.append(k); continue
        if v != want: wrong.append(f"{k}: notebook {v!r}, code {want!r}")
    assert not unaccounted, f"parameters with no default named in this test: {unaccounted}"
    assert not wrong, "\n".join(wrong)
    from proposal_nb.pipeline.job import DEFAULT_SPLIT
    assert DEFAULT_SPLIT["split_seed"] == TRAIN["split_seed"][0]


def accepted() -> dict:
    "The values the code accepts for each parameter whose comment lists them."
    from proposal_nb.config import BASELINES, ENGINE_NAMES, NORMALIZER_KINDS
    from proposal_nb.estimators import registry as E
    from proposal_nb.lm.distributed import STRATEGIES
    from proposal_nb.lm.engines import ENGINES
    from proposal_nb.lm.tracking import REPORT_TO
    from proposal_nb.pipeline.inputs import TRAIN_POTENTIALS
    from proposal_nb.programs import tasks
    assert set(ENGINES) == set(ENGINE_NAMES)
    return dict(estimator={k for k in E.ESTIMATORS if E.make(k).source == "proposal"}, engine=set(ENGINE_NAMES),
                normalizer=set(NORMALIZER_KINDS), baseline=set(BASELINES), strategy=set(STRATEGIES), potential=set(TRAIN_POTENTIALS),
                layout={"native", *tasks._LAYOUTS}, report_to=set(REPORT_TO))


@pytest.mark.parametrize("name", sorted(accepted()))
def test_documented_values_are_the_accepted_ones(name):
    assert documented(TRAIN[name][1]) == accepted()[name], f"{name}: the comment {TRAIN[name][1]!r} lists {sorted(documented(TRAIN[name][1]))}"


def test_the_documented_names_run_through_the_code():
    "Each normaliser kind forms Ẑ and each baseline forms IGUANA's coefficients; any other name is refused, by the config first."
    from proposal_nb.config import BASELINES, NORMALIZER_KINDS, online_config
    from proposal_nb.estimators import normalizer as N
    from proposal_nb.estimators.iguana import IguanaConfig, coefficients
    state = N.init(2)
    for k in NORMALIZER_KINDS:
        assert torch.isfinite(N.estimate(state, N.NormalizerConfig(kind=k, mu0=0.4), [0, 1]).log_zhat).all(), k
        assert online_config(normalizer=k).normalizer.kind == k
    for b in BASELINES:
        coef, _, _ = coefficients(torch.tensor([[0.0, -1.0]]), torch.tensor([-0.5]), torch.tensor([0.5]), IguanaConfig(baseline=b))
        assert torch.isfinite(coef).all(), b
        assert online_config(baseline=b).iguana.baseline == b
    with pytest.raises(ValueError, match="unknown normaliser kind"): N.estimate(state, N.NormalizerConfig(kind="shrink"), [0])
    with pytest.raises(ValueError, match="unknown baseline"): coefficients(torch.tensor([[0.0]]), torch.tensor([0.0]), torch.tensor([1.0]), IguanaConfig(baseline="mean"))
    with pytest.raises(ValueError, match="use one of eb, shrinkage, mean"): online_config(normalizer="shrink")
    with pytest.raises(ValueError, match="use one of zhat, batch_mean, none"): online_config(baseline="mean")


def test_evaluation_splits_the_tasks_as_training_does():
    "13_evaluate's task set, split and completion cap are 11_train_online's (and 10_measure_z's cap too)."
    from proposal_nb.config import LoopConfig
    from proposal_nb.pipeline.inputs import SPLIT_KEYS
    ev, z = parameters("13_evaluate"), parameters("10_measure_z")
    for k in SPLIT_KEYS: assert ev[k][0] == TRAIN[k][0], k
    assert ev["max_new_tokens"][0] == z["max_new_tokens"][0] == TRAIN["max_new_tokens"][0] == LoopConfig().max_new_tokens
    assert ev["engine"][0] == TRAIN["engine"][0]


@pytest.mark.parametrize("f", ["embedded_base.yaml", "embedded_iguana.yaml", "embedded_msc.yaml"])
def test_training_parameter_files_name_declared_parameters(f):
    from proposal_nb.config import FLAT, from_flat
    p = yaml.safe_load((RUNS / "params" / f).read_text())
    assert p.pop("notebook", "11_train_online.ipynb") == "11_train_online.ipynb"
    assert not set(p) - set(TRAIN), f"{f}: not parameters of 11_train_online: {sorted(set(p) - set(TRAIN))}"
    values = {k: v for k, (v, _) in TRAIN.items()} | p
    from_flat({k: v for k, v in values.items() if k in FLAT} | dict(mu0=values["mu0"] or 0.5))       # the config accepts them
