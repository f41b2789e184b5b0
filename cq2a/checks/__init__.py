"""III-C1 Constraint checks on a generated question, and near-duplicate removal."""
