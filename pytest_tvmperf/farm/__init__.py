"""RPC devices: a TVM tracker and its servers run the targets named llvm@rpc:KEY (remote.py), their names (names.py), a tracker started for a run (tracker.py)."""
