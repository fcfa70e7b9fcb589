"""The estimator kernels, and the interface over them, as the LM training loop calls them: float32/bfloat16 log q with grad under torch's default
dtype (the notebooks run under float64), log ratios of ±10,000 nats, all-zero potentials, and checkpoint round trips."""
import io
import math

import pytest
import torch

from proposal_nb.estimators import registry as estimators, iguana, msc, normalizer as nz, offline
from proposal_nb.estimators.weights import log_weights, psis

DTYPES = [torch.float32, torch.bfloat16]


def _draws(B, M, dtype, seed=0, spread=1.0):
    g = torch.Generator().manual_seed(seed)
    logq = (-torch.rand(B, M, generator=g) * 50 * spread).to(dtype).requires_grad_()
    logp = -torch.rand(B, M, generator=g).double() * 50 * spread
    logr = torch.where(torch.rand(B, M, generator=g) < 0.4, 0.0, -math.inf).double()
    return logq, logp, logr


def test_normaliser_under_float32_default_dtype():
    """Regression: `update` built its count increment with the default dtype, and index_add into a float64 table
    failed under torch's float32 default. The notebooks missed it because they set the default dtype to float64."""
    assert torch.get_default_dtype() == torch.float32
    cfg = nz.NormalizerConfig()
    st, est = nz.step(nz.init(5), cfg, [1, 3], torch.zeros(2, 4))
    assert st.count.dtype == torch.float64 and st.count.tolist() == [0, 4, 0, 4, 0]
    assert est.log_zhat.dtype == torch.float64 and est.baseline.dtype == torch.float64


@pytest.mark.parametrize("dtype", DTYPES)
def test_iguana_visit_low_precision(dtype):
    logq, logp, logr = _draws(3, 10, dtype)
    st, loss, info = iguana.visit(nz.init(4), nz.NormalizerConfig(), [0, 2, 3], logq, logp, logr,
                                  iguana.IguanaConfig(kl_beta=0.1))
    loss.backward()
    assert loss.dtype == dtype and logq.grad.dtype == dtype and torch.isfinite(logq.grad.float()).all()
    # the gradient is −coef (+ anchor) / B per draw: check against the float64 coefficients
    anchor = 0.1 / 10 * (logq.detach().double() - logp)
    want = (-info.coef + anchor) / 3
    assert torch.allclose(logq.grad.double(), want, rtol=2e-2, atol=1e-3)


@pytest.mark.parametrize("dtype", DTYPES)
def test_msc_step_low_precision(dtype):
    logq, logp, logr = _draws(3, 10, dtype)
    keys = torch.arange(30).reshape(3, 10)
    st, loss, info = msc.step(msc.init(3), [0, 1, 2], torch.zeros(3, dtype=dtype), logq, logp, logr, keys,
                              torch.Generator().manual_seed(0), rao_blackwell=True)
    loss.backward()
    assert torch.isfinite(logq.grad.float()).all() and loss.dtype == dtype
    has = torch.isfinite(logr).any(1)
    assert ((st.ref_key >= 0) == has).all()


@pytest.mark.parametrize("rb", [False, True])
def test_msc_nothing_to_select_still_backpropagates(rb):
    logq = torch.zeros(2, 4, requires_grad=True)
    st, loss, info = msc.step(msc.init(2), [0, 1], torch.zeros(2), logq, torch.zeros(2, 4),
                              torch.full((2, 4), -math.inf), torch.zeros(2, 4, dtype=torch.long), torch.Generator(), rb)
    loss.backward()                                      # the LM loop calls backward unconditionally
    assert loss.item() == 0 and logq.grad.abs().sum() == 0 and (info.selected == -1).all()


def test_extreme_log_ratios_through_the_kernels():
    big = torch.tensor([[1e4, -1e4, 0.0, 5.0]], dtype=torch.float64)
    for logr in (torch.zeros(1, 4, dtype=torch.float64), torch.full((1, 4), -math.inf, dtype=torch.float64)):
        logq = (-big).clone().requires_grad_()
        st, loss, info = iguana.visit(nz.init(1), nz.NormalizerConfig(), [0], logq, big, logr)
        loss.backward()
        assert torch.isfinite(loss) and torch.isfinite(logq.grad).all()
        assert not torch.isnan(torch.stack([st.log_sum, st.log_sum_raw])).any()
        logq2 = (-big).clone().requires_grad_()
        mst, l2, i2 = msc.step(msc.init(1), [0], torch.zeros(1), logq2, big, logr, torch.arange(4)[None],
                               torch.Generator().manual_seed(0))
        l2.backward()
        assert torch.isfinite(l2) and torch.isfinite(logq2.grad).all()
        if torch.isfinite(logr).any(): assert mst.ref_key.item() == 0          # e^20000 takes all the mass
    assert not torch.isnan(log_weights(big, -big, torch.zeros(1, 4))).any()
    assert psis(torch.cat([torch.tensor([2e4]), torch.zeros(99)]).double()).khat.item() == math.inf


def test_offline_all_rejected_contributes_nothing():
    logq = torch.randn(6, requires_grad=True)
    loss, info = offline.loss(logq, torch.tensor([0, 0, 1, 1, 2, 2]), torch.zeros(6, dtype=torch.bool))
    loss.backward()
    assert loss.item() == 0 and info.n_prompts == 0 and logq.grad.abs().sum() == 0


