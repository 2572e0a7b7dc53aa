"""Values (pure, the bottom layer): the typed frozen values every layer above passes
around (a record, its time samples, exact metrics, machine and kernel identities, the
kernel metrics' names, remote device names); no TVM, no I/O, no import of the plugin's
other packages."""
