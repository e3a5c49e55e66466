"""One file per schema revision, oldest first: 0001_baseline, 0002_..."""
