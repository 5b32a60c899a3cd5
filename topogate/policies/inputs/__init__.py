"""TG0xx: the inputs themselves (inventory, drift, waivers, clusters, coverage of PATHs, suppressions).
"""
