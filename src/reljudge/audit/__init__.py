"""The agreement audit: item statistics, system rankings, many judges at once."""

from reljudge.audit.audit import (
                                  AuditResult,
                                  ItemAgreement,
                                  JudgeAudit,
                                  SystemAgreement,
                                  audit,
                                  read_judge,
)

__all__ = ["AuditResult", "ItemAgreement", "JudgeAudit", "SystemAgreement", "audit",
           "read_judge"]
