"""Settings: `base` (with its topic modules) for every process, `test` for the test suite."""
