"""Run a run notebook's code cells in order in one Python namespace, with parameters set after its `parameters` cell,
for machines without a Jupyter kernel (the GPU box has torch but no ipykernel/papermill):

    python scripts/exec_notebook.py nbs/runs/40_bench_gpu_step.ipynb sizes=1.5b profile=False out_dir=$OUT

A value is read as a Python literal when the parameter's default is not a string. The executor lives in the package
(proposal_nb.lm.launch.exec_notebook; `python -m proposal_nb.lm.launch` does the same, and `launch_notebook` runs it
under torchrun on several processes). Use papermill where it is installed: it also saves the executed notebook."""
import sys

from proposal_nb.lm.launch import main

if __name__ == "__main__":
    main(sys.argv[1:])
