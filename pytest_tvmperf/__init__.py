"""pytest-tvmperf: keep Apache TVM models fast, one pytest test at a time."""

from .workload import Workload, WorkloadError

__version__ = "0.1.0"
__all__ = ["Workload", "WorkloadError", "__version__"]
