"""Issue 41's speed figures in one table, read from the published run folders (no number typed here): each figure's
target, then its measurements in the order they were made, each with the folder and file it comes from, the machine,
the date and the commit. Writes OUT_DIR/table.csv, OUT_DIR/README.md and OUT_DIR/config.json.

    python scripts/speed_table.py OUT_DIR [--published published]"""
import argparse, csv, io, json, re, subprocess, sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def key(*path):
    "A reader of one value of a JSON file, by its keys."
    def get(d):
        for k in path: d = d[k]
        return d
    return get


def console_seconds(text:str)->float:
    "The whole command's seconds in a console transcript: its `real 17m5.863s` line (time) or `exit 0 secs 1159` line."
    if m := re.search(r"^real\s+(\d+)m([\d.]+)s$", text, re.M): return int(m.group(1)) * 60 + float(m.group(2))
    if m := re.search(r"^exit 0 secs (\d+)$", text, re.M): return float(m.group(1))
    raise ValueError("no `real XmYs` or `exit 0 secs N` line")


def halfwidth(arm:str):
    "Half the width of the paired validity interval of ARM − base, from an evaluation's paired.csv."
    def get(text):
        row = next(r for r in csv.DictReader(io.StringIO(text)) if (r["a"], r["b"], r["metric"]) == ("base", arm, "validity"))
        return (float(row["hi"]) - float(row["lo"])) / 2
    return get


def read_floor(d)->float:
    "The decode step's floor in ms: its weight bytes read once at the measured copy rate (bytes read + written a second)."
    return d["step_weight_bytes"] / (d["copy_gb_per_s"] * 1e9) * 1e3


def ratio(new, old):
    "A reader of new time / old time, from two readers of one file."
    return lambda d: new(d) / old(d)


COMPILED_OVER_EAGER = ratio(key("variants", "default", "ms_per_decode_step"), key("variants", "off", "ms_per_decode_step"))
PACKED_OVER_PLAIN = ratio(key("variants", "packed", "ms_per_decode_step"), key("variants", "off", "ms_per_decode_step"))
LEVERS_OVER_SERIAL = ratio(key("engines", "fast+compile+overlap", "total_per_sample_s"), key("engines", "fast+serial", "total_per_sample_s"))


LE, GE = "<=", ">="
BEFORE_FP32 = dict(commit="8664a81")   # the folder's first run: its README's table names the commit, which none of its files records
# (figure, target (comparison, bound) or None, [(folder, file, reader, what the measurement is[, provenance the files lack])])
TRL_RUNS = [("cpu_loop_vs_trl", "bench_cpu_trl.json", "float32, packed scoring"),
            ("cpu_loop_vs_trl_prefix", "bench_cpu_trl.json", "float32, prefix scoring"),
            ("cpu_loop_vs_trl_bf16", "bench_cpu_trl_before.json", "bf16 both sides, float32 log p"),
            ("cpu_loop_vs_trl_bf16", "bench_cpu_trl.json", "bf16 both sides, fixed-shape log p"),
            ("cpu_loop_vs_trl_bf16", "bench_cpu_trl_repeat.json", "the same, repeated"),
            ("cpu_loop_vs_trl_xeon", "bench_cpu_trl_default_1.json", "bf16, Intel Xeon (the rows above: AMD EPYC)"),
            ("cpu_loop_vs_trl_xeon", "bench_cpu_trl_compile_1.json", "the same, decode layer compiled on packed products"),
            ("cpu_loop_vs_trl_xeon", "bench_cpu_trl_default_2.json", "the same, default again"),
            ("cpu_loop_vs_trl_xeon", "bench_cpu_trl_compile_2.json", "the same, compiled again")]
