"""The proofs over every pod: network-zone boundaries, declared doors, who may reach a job, and
the flows a job needs.
"""
