"""The audio edition: a script for the ear (pure), offline voices, an MP3 with chapters."""