def test_checkpoint_round_trip_through_a_file(tmp_path):
    cfg = nz.NormalizerConfig(mu0=0.2, fold_clip=3.0)
    st = nz.update(nz.init(3), cfg, [0, 2], torch.log(torch.tensor([[1.0, 0.0], [5.0, 1.0]])), torch.zeros(2))
    mst = msc.init(3)._replace(ref_key=torch.tensor([4, -1, 7]))
    torch.save({"normalizer": nz.state_dict(st, cfg), "msc": msc.state_dict(mst)}, tmp_path / "ck.pt")
    d = torch.load(tmp_path / "ck.pt", weights_only=True)
    st2, cfg2 = nz.load_state_dict(d["normalizer"])
    assert cfg2 == cfg and all(torch.equal(a, b) for a, b in zip(st, st2))
    assert torch.equal(msc.load_state_dict(d["msc"]).ref_key, mst.ref_key)
    e1, e2 = nz.estimate(st, cfg, [0, 1, 2]), nz.estimate(st2, cfg2, [0, 1, 2])
    assert torch.equal(e1.log_zhat, e2.log_zhat)


def test_running_mean_at_zero_skips_instead_of_dividing_by_zero():
    """A running-mean normaliser that has only seen failures gives Ẑ = 0; IGUANA must skip the visit (coefficients 0,
    flagged) rather than divide by zero, and the fold clip must not freeze the prompt at 0 forever."""
    cfg = nz.NormalizerConfig(kind="mean")
    st = nz.update(nz.init(1), cfg, [0], torch.full((1, 5), -math.inf, dtype=torch.float64), torch.zeros(1))
    logq = torch.zeros(1, 3, requires_grad=True)
    st2, loss, info = iguana.visit(st, cfg, [0], logq, torch.zeros(1, 3), torch.tensor([[0.0, -math.inf, 0.0]]))
    assert info.log_zhat.item() == -math.inf and info.skipped.item() and (info.coef == 0).all()
    loss.backward()
    assert logq.grad.abs().sum() == 0
    assert nz.estimate(st2, cfg, [0]).log_zhat.exp().item() == pytest.approx(2 / 8)   # the valid draws entered unclipped


def _interface_visit(name, dtype, seed=0):
    B, M = 6, (1 if name == "bc" else 4)
    logq, logp, logr = _draws(B, M, dtype, seed)
    prompts = torch.tensor([0, 0, 1, 2, 2, 3]) if name == "bc" else torch.tensor([5, 0, 3, 1, 4, 2])
    keys = torch.arange(B * M).reshape(B, M) + 100 * seed
    return estimators.Visit(prompts, logq.detach(), logp, logr, torch.full((B, M), 7.0, dtype=torch.float64), keys,
                            -torch.rand(B, generator=torch.Generator().manual_seed(seed)).to(dtype) * 50)


def _with_grad_on(visit, rows):
    lq, rq = visit.logq.clone().requires_grad_(), visit.ref_logq.clone().requires_grad_()
    return visit._replace(logq=torch.where(rows[:, None], lq, lq.detach()), ref_logq=torch.where(rows, rq, rq.detach())), lq, rq


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(estimators.ESTIMATORS))
def test_interface_one_process_share_in_low_precision(name, dtype):
    """The multi-process contract (every process steps the full batch, only its own rows carry grad) under the LM loop's
    float32 default dtype with float32/bfloat16 log q. The estimators notebook checks it in float64 only, while the LM
    loop's log q is bfloat16 and the kernels cast their float64 coefficients to it: here the sums must still be exact."""
    assert torch.get_default_dtype() == torch.float32
    est = estimators.make(name, iguana.IguanaConfig(kl_beta=0.1))
    warm = _interface_visit(name, dtype, seed=1)
    if name == "bc": state = est.init(4, estimators.Rollouts(warm.prompts, warm.logr[:, 0] == 0))
    else: state = est.step(est.init(6), warm, torch.Generator().manual_seed(0))[0]
    visit = _interface_visit(name, dtype, seed=2)
    if name == "bc":  # every row accepted where the data set has k(x) ≥ 1
        visit = visit._replace(logr=torch.where(state.counts[visit.prompts][:, None] > 0, 0.0, -math.inf).double())
    runs = []
    for rows in (torch.ones(6, dtype=torch.bool), torch.tensor([True, False, True, False, True, False])):
        for share in ((rows,) if rows.all() else (rows, ~rows)):
            v, lq, rq = _with_grad_on(visit, share)
            new, loss, info = est.step(state, v, torch.Generator().manual_seed(3))
            loss.backward()
            assert loss.dtype == dtype and torch.isfinite(loss.float())
            g = lambda t: torch.zeros_like(t) if t.grad is None else t.grad
            runs.append((new, loss.item(), g(lq), g(rq), info))
    (full, l0, gq, gr, info), a, b = runs
    for part in (a, b):
        assert all(torch.equal(x, y) for x, y in zip(part[0], full)) and part[1] == l0
    assert torch.equal(a[2] + b[2], gq) and torch.equal(a[3] + b[3], gr)
    assert gq.abs().sum() > 0 and gq.dtype == dtype
    assert info.log_uw.shape == visit.logq.shape and info.log_uw.dtype == torch.float64 and info.ess.shape == (6,)
    s = est.summary(info)
    assert s and all(type(x) in (int, float) for x in s.values()), s            # plain scalars for a log row


@pytest.mark.parametrize("name", list(estimators.ESTIMATORS))
def test_interface_checkpoint_through_a_file(name, tmp_path):
    est = estimators.make(name, *estimators.RECIPES["many_prompts"][:2])
    v = _interface_visit(name, torch.float32)
    st = est.init(6, estimators.Rollouts(v.prompts, v.logr[:, 0] == 0))
    st, _, _ = est.step(st, v, torch.Generator().manual_seed(0))
    torch.save(est.state_dict(st), tmp_path / "est.pt")
    back = est.load_state_dict(torch.load(tmp_path / "est.pt", weights_only=True))
    assert all(torch.equal(x, y) for x, y in zip(back, st))
