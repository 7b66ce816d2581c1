"""One module per family of formats; importing a module registers its importers.

To add a format: write a module here with a class implementing
`digest.collect.formats.Importer`, call `register(...)` at its end, and add one import
line below.
"""

from digest.collect.importers import bookmarks as bookmarks
from digest.collect.importers import exports_csv as exports_csv
from digest.collect.importers import exports_json as exports_json
from digest.collect.importers import exports_social as exports_social
from digest.collect.importers import feed_files as feed_files
from digest.collect.importers import journal as journal
from digest.collect.importers import lists as lists
from digest.collect.importers import posts as posts
