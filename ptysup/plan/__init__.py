"""Plans: steps with their own checks, loaded once (`ptysup check` and a run share it)."""
