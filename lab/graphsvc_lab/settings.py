"""The lab's own settings, read from ``GRAPHSVC_*`` environment variables like the service's
(:class:`graphsvc.settings.Settings`), which never reads them: only evaluation and the dataset
tests need where the public datasets are. Documented in docs/configuration.md (The lab)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class LabSettings(BaseSettings):
    """graphsvc-lab's settings: the field names, upper-cased, prefixed ``GRAPHSVC_``."""

    model_config = SettingsConfigDict(env_prefix="GRAPHSVC_", extra="ignore", frozen=True)

    eval_data: Path | None = Field(
        default=None,
        description="Folder of the public evaluation datasets (locomo/, beam/, esc/) that "
        "`graphsvc eval` and the dataset tests read; unset: ../shared/data beside the checkout "
        "or the working directory, when it exists.",
    )