FIGURES = [(f"CPU loop / TRL GRPOTrainer, per {u}", (LE, 0.5), [(f, n, key(f"ours_over_trl_per_{u}_s"), w) for f, n, w in TRL_RUNS])
           for u in ("sample", "token")] + [
    ("Main job from a fresh clone with set-up, s (2-core CPU)", (LE, 1200), [
        ("cpu_main_job_bf16", "fresh_clone_console.txt", console_seconds, "40 steps per arm, 25 x 12 held-out draws"),
        ("cpu_main_job_fixed_shape", "fresh_clone_af6b89f_console.txt", console_seconds, "fixed-shape log p, 25 x 15 draws"),
        ("cpu_main_job_xeon", "fresh_clone_c68d495_console.txt", console_seconds, "the same job on a 2-core Intel Xeon (the rows above: AMD EPYC)"),
        ("cpu_main_job_packed", "fresh_clone_cae1229_console.txt", console_seconds, "prepacked decode weights, the same Intel Xeon"),
        ("cpu_main_job_keyed", "fresh_clone_05ecfd2_console.txt", console_seconds, "the keyed draw 4 rows at a time, the same Intel Xeon"),
        ("cpu_main_job_keyed", "fresh_clone_8270b40_console.txt", console_seconds, "evaluation re-sized to 25 x 20 draws, the same Intel Xeon"),
        ("cpu_main_job_shrink", "fresh_clone_0955a0b_console.txt", console_seconds, "draws drop stopped rows, 25 x 20 draws, the same Intel Xeon"),
        ("cpu_main_job_head", "fresh_clone_4c1ad2c_console.txt", console_seconds, "the LM head a chunk at a time, the same Intel Xeon"),
    ]),
    ("Main job: training steps per arm", (GE, 40), [
        ("cpu_main_job_bf16", "main_job.json", key("before_fp32", "arms", "iguana", "steps"), "before the re-sizing", BEFORE_FP32),
        ("cpu_main_job_fixed_shape", "main_job.json", key("fresh_clone_af6b89f", "arms", "iguana", "steps"), "iguana (msc the same)"),
        ("cpu_main_job_xeon", "main_job.json", key("fresh_clone_c68d495", "arms", "iguana", "steps"), "iguana (msc the same), Intel Xeon"),
        ("cpu_main_job_packed", "main_job.json", key("fresh_clone_cae1229", "arms", "iguana", "steps"), "iguana (msc the same), Intel Xeon, prepacked"),
        ("cpu_main_job_keyed", "main_job.json", key("fresh_clone_8270b40", "arms", "iguana", "steps"), "iguana (msc the same), Intel Xeon, re-sized evaluation"),
        ("cpu_main_job_shrink", "main_job.json", key("fresh_clone_0955a0b", "arms", "iguana", "steps"), "iguana (msc the same), Intel Xeon, draws drop stopped rows"),
        ("cpu_main_job_head", "main_job.json", key("fresh_clone_4c1ad2c", "arms", "iguana", "steps"), "iguana (msc the same), Intel Xeon, the LM head a chunk at a time"),
    ]),
    ("Main job: paired validity half-width, IGUANA - base", (LE, 0.07), [
        ("cpu_main_job_bf16", "before_fp32_eval_paired.csv", halfwidth("iguana"), "before the re-sizing: 12 x 6 draws", BEFORE_FP32),
        ("cpu_main_job_fixed_shape", "fresh_clone_af6b89f_eval_paired.csv", halfwidth("iguana"), "25 prompts x 15 draws"),
        ("cpu_main_job_xeon", "fresh_clone_c68d495_eval_paired.csv", halfwidth("iguana"), "25 prompts x 15 draws, Intel Xeon"),
        ("cpu_main_job_packed", "fresh_clone_cae1229_eval_paired.csv", halfwidth("iguana"), "the same draws, prepacked"),
        ("cpu_main_job_keyed", "fresh_clone_05ecfd2_eval_paired.csv", halfwidth("iguana"), "the same draws, keyed draw 4 rows at a time"),
        ("cpu_main_job_keyed", "fresh_clone_8270b40_eval_paired.csv", halfwidth("iguana"), "25 prompts x 20 draws, Intel Xeon"),
        ("cpu_main_job_shrink", "fresh_clone_0955a0b_eval_paired.csv", halfwidth("iguana"), "the same draws, dropping stopped rows"),
        ("cpu_main_job_head", "fresh_clone_4c1ad2c_eval_paired.csv", halfwidth("iguana"), "the same results, the LM head a chunk at a time"),
    ]),
    ("Main job: paired validity half-width, MSC - base", (LE, 0.07), [
        ("cpu_main_job_bf16", "before_fp32_eval_paired.csv", halfwidth("msc"), "before the re-sizing: 12 x 6 draws", BEFORE_FP32),
        ("cpu_main_job_fixed_shape", "fresh_clone_af6b89f_eval_paired.csv", halfwidth("msc"), "25 prompts x 15 draws"),
        ("cpu_main_job_xeon", "fresh_clone_c68d495_eval_paired.csv", halfwidth("msc"), "25 prompts x 15 draws, Intel Xeon"),
        ("cpu_main_job_packed", "fresh_clone_cae1229_eval_paired.csv", halfwidth("msc"), "the same draws, prepacked"),
        ("cpu_main_job_keyed", "fresh_clone_05ecfd2_eval_paired.csv", halfwidth("msc"), "the same draws, keyed draw 4 rows at a time"),
        ("cpu_main_job_keyed", "fresh_clone_8270b40_eval_paired.csv", halfwidth("msc"), "25 prompts x 20 draws, Intel Xeon"),
        ("cpu_main_job_shrink", "fresh_clone_0955a0b_eval_paired.csv", halfwidth("msc"), "the same draws, dropping stopped rows"),
        ("cpu_main_job_head", "fresh_clone_4c1ad2c_eval_paired.csv", halfwidth("msc"), "the same results, the LM head a chunk at a time"),
    ]),
    ("H200 embedded loop, IGUANA 8 prompts x M = 10, s a sample (all phases)", (LE, 0.015), [
        ("h200_fast_loop", "bench_loop.json", key("engines", "fast", "total_per_sample_s"), "fast engine, mean over 24 steps"),
        ("h200_loop_levers", "steps_summary.json", key("fast+serial", "mean_over_timed_steps", "total_s_per_sample"), "serial checker, mean"),
        ("h200_loop_levers", "steps_summary.json", key("fast+serial", "median_over_timed_steps", "total_s_per_sample"), "serial checker, median step"),
        ("h200_loop_levers", "steps_summary.json", key("fast+compile+overlap", "mean_over_timed_steps", "total_s_per_sample"), "compiled + overlapped checker, mean"),
        ("h200_loop_levers", "steps_summary.json", key("fast+compile+overlap", "median_over_timed_steps", "total_s_per_sample"), "compiled + overlapped checker, median step"),
        ("h200_levers_orders", "bench_loop_overlap_first.json", key("engines", "fast+compile+overlap", "total_per_sample_s"), "compiled + overlapped, mean, first in its process"),
        ("h200_levers_orders", "bench_loop_serial_first.json", key("engines", "fast+compile+overlap", "total_per_sample_s"), "compiled + overlapped, mean, second in its process"),
    ]),
    ("H200 Qwen2-1.5B shape, compiled loop, s a sample", (LE, 0.08), [
        ("h200_loop_1p5b", "bench.json", key("sizes", "1.5b", "compiled", "per_sample_total_s"), "compiled step (throughput.online_step)"),
        ("h200_loop_1p5b", "bench.json", key("sizes", "1.5b", "loop_compiled", "per_sample_total_s"), "the training loop, compiled"),
        ("h200_loop_1p5b_rows", "bench.json", key("sizes", "1.5b", "loop_compiled", "per_sample_total_s"), "the same loop, 1 prompt a step (10 rows)"),
        ("h200_loop_1p5b_rows", "bench.json", key("sizes", "1.5b", "loop_compiled_p8", "per_sample_total_s"), "the same loop, 8 prompts a step (80 rows)"),
    ]),
    ("H200 Qwen2-1.5B shape, update MFU", (GE, 0.45), [
        ("h200_loop_1p5b", "bench.json", key("sizes", "1.5b", "compiled", "update_mfu"), "of the measured bf16 peak"),
        ("h200_loop_1p5b_rows", "bench.json", key("sizes", "1.5b", "loop_compiled", "score_update_mfu"), "the loop's scoring + update, 1 prompt a step"),
    ]),
    ("Qwen2-1.5B shape decode step, ms (what is left: profile)", None, [
        ("h100_decode_profile_1p5b", "profile_decode.json", key("variants", "default", "ms_per_decode_step"), "compiled, M = 10, CUDA graph"),
        ("h100_decode_profile_1p5b", "profile_decode.json", read_floor, "floor: weights read once at the copy rate"),
        ("h100_decode_autotune_1p5b", "profile_decode.json", key("variants", "default", "ms_per_decode_step"), "compiled (default), the autotuned run's own"),
        ("h100_decode_autotune_1p5b", "profile_decode.json", key("variants", "max-autotune-no-cudagraphs", "ms_per_decode_step"), "compiled with max-autotune-no-cudagraphs"),
    ]),
    ("Qwen2-1.5B shape, the loop with scoring in 20-row chunks, s a sample (H100)", None, [
        ("h100_loop_1p5b_score_rows", "call1_bench.json", key("sizes", "1.5b", "loop_compiled_p8_r20", "per_sample_total_s"), "8 prompts a step (80 rows), call 1, a cold machine"),
        ("h100_loop_1p5b_score_rows", "call2_bench.json", key("sizes", "1.5b", "loop_compiled_p8_r20", "per_sample_total_s"), "8 prompts a step (80 rows), call 2"),
        ("h100_loop_1p5b_score_rows", "call2_bench.json", key("sizes", "1.5b", "loop_compiled_r20", "per_sample_total_s"), "1 prompt a step (10 rows), call 2"),
    ]),
    ("Qwen2-1.5B shape, the loop's scoring + update MFU with 20-row chunks (H100)", None, [
        ("h100_loop_1p5b_score_rows", "call1_bench.json", key("sizes", "1.5b", "loop_compiled_p8_r20", "score_update_mfu"), "8 prompts a step, call 1, a cold machine"),
        ("h100_loop_1p5b_score_rows", "call2_bench.json", key("sizes", "1.5b", "loop_compiled_p8_r20", "score_update_mfu"), "8 prompts a step, call 2"),
        ("h100_loop_1p5b_score_rows", "call2_bench.json", key("sizes", "1.5b", "loop_compiled_r20", "score_update_mfu"), "1 prompt a step, call 2"),
    ]),
    ("Levers, new time / old time", None, [
        ("cpu_prefill_groups", "prefill_groups.json", key("ratio_shared_over_per_run"), "one prefill per prompt with MSC's reference"),
        ("h100_prefill_groups", "prefill_groups.json", key("ratio_shared_over_per_run"), "the same on the GPU"),
        ("h200_prior_rescoring", "results_grouped.json", ratio(key("rows160_grouped", "s"), key("rows64_interleaved", "s")), "re-scoring base's draws, grouped forced rows"),
        ("cpu_decode_compile", "profile_decode_off_first.json", COMPILED_OVER_EAGER, "CPU decode layer compiled (off first)"),
        ("cpu_decode_compile", "profile_decode_default_first.json", COMPILED_OVER_EAGER, "the same, default first"),
        ("cpu_decode_packed", "profile_decode_m4_off_first.json", PACKED_OVER_PLAIN, "CPU decode step on prepacked weights, 4 rows (plain first)"),
        ("cpu_decode_packed", "profile_decode_m4_packed_first.json", PACKED_OVER_PLAIN, "the same, packed first"),
        ("cpu_decode_packed", "profile_decode_m16_off_first.json", PACKED_OVER_PLAIN, "the same at 16 rows (plain first)"),
        ("cpu_keyed_choice", "keyed_choice.json", key("draws", "125", "ratio"), "CPU keyed draw 4 rows at a time: a whole draw at 125 rows"),
        ("cpu_keyed_choice", "keyed_choice.json", key("draws", "4", "ratio"), "the same at 4 rows"),
        ("cpu_shrink", "shrink.json", key("ratio"), "CPU draws dropping stopped rows: the evaluation's 25 x 20 draws in 125-row calls"),
        ("h100_levers_orders", "bench_loop_overlap_first.json", LEVERS_OVER_SERIAL, "GPU loop, both levers / neither (levers first)"),
        ("h100_levers_orders", "bench_loop_serial_first.json", LEVERS_OVER_SERIAL, "the same, levers second"),
        ("h200_levers_orders", "bench_loop_overlap_first.json", LEVERS_OVER_SERIAL, "GPU loop, both levers / neither (levers first)"),
        ("h200_levers_orders", "bench_loop_serial_first.json", LEVERS_OVER_SERIAL, "the same, levers second"),
    ]),
]


