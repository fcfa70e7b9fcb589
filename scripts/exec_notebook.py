"""Run a run notebook's code cells in order in one Python namespace, with parameters set after its `parameters` cell,
for machines without a Jupyter kernel (the GPU box has torch but no ipykernel/papermill):

    python scripts/exec_notebook.py nbs/runs/40_bench_gpu_step.ipynb sizes=1.5b profile=False out_dir=$OUT

Each value is cast to the type of the parameter's default. Use papermill where it is installed: it also saves the
executed notebook."""
import json, sys


def main(path, *assignments):
    nb, g = json.load(open(path)), {"__name__": "__main__"}
    over = dict(a.split("=", 1) for a in assignments)
    for c in nb["cells"]:
        if c["cell_type"] != "code": continue
        exec(compile("".join(c["source"]), f"{path} cell {c.get('id')}", "exec"), g)
        if "parameters" in c["metadata"].get("tags", []):
            unknown = set(over) - set(g)
            if unknown: raise SystemExit(f"{path} has no parameter(s) {sorted(unknown)}")
            for k, v in over.items(): g[k] = (v == "True") if isinstance(g[k], bool) else type(g[k])(v)


if __name__ == "__main__":
    main(*sys.argv[1:])
