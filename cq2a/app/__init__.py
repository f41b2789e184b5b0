"""The application: a durable run, saved suites, estimates, doctor, preflight, progress, input
files and the run directory."""
