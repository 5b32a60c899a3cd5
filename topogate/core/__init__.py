"""The vocabulary every layer shares: positions, the topogate.dev/* label contract, findings,
exit codes, counted words, text made safe for a CI log, redaction. Imports nothing of topogate.
"""
