"""TG12x: what the analysis could not look at, said out loud.
"""
