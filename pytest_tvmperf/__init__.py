"""pytest-tvmperf: keep Apache TVM models fast, one pytest test at a time."""

__version__ = "0.1.0"
__all__ = ["PIPELINES", "PeerUnavailable", "Workload", "WorkloadError", "__version__"]


def __getattr__(name: str):
    """The workload names, imported when first asked for: pytest imports this package for
    its plugin on every run, and the workload module brings NumPy."""
    if name in __all__:
        from pytest_tvmperf import workload

        return getattr(workload, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
