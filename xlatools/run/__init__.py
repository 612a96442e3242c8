"""Running a program under test with XLA dump/log presets, and reading what it leaves.

plan.py (pure RunPlan) -> execute.py (bundle, manifest) -> process.py (the child
process); target.py probes the target interpreter; flags.py checks XLA_FLAGS;
presets/ holds the preset catalog and its YAML; dumps.py reads XLA dumps;
lower.py is `xlatools lower`. smoke/ and probes/ are scripts run in the TARGET
interpreter, never imported here.
"""
