"""Fetching pages: the one guarded httpx client, the address guard, the fetch stage."""
