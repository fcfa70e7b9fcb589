"""What the CPU path of `keyed_choice` saves: the keyed Gumbel-max draw alone at several row counts, and whole
`FastSampler.draw` calls at the evaluation's and the training's shapes on the embedded model, each timed against the
plain expression it replaced on a CPU, `(logprobs.float() + keyed_gumbel(h, t, V)).argmax(-1)` (still the GPU path),
alternating A and B, with a check that both choose the same tokens (the draws: tokens, log-probs and lengths).
Writes OUT_DIR/keyed_choice.json and config.json.

    python scripts/bench_keyed_choice.py OUT_DIR [--rows 4,16,84,125] [--draw-rows 125,4] [--max-new 128] [--repeats 3]"""
import argparse, json, platform, statistics, sys, time
from pathlib import Path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out"); ap.add_argument("--rows", default="4,16,84,125"); ap.add_argument("--draw-rows", default="125,4")
    ap.add_argument("--max-new", type=int, default=128); ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    rows, draw_rows = [int(x) for x in a.rows.split(",") if x], [int(x) for x in a.draw_rows.split(",") if x]
    if a.repeats < 1 or a.max_new < 2 or min(rows + draw_rows, default=0) < 1: raise SystemExit(f"bad arguments: {vars(a)}")
    import torch
    from proposal_nb.results import write_bench_config
    from proposal_nb.lm import fast_sampler as fs
    from proposal_nb.lm.generation import key_hash, keyed_choice, keyed_gumbel, row_keys
    from proposal_nb.lm.models import add_lora, embedded_model_path, load_model, run_dtype
    from proposal_nb.lm.rollouts import load_task_source
    from proposal_nb.lm.training import prompt_texts
    torch.set_num_threads(2)
    plain = lambda lp, h, t: (lp.float() + keyed_gumbel(h.to(lp.device), t, lp.shape[-1])).argmax(-1)
    ways = {"cpu_path": keyed_choice, "plain": plain}
    lm, tok = load_model(embedded_model_path(), dtype=run_dtype("auto", "cpu"))
    V = lm.get_output_embeddings().weight.shape[0]

    def alternate(run, n):                                        # A/B, B/A, ...; a first pair warms up untimed
        times, outs = {k: [] for k in ways}, {}
        for k in range(n + 1):
            for name in (("cpu_path", "plain") if k % 2 == 0 else ("plain", "cpu_path")):
                t = time.perf_counter(); outs[name] = run(name); dt = time.perf_counter() - t
                if k: times[name].append(dt)
        return times, outs

    g = torch.Generator().manual_seed(0)
    alone = {}
    for R in rows:                                                # the draw alone: 50 positions per timing
        lp = (3 * torch.randn(R, V, generator=g)).log_softmax(-1)
        h = key_hash(torch.randint(0, 2**62, (R,), generator=g))
        times, outs = alternate(lambda name: [ways[name](lp, h, t) for t in range(50)], a.repeats)
        med = {k: statistics.median(v) / 50 * 1e3 for k, v in times.items()}
        alone[R] = dict(ms=med, ratio=med["cpu_path"] / med["plain"], same=all(torch.equal(x, y) for x, y in zip(outs["cpu_path"], outs["plain"])))
        print(f"keyed draw, {R} rows: {med['cpu_path']:.2f} ms against {med['plain']:.2f} ms ({alone[R]['ratio']:.3f}), same tokens: {alone[R]['same']}", flush=True)

    torch.manual_seed(0)
    peft = add_lora(lm, r=8, alpha=16).eval()
    tasks = load_task_source("embedded", "native", ["easy", "medium"], None)
    ids = [tok(t, add_special_tokens=False).input_ids for t in prompt_texts(tok, tasks)]
    stop = fs.stop_rule(tok, {tok.eos_token_id}, vocab=lm.config.vocab_size)
    draws = {}
    for R in draw_rows:                                           # whole draws: R rows as prompts × 5 draws (or R prompts × 1)
        n = 5 if R % 5 == 0 else 1
        P = ids[:R // n]
        s = fs.FastSampler(peft, R, max(map(len, P)) + a.max_new, stop=stop)
        keys = torch.tensor([row_keys(7, "eval", i, m) for i in range(len(P)) for m in range(n)])
        def run(name):
            fs.keyed_choice = ways[name]
            try: return s.draw(P, n, a.max_new, keys)
            finally: fs.keyed_choice = keyed_choice
        times, outs = alternate(run, a.repeats)
        steps = int(outs["cpu_path"].tokens.shape[1])
        med = {k: statistics.median(v) for k, v in times.items()}
        same = all(torch.equal(x, y) if x.dtype != torch.float32 else torch.equal(x.nan_to_num(7.0), y.nan_to_num(7.0))
                   for x, y in zip(outs["cpu_path"], outs["plain"]))
        draws[R] = dict(prompts=len(P), draws_per_prompt=n, decode_steps=steps, seconds=times, median_s=med,
                        ms_per_step={k: v / steps * 1e3 for k, v in med.items()}, ratio=med["cpu_path"] / med["plain"], same_draws=same)
        print(f"draw of {R} rows ({steps} steps): {med['cpu_path']:.2f} s against {med['plain']:.2f} s ({draws[R]['ratio']:.3f}), same draws: {same}", flush=True)
    res = dict(vocab=V, repeats=a.repeats, max_new=a.max_new, dtype=str(next(lm.parameters()).dtype), alone=alone, draws=draws)
    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    (out / "keyed_choice.json").write_text(json.dumps(res, indent=1))
    write_bench_config(sys.argv, f"CPU ({platform.processor() or platform.machine()}), 2 threads", torch=torch.__version__)
    if not all(x["same"] for x in alone.values()) or not all(x["same_draws"] for x in draws.values()):
        raise SystemExit("the CPU path chose other tokens than the plain expression")


if __name__ == "__main__":
    main()
