"""Collectors: feeds over HTTP, and importers for files of saved links and posts."""
