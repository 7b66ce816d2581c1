"""Notes and a period become markdown: the digest, its overview, the backlog. Pure."""