def machine(cfg:dict)->str:
    "A short name of the machine a folder ran on."
    m = str(cfg.get("machine", ""))
    return "H200" if "H200" in m else "H100" if "H100" in m else "2-core CPU" if "CPU" in m else m


def rows(published:Path)->list[dict]:
    out = []
    for figure, target, measured in FIGURES:
        for folder, name, read, what, *given in measured:
            f, cfg = published / folder / name, json.loads((published / folder / "config.json").read_text())
            raw = f.read_text()
            data = json.loads(raw) if name.endswith(".json") else raw
            v = float(read(data))
            own = (given or [data if isinstance(data, dict) and machine(cfg) == "2-core CPU" else {}])[0]   # a CPU folder may hold runs of several commits;
            # a device run's file names the stale git metadata of the device's copy, so its folder's config.json says the commit
            meets = "" if target is None else "yes" if (v <= target[1] if target[0] == LE else v >= target[1]) else "no"
            out.append(dict(figure=figure, target="" if target is None else f"{target[0]} {target[1]:g}", value=f"{v:.4g}",
                            meets=meets, what=what, source=f"{folder}/{name}", machine=machine(cfg),
                            date=str(own.get("date") or cfg.get("date", ""))[:10], commit=str(own.get("commit") or cfg.get("commit", "")).split()[0]))
    return out


