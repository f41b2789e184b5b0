"""III-B Answer-targeted question generation, and the loop back with feedback."""
