"""Reading hostile input: limits, regular files only, guarded YAML, bounded children (kubectl, git),
standard input, and where in the repository reading is allowed.
"""
