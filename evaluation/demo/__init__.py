"""The demo behind `make run`: checked reference scripts, scripted agents, its evaluation runs and its
generation run."""
