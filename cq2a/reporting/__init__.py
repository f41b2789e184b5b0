"""Reporting a run directory: the HTML report, exports and JUnit XML."""
