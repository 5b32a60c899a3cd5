"""The generated tree on disk: the one writer (atomic), the comparison with a committed tree,
and the summary `generate` prints.
"""
