"""Command groups that live beside cli.py: `audit` and the live-cluster commands."""
