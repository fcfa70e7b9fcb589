"""Time the full held-out evaluation: 301 prompts x 10 checkpoints x 5 runs x 10 draws (150,500 rows),
2,000 prompt-bootstrap resamples and all 45 paired checkpoint differences (target <= 2 s on 2 cores).
Usage: .venv/bin/python scripts/bench_evaluation.py [repeats]"""
import sys
from proposal_nb.analysis.synthetic import bench_evaluation

if __name__ == "__main__":
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    times = []
    for i in range(repeats):
        secs, ev = bench_evaluation(seed=i)
        times.append(secs)
    rows = len(ev.arrays.valid.ravel())
    print(f"evaluate: {rows} draws, {len(ev.summary)} summary rows, {len(ev.paired)} paired rows; "
          f"seconds per run: {', '.join(f'{t:.3f}' for t in times)} (best {min(times):.3f}, target 2.0)")
