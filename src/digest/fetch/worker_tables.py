"""Imported by the fork server the extraction workers are forked from, for its side effect:
the tokenizer and embedding table that `page_features` reads (~50 MB), loaded once there,
before the workers fork, so that they share its pages instead of each loading its own."""

from digest.features import load_tables

load_tables()
