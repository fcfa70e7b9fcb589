"""How the prior re-scoring of an evaluation (rollouts.prior_table: base's held-out draws with log q under a run's adapter,
the engine's forced rows) depends on the rows it takes at once, on the GPU: time and bitwise equality against 64 rows, the
number the confirmatory evaluation uses. Reads the first 1,280 held-out rows of published/confirm_runs/base_confirm (copied to
/tmp/runs) and the embedded model converted by scripts/campaign_job.sh (/tmp/cache); the adapter is the seeded LoRA with every
weight moved by 0.02 x N(0, 1) (so q differs from p). Prints one JSON line. Run on a GPU box with the package importable:

    python scripts/bench_prior_rescoring.py            # rows at once (results.json, commit dc6c4fc)
    python scripts/bench_prior_rescoring.py grouped    # forced rows of one prompt sharing a prefill (results_grouped.json)

`grouped` compares the draws in prompt-major order (a prompt's rows share one prefill since the commit after 1fb0c4a) with the
same draws interleaved across prompts (every row its own prefill, as every order was before that commit).
"""
import argparse, json, math, time


def main(variant:str="rows"):
    import numpy as np, pandas as pd, torch
    from proposal_nb.lm.models import load_model, add_lora
    from proposal_nb.lm.rollouts import adapter_state, load_adapter_state
    from proposal_nb.lm.engines import make_engine
    lm, tok = load_model('/tmp/cache/smollm2-135m-instruct-fp32'); torch.manual_seed(2); peft = add_lora(lm, r=8, alpha=16)
    g = torch.Generator().manual_seed(0)
    st = {k: (v + 0.02 * torch.randn(v.shape, generator=g).to(v)) for k, v in adapter_state(peft).items()}
    load_adapter_state(peft, st)
    b = pd.read_parquet('/tmp/runs/base_confirm/heldout_draws.parquet'); b = b[b.set != 'train'].iloc[:1280]
    P, C = list(map(list, b.prompt_ids)), list(map(list, b.token_ids))
    res = {}
    def run(rows, order=None, trim=False):
        idx = list(range(len(P))) if order is None else order
        out = np.zeros(len(P)); t0 = time.time(); torch.cuda.synchronize()
        if trim:
            for s in range(0, len(idx), rows):
                j = idx[s:s + rows]; PP, CC = [P[i] for i in j], [C[i] for i in j]
                eng = make_engine('auto', peft, tok, rows=rows, max_prompt_len=max(map(len, P)), max_new_tokens=max(map(len, CC)))
                for i, x in zip(j, eng.logprobs(PP, CC)): out[i] = math.fsum(x)
        else:
            eng = make_engine('auto', peft, tok, rows=rows, max_prompt_len=max(map(len, P)), max_new_tokens=max(map(len, C)))
            for i, x in zip(idx, eng.logprobs([P[i] for i in idx], [C[i] for i in idx])): out[i] = math.fsum(x)
        torch.cuda.synchronize(); return out, time.time() - t0
    ref, t = run(64); res['rows64'] = dict(s=t)
    srt = sorted(range(len(P)), key=lambda i: len(C[i]))
    rank = b.groupby('prompt_id', sort=False).cumcount().to_numpy()
    mixed = sorted(range(len(P)), key=lambda i: (rank[i], i))               # no two neighbours share a prompt
    grouped = [('rows64_interleaved', dict(rows=64, order=mixed)), ('rows64_grouped', dict(rows=64)), ('rows160_grouped', dict(rows=160)),
               ('rows320_grouped', dict(rows=320)), ('rows160_interleaved', dict(rows=160, order=mixed))]
    for name, kw in grouped if variant == 'grouped' else [('rows64_sorted', dict(rows=64, order=srt)), ('rows64_sorted_trim', dict(rows=64, order=srt, trim=True)),
                     ('rows320', dict(rows=320)), ('rows640', dict(rows=640)), ('rows1280', dict(rows=1280)), ('rows64_again', dict(rows=64))]:
        o, t = run(**kw); res[name] = dict(s=round(t, 2), max_abs=float(np.nanmax(np.abs(o - ref))), identical=bool(np.array_equal(o, ref)))
        print(name, res[name], flush=True)
    print(json.dumps(res))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="Forced-row re-scoring on the GPU: seconds and bitwise equality against 64 rows.")
    ap.add_argument("variant", nargs="?", default="rows", choices=["rows", "grouped"], help="rows at once (default) or grouped prefills")
    main(ap.parse_args().variant)
