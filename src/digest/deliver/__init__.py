"""Channels (files, log, mail, Atom, vault notes) behind one exactly-once record."""
