"""One module per family of formats; importing a module registers its importers."""
