"""RPC devices: a TVM tracker and its servers run the targets named llvm@rpc:KEY (remote.py), a tracker started for a run (tracker.py); their names are values/remote_names.py."""
