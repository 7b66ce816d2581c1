"""The commands that read or set up rather than run a stage: search, export, status, doctor,
and the starter files."""
