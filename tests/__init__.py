"""The test suite, laid out like the package: one folder per part."""
