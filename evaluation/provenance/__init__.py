"""Where a run's figures came from, below every page and export that says so: synthetic.py names
the runs whose figures no model produced (scripted agents, an in-worker scripted model, scripted
proposers or judges, synthetic candidates), for run, trial, V3AST and generation pages alike."""
