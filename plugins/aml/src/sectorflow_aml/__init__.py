"""sectorflow-aml: ``Taskflow("aml")`` — typology detection, risk scoring and regulatory report drafts."""

from .schema import Alert, ReportDraft, Transaction, TransactionAssessment

__version__ = "0.1.0"
__all__ = ["Transaction", "TransactionAssessment", "Alert", "ReportDraft", "__version__"]
