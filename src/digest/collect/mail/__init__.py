"""Newsletters from the mailbox: `imap`, `maildir` and `mbox` sources (boxes.py), each
message read once (letters.py), a roundup unbundled into its stories (roundup.py)."""
