"""Cost Explorer egress audit: the bill-side symptom of a training job split across zones.

`run_audit` queries AWS Cost Explorer for inter-AZ data transfer per cluster cost tag,
judges each cluster-day against its budget, and names the jobs the analysis says may split.
Exit codes: see `topogate.audit.errors.ExitCode`.
"""

from topogate.audit.egress import (
    AuditResult,
    ClusterAudit,
    DayCost,
    default_client_factory,
    default_window,
    resolve_window,
    run_audit,
)
from topogate.audit.errors import AuditError
from topogate.core.exitcodes import ExitCode

__all__ = [
    "AuditError",
    "AuditResult",
    "ClusterAudit",
    "DayCost",
    "ExitCode",
    "default_client_factory",
    "default_window",
    "resolve_window",
    "run_audit",
]
