"""Reference solutions of the exercises (the stubs in exercises/ are generated from these)."""
