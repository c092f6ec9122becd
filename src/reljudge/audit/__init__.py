"""The agreement audit: item statistics, system rankings, many judges at once.

``items`` (item agreement), ``systems`` (system agreement), ``result`` (the result, its table
and JSON), ``judges`` (``audit``, ``audit_measures``), ``fitted_rows`` (calibrated
and panel rows validated on held-out queries). Label files are read by ``reljudge.io``.
"""

from reljudge.audit.judges import audit, audit_measures
from reljudge.audit.result import (
                                   AuditResult,
                                   ItemAgreement,
                                   JudgeAudit,
                                   SystemAgreement,
                                   audit_json,
)

__all__ = ["AuditResult", "ItemAgreement", "JudgeAudit", "SystemAgreement", "audit",
           "audit_json", "audit_measures"]