def readme(table:list[dict])->str:
    head = ["figure", "target", "value", "meets", "measurement", "source", "machine", "date", "commit"]
    lines = ["# Issue 41's speed figures, each beside the ones before it", "",
             "Written by `scripts/speed_table.py` from the published folders' own files (`table.csv` holds the same rows);",
             "`tests/test_speed_table.py` checks that this table is what the script reads from them now. Each figure's",
             "rows are in the order the measurements were made. Absolute GPU times count on the H200 only (issue 41); the",
             "H100 rows are there for the profile and the ratios.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in table:
        lines.append("| " + " | ".join([r["figure"], r["target"] or "—", r["value"], r["meets"] or "—", r["what"],
                                        f"`{r['source']}`", r["machine"], r["date"], r["commit"]]) + " |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out"); ap.add_argument("--published", default=str(ROOT / "published"))
    a = ap.parse_args()
    table, out = rows(Path(a.published)), Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "table.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(table[0])); w.writeheader(); w.writerows(table)
    (out / "README.md").write_text(readme(table))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    cfg = dict(kind="speed_table", description="Issue 41's speed figures and their targets in one table, read from the published folders.",
               machine="CPU (the project's 2-core machine), from the published folders' files",
               date=datetime.now(timezone.utc).isoformat(timespec="seconds"), commit=commit,
               command=f"python scripts/speed_table.py {a.out}",
               user_command=".venv/bin/python scripts/speed_table.py results/speed_table")
    (out / "config.json").write_text(json.dumps(cfg, indent=1) + "\n")
    print(readme(table))


if __name__ == "__main__":
    sys.exit(main())
