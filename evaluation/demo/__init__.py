"""The demo behind `make run`: checked reference scripts, scripted agents and a finished demo run."""
