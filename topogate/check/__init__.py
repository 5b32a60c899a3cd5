"""`topogate check` as functions: the run, the drift of a rendered tree, `--changed-since`
(git, what a change affects, the narrowed read), and which findings are reported.
"""
