"""One module per model API wire the fake model speaks."""
