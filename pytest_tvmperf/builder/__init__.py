"""Build and check: compile a workload per executor and target, run it once in a child, compare with NumPy."""
