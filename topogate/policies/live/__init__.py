"""TG2xx: the inventory against the live cluster (check --live, drift).
"""
