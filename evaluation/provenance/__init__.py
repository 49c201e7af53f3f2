"""Where an evaluation run's figures came from, below every page and export that says so:
synthetic.py names the runs whose figures no model produced (scripted agents, an in-worker scripted
model, synthetic candidates), for run, trial and V3AST pages and exports alike. A generation run's
own rule is `evaluation.generation.synthetic`."""
