"""What a run stands on: the run lock, logging, progress display, and running a stage's items at once."""
