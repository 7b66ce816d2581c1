"""Collectors: feeds over HTTP, and importers for files of saved links and posts."""

# How a collect report names the dates the store would not trust (store.item_saves.plausible_date).
REDATED = "dated after tomorrow or before 1995: dated when first seen instead"
