"""pytest-tvmperf: keep Apache TVM models fast, one pytest test at a time."""

from pytest_tvmperf.workload import PIPELINES, PeerUnavailable, Workload, WorkloadError

__version__ = "0.1.0"
__all__ = ["PIPELINES", "PeerUnavailable", "Workload", "WorkloadError", "__version__"]
