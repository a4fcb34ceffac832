"""The report notebooks, shipped in the package as ``grpo_wb.notebooks`` (pyproject.toml's package-dir): what
``grpo-wb report NAME`` finds. This file only makes the folder a package (an editable install finds it then)."""
