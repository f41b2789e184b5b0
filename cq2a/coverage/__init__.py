"""Coverage beyond the paper: slots steered to uncovered sentences and lagging kinds, and how
varied a suite is."""
